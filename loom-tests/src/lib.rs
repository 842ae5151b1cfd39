//! Loom models of the rotation protocol live in `tests/`.
