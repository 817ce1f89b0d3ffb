//! Typed operations: size checks and launch configurations.
