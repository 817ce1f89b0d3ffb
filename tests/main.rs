//! The integration suite: one test binary for the whole workspace. CPU tests
//! run everywhere; tests marked `#[ignore = "needs a CUDA GPU"]` run on the
//! GPU machine (`--include-ignored`, see scripts/gpu-check).

mod architecture;
mod c_abi;
mod gpu;
mod header;
mod hello;
mod install;
mod nccl;
mod python;
mod readme;
mod support;
mod version;
