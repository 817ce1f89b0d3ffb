//! graphcore: a CUDA Graph runtime.
//!
//! Layers, each calling only the one below: `pool` and `graph` hold pure
//! logic (no CUDA), `driver` is the only module that calls CUDA.

pub mod pool;
