//! Documentation only: how the registry works and why.

pub mod design {
    #![doc = include_str!("docs/design.md")]
}
