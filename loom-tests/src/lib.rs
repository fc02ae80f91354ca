//! Loom models of the sessionreg protocol live in `tests/`; this library holds
//! what they share: the model builder, a drop-tracking value (which can be
//! made to panic in its `Drop` or its close callback), a log of drops and
//! closes, and an allocation counter that sees the registry's storage.
//!
//! Everything here exists only under `--cfg sessionreg_loom`; a plain build
//! compiles this crate (and every test file) empty. Run the suite with
//! `.ci/loom`.
#[cfg(sessionreg_loom)]
mod imp;
#[cfg(sessionreg_loom)]
pub use imp::*;
