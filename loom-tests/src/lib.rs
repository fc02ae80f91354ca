//! Loom models of the sessionreg protocol live in `tests/`.
