//! Typed operations: size checks and launch configurations.
//!
//! Every constructor checks its arguments and returns the [`Call`](crate::Call) to launch,
//! or a [`SizeError`](crate::SizeError) saying what was wrong (then nothing may be launched):
//!
//! - pointers are device addresses (`u64`): null is refused (except where an
//!   argument is documented as optional, `0` = absent), and so is an address
//!   that is not a multiple of 4 (the size of an `f32`);
//! - element counts and matrix sizes must be non-zero, and the byte extent of
//!   every buffer must fit in the 64-bit address space;
//! - matrices: every `rows * cols` (or `rows * ld`) must be below 2^32, the
//!   kernels' 32-bit index range;
//! - an output may not partly overlap an input. Elementwise operations allow
//!   exact in-place use (output == input, same length); the linear layers and
//!   GEMM allow no overlap at all.
//!
//! `sms` is the device's multiprocessor count (`CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`);
//! launch shapes are chosen from it. The same sizes and `sms` always give the
//! same [`Call`](crate::Call), so results are reproducible bit for bit.
//!
//! One module per family of operations (`elementwise`, `reduce`, `linear`,
//! `cond`, `mlp`, `linear_step`, `mlp2_step`), each re-exported here; what
//! they share is in `check` (the argument checks) and `grid` (launch grids).

mod check;
mod cond;
mod dispatch;
mod elementwise;
mod grid;
mod linear;
mod linear_step;
mod mlp;
mod mlp2_step;
mod reduce;
#[cfg(test)]
mod testing;

/// The chain kernel's opcodes and its operation limit (see [`chain`]).
pub use crate::fusion::{MAX_CHAIN_OPS, OP_ADD, OP_FILL, OP_MAX, OP_MIN, OP_MUL, OP_RELU};
pub use cond::{
    cond_count, cond_set_bucket, cond_set_f32, cond_set_u32, CMP_GE, CMP_GT, CMP_LE, CMP_LT,
};
pub use dispatch::{
    choose_backend, choose_in, default_backend, dispatch_table, parse_dispatch, Backend,
    DispatchEntry, DEFAULT_CUBLASLT_MIN_ROWS,
};
pub use elementwise::{
    add, add_scalar, axpy, bias_add, chain, copy, fill, map, mul, relu, relu_backward, scale, sgd,
    zip,
};
pub use grid::BLOCK;
pub use linear::{
    gemm, linear, linear_backward_input, linear_backward_weight, linear_rows, linear_tf32,
    linear_weight_sgd, small_batch, Gemm, SMALL_BACKWARD_MAX_M, SMALL_BATCH_MAX_M,
};
/// Where the training step's GEMM path keeps its gradient (for the vendor GEMM's dispatch).
pub use linear_step::linear_mse_step_grad;
pub use linear_step::{linear_mse_step, linear_mse_step_workspace_bytes, LinearMseStep};
/// Where the MLP's per-layer form reads and writes (for the vendor GEMM's dispatch).
pub use mlp::mlp_layer_io;
/// The MLP's launches and, in its per-layer form, where each layer reads and writes.
pub use mlp::mlp_with_layer_io;
pub use mlp::{
    mlp, mlp_fusion_pays, mlp_rows, mlp_unfused, mlp_workspace_bytes, MlpForm, MlpLayer,
    MLP_FUSED_LAYERS, MLP_FUSED_MAX_MACS, MLP_FUSED_MAX_ROWS, MLP_FUSED_PAYS_MAX_WEIGHTS,
};
/// Where the two-layer step's per-layer form keeps h, dP and dH (for the vendor GEMM's dispatch).
pub use mlp2_step::mlp2_mse_step_buffers;
pub use mlp2_step::{mlp2_mse_step, mlp2_mse_step_workspace_bytes, Mlp2MseStep};
pub use reduce::{bias_grad, bias_sgd, mse, mse_reduced, mse_workspace_bytes, Reduction};
