/*
 * graphcore: a CUDA Graph runtime - the built-in ops of libgraphcore.so
 * (the typed gc_op_* launches of graphcore's own kernels, and the list of
 * those kernels for gc_kernel_builtin).
 *
 * Generated from ffi/src/ops/ by cbindgen (ffi/cbindgen.toml) and
 * tests/header.rs; do not edit. Regenerate with `make header`.
 *
 * graphcore.h includes this header at its end, and this header includes
 * graphcore.h first, so a program may include either (or both, in any
 * order). The conventions, the statuses and the handle types are
 * graphcore.h's.
 */

#ifndef GRAPHCORE_OPS_H
#define GRAPHCORE_OPS_H

#include "graphcore.h"

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/* ==========================================================================
 * Built-in ops
 *
 * Typed launches of the built-in kernels: each picks the launch
 * configuration, checks sizes and pointers (0, overflow, misalignment,
 * overlapping outputs: GC_ERROR_INVALID_ARGUMENT with a message, and
 * nothing is launched), and works eagerly or under capture.
 *
 * Common errors: in this header, `Errors: common` means these (instead of
 * the status section's): GC_ERROR_INVALID_ARGUMENT (stream or a pointer
 * argument NULL, n or a size 0 or too large, a pointer not 4-byte
 * aligned; nothing is launched), GC_ERROR_INVALID_HANDLE (stream destroyed
 * or not a stream), GC_ERROR_CAPTURE (the stream's capture refused a
 * launch; the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or
 * GC_ERROR_CUDA (loading the built-in kernels on first use, or a launch,
 * failed), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context
 * is unusable).
 *
 * Every export here is one wrapper: its signature (spelled out for
 * cbindgen) and an `op!` body naming the typed operation of
 * `graphcore_kernels::ops` it runs; the body takes the export's name from
 * the function it is in, so the name is written once.
 *
 * Programmatic dependent launch: on GPUs of compute capability 9.0 with a
 * CUDA 12.3 driver, the kernels (their compute_90 PTX) wait on the kernel
 * before them and trigger the one after, and these exports launch them
 * with programmatic stream serialization, so a kernel's launch and weight
 * prefetch overlap the previous kernel's tail; captured, consecutive ops
 * are joined by programmatic edges. Cooperative launches (gc_op_mlp's
 * fused form, gc_op_mlp2_mse_step's first launch) and GEMMs whose grid
 * fills the SMs (gc_op_linear beyond 256 rows, and the backward and
 * weight-gradient GEMMs of large layers) stay fully ordered.
 * Results are bitwise the same either way. The environment variable
 * GC_PDL=0, read once per process, turns these launches off (plain
 * launches, full edges), e.g. for A/B measurements.
 *
 * Thread safety: any number of threads may launch on any streams.
 * ========================================================================== */

/**
 * One operation of gc_op_chain: an opcode (GC_CHAIN_*) and its constant.
 */
typedef struct gc_chain_op {
    /**
     * GC_CHAIN_FILL, GC_CHAIN_MUL, GC_CHAIN_ADD, GC_CHAIN_RELU, GC_CHAIN_MAX, GC_CHAIN_MIN or
     * another GC_CHAIN_* opcode.
     */
    uint32_t op;
    /**
     * The constant (ignored by GC_CHAIN_RELU and GC_CHAIN_GELU).
     */
    float value;
} gc_chain_op;

/**
 * Chain opcode: v = value (a fill; the input is not read when first).
 */
#define GC_CHAIN_FILL 1

/**
 * Chain opcode: v = max(v, value).
 */
#define GC_CHAIN_MAX 5

/**
 * Chain opcode: v = min(v, value).
 */
#define GC_CHAIN_MIN 6

/**
 * Most operations one gc_op_chain call applies.
 */
#define GC_CHAIN_MAX_OPS 8

/**
 * Applies up to GC_CHAIN_MAX_OPS operations to each of n elements in one
 * pass, in registers: `y[i] = op_last(... op_first(x[i]))`. ops holds count
 * operations (it may be NULL when count is 0: y = x); the caller keeps it,
 * and graphcore reads it only during the call.
 * Pointers: y and x are device memory of the stream's context (gc_pool_alloc
 * blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned
 * (float alignment); when both are 16-byte aligned the float4 path runs.
 * When the first operation is GC_CHAIN_FILL, x is not read and may be NULL.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (x NULL unless the first
 * operation is a fill, ops NULL with count > 0, count > GC_CHAIN_MAX_OPS (ops
 * is then not read), an unknown opcode, y and x partly overlapping).
 */
enum gc_status gc_op_chain(struct gc_stream *stream,
                           float *y,
                           const float *x,
                           uint64_t n,
                           const struct gc_chain_op *ops,
                           uint32_t count);

/**
 * Fills y[0..n) with value.
 * Pointers: y is device memory of the stream's context (gc_pool_alloc
 * blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned
 * (float alignment); 16-byte aligned takes the float4 path.
 * Errors: common.
 */
enum gc_status gc_op_fill(struct gc_stream *stream, float *y, uint64_t n, float value);

/**
 * Chain opcode: v = v * value (bitwise as gc_op_scale).
 */
#define GC_CHAIN_MUL 2

/**
 * Chain opcode: v = v + value (bitwise as gc_op_add_scalar).
 */
#define GC_CHAIN_ADD 3

/**
 * Chain opcode: v = max(v, 0) (bitwise as gc_op_relu).
 */
#define GC_CHAIN_RELU 4

/**
 * Chain opcode: v = gelu(v), the tanh approximation (bitwise as gc_op_gelu).
 */
#define GC_CHAIN_GELU 7

/**
 * y = x (n floats).
 * Pointers: y and x are device memory of the stream's context (gc_pool_alloc
 * blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned (float
 * alignment); when both are 16-byte aligned the float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
 */
enum gc_status gc_op_copy(struct gc_stream *stream, float *y, const float *x, uint64_t n);

/**
 * y = alpha * x (n floats).
 * Pointers: y and x are device memory of the stream's context (gc_pool_alloc
 * blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned (float
 * alignment); when both are 16-byte aligned the float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
 */
enum gc_status gc_op_scale(struct gc_stream *stream,
                           float *y,
                           const float *x,
                           uint64_t n,
                           float alpha);

/**
 * y = x + c (n floats).
 * Pointers: y and x are device memory of the stream's context (gc_pool_alloc
 * blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned (float
 * alignment); when both are 16-byte aligned the float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
 */
enum gc_status gc_op_add_scalar(struct gc_stream *stream,
                                float *y,
                                const float *x,
                                uint64_t n,
                                float c);

/**
 * y = max(x, 0) (n floats; NaN propagates, -0 becomes +0).
 * Pointers: y and x are device memory of the stream's context (gc_pool_alloc
 * blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned (float
 * alignment); when both are 16-byte aligned the float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
 */
enum gc_status gc_op_relu(struct gc_stream *stream, float *y, const float *x, uint64_t n);

/**
 * y = gelu(x) (n floats), the tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi)
 * (x + 0.044715 x^3))), as PyTorch's gelu(approximate="tanh"), within 2e-5
 * relative (or 1e-30 absolute: the tail below x = -9).
 * Pointers: y and x are device memory of the stream's context (gc_pool_alloc
 * blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned (float
 * alignment); when both are 16-byte aligned the float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
 */
enum gc_status gc_op_gelu(struct gc_stream *stream, float *y, const float *x, uint64_t n);

/**
 * z = x + y (n floats).
 * Pointers: z, x and y are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory), 4-byte
 * aligned (float alignment); when all are 16-byte aligned the float4 path
 * runs.
 * In place: z may equal x and/or y; z partly overlapping either is refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (z partly overlapping an
 * input).
 */
enum gc_status gc_op_add(struct gc_stream *stream,
                         float *z,
                         const float *x,
                         const float *y,
                         uint64_t n);

/**
 * z = x * y (n floats).
 * Pointers: z, x and y are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory), 4-byte
 * aligned (float alignment); when all are 16-byte aligned the float4 path
 * runs.
 * In place: z may equal x and/or y; z partly overlapping either is refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (z partly overlapping an
 * input).
 */
enum gc_status gc_op_mul(struct gc_stream *stream,
                         float *z,
                         const float *x,
                         const float *y,
                         uint64_t n);

/**
 * dx = x > 0 ? dy : 0 (n floats).
 * Pointers: dx, dy and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory), 4-byte
 * aligned (float alignment); when all are 16-byte aligned the float4 path
 * runs.
 * In place: dx may equal dy and/or x; dx partly overlapping either is refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (dx partly overlapping an
 * input).
 */
enum gc_status gc_op_relu_backward(struct gc_stream *stream,
                                   float *dx,
                                   const float *dy,
                                   const float *x,
                                   uint64_t n);

/**
 * y = alpha * x + y (one fused multiply-add per element, n floats).
 * Pointers: y and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when both are 16-byte aligned the
 * float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
 */
enum gc_status gc_op_axpy(struct gc_stream *stream,
                          float *y,
                          const float *x,
                          uint64_t n,
                          float alpha);

/**
 * w -= lr * g (one fused multiply-add per element, n floats).
 * Pointers: w and g are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when both are 16-byte aligned the
 * float4 path runs.
 * In place: w is updated in place; w and g must not overlap at all.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (w and g overlapping).
 */
enum gc_status gc_op_sgd(struct gc_stream *stream, float *w, const float *g, uint64_t n, float lr);

/**
 * `y[r][c] = x[r][c] + b[c]` for a row-major rows x cols matrix (rows *
 * cols < 2^32).
 * Pointers: y, x and b are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); the float4 path runs when all are
 * 16-byte aligned and cols % 4 == 0.
 * In place: y == x is allowed; y partly overlapping x, or overlapping b,
 * is refused.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows * cols >= 2^32, a
 * refused overlap).
 */
enum gc_status gc_op_bias_add(struct gc_stream *stream,
                              float *y,
                              const float *x,
                              const float *b,
                              uint32_t rows,
                              uint32_t cols);

/**
 * gc_op_linear flag: ReLU after the bias.
 */
#define GC_LINEAR_RELU 1

/**
 * gc_op_linear flag: multiply on the TF32 tensor cores (compute capability
 * 8.0 or later) where the GEMM runs, and from 129 rows on where n is wide
 * enough to pay: x and W are rounded to TF32 (10 mantissa bits, to
 * nearest) and the products summed in f32, so results differ from the f32
 * path by that rounding (each product off by up to about 2^-10 of its
 * size; measured: at most 6e-5 of the sum of |products| per output).
 * Deterministic all the same. Small batches, and GPUs older than compute
 * capability 8.0 (detected at run time), compute in f32 as without the
 * flag. Where the dispatch sends the call to cuBLASLt (see gc_op_linear),
 * TF32 is cuBLASLt's CUBLAS_COMPUTE_32F_FAST_TF32 at every row count.
 */
#define GC_LINEAR_TF32 2

/**
 * y = x * W^T + b, then ReLU with GC_LINEAR_RELU in flags: x is m x k, W
 * is n x k (PyTorch's layout), b has n floats (NULL: no bias), y is m x n,
 * all row-major. m <= 256 takes the small-batch path (K split across the
 * threads of each block; from 129 rows on only while n is too narrow for
 * the GEMM's tiles to fill the GPU); larger m the tiled GEMM, on the TF32
 * tensor cores with GC_LINEAR_TF32 (see there). On GPUs of compute
 * capability 9.0 and later, 33 to 256 rows with n * k >= 2^24, and more
 * rows where the GEMM's tiles would leave SMs idle, take a kernel that
 * splits k over the blocks of thread-block clusters (deterministic; the
 * result's bits depend on the shape and the GPU). flags: GC_LINEAR_RELU |
 * GC_LINEAR_TF32 (1 is ReLU as before the flags existed; any other bit is
 * refused). Every m * k, n * k and m * n must be below 2^32.
 * The vendor GEMM: where cuBLASLt is loaded at run time (never linked;
 * see gc_cublaslt_version) and the dispatch table compiled into the
 * library says it is faster for the shape (m, n, k, TF32), the call runs
 * as one cublasLtMatmul with the bias and ReLU fused (epilogues BIAS,
 * RELU_BIAS; TF32 as CUBLAS_COMPUTE_32F_FAST_TF32, f32 as
 * CUBLAS_COMPUTE_32F), no workspace, the same checks and results within
 * float rounding; otherwise, and wherever cuBLASLt is missing or has no
 * algorithm for the shape, graphcore's kernels as above.
 * gc_op_linear_backend tells which runs (and plans cuBLASLt's call ahead
 * of a capture); the flags GC_LINEAR_GRAPHCORE and GC_LINEAR_CUBLASLT
 * force one. Captured, either path is kernel nodes whose parameters hold
 * y, x, w and b, rebound as graph arguments (cuBLASLt's kernels by the
 * scan of foreign kernels, docs/arguments.md); a capture rebound to
 * pointers of less alignment than it was captured with (16 bytes for pool
 * blocks) is not supported on the cuBLASLt path.
 * Pointers: y, x, w and b are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); float4 loads where k (and for the
 * GEMM path n) is a multiple of 4 and the pointers are 16-byte aligned.
 * In place: not allowed; y must not overlap x, w or b.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
 * more, y overlapping an input, an unknown flag, GC_LINEAR_GRAPHCORE with
 * GC_LINEAR_CUBLASLT), GC_ERROR_NOT_SUPPORTED (GC_LINEAR_CUBLASLT where
 * cuBLASLt is not loaded or has no algorithm for the shape; nothing is
 * launched), GC_ERROR_CUDA (cublasLtMatmul failed).
 */
enum gc_status gc_op_linear(struct gc_stream *stream,
                            float *y,
                            const float *x,
                            const float *w,
                            const float *b,
                            uint32_t m,
                            uint32_t n,
                            uint32_t k,
                            int flags);

/**
 * gc_op_linear with its row count in device memory, for exact-size
 * requests: the kernel reads `m = *rows` (a uint32_t) when it runs, so one
 * launch, captured once for a bucket of max_rows rows, serves any
 * 1 <= m <= max_rows with x and y of exactly m rows (x m x k, y m x n:
 * x is read and y written below row m only; no padding). A count above
 * max_rows is clamped to max_rows (the rows of the bucket are computed;
 * nothing past them is read or written); a count of 0 computes nothing.
 * Always the small-batch kernel with the tiles gc_op_linear's small-batch
 * path picks for max_rows rows: the first m rows of y are bitwise what
 * that launch of max_rows rows gives them (each within float rounding of
 * float64). flags: GC_LINEAR_RELU (GC_LINEAR_TF32 and other bits are
 * refused). Every max_rows * k, n * k and max_rows * n must be below 2^32.
 * Pointers: y, x, w, b and rows are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned; y and x are checked for max_rows rows when this is
 * called (the bucket's buffers); rows may be written by a kernel before
 * this one on the stream, or bound as a graph argument.
 * In place: not allowed; y must not overlap x, w, b or rows.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows NULL, max_rows 0 or
 * more than 256, a matrix of 2^32 elements or more, y overlapping an
 * input, an unknown or refused flag).
 */
enum gc_status gc_op_linear_rows(struct gc_stream *stream,
                                 float *y,
                                 const float *x,
                                 const float *w,
                                 const float *b,
                                 const uint32_t *rows,
                                 uint32_t max_rows,
                                 uint32_t n,
                                 uint32_t k,
                                 int flags);

/**
 * Input gradient of linear: dx = dy * W (dy m x n, W n x k, dx m x k,
 * row-major; every product of two of m, n, k below 2^32). m <= 64 takes
 * the small-batch path (except from 32 rows with n * k >= 2^24), larger m
 * (and those) the tiled GEMM; on GPUs with thread-block clusters (compute
 * capability 9.0), 33-256 rows with n * k >= 2^24 whose tiles of dx (64 x
 * 64 up to 64 rows, 128 x 64 above) fill the SMs in clusters of 2 take the
 * cluster split-K kernel instead, so its bits differ between Hopper and
 * older GPUs (each deterministic).
 * The vendor GEMM: where gc_op_linear's dispatch table gives the layer's
 * forward shape (m, n, k; f32) to cuBLASLt, cuBLASLt is loaded and it
 * plans this call (see gc_op_linear and gc_op_linear_backend), this runs
 * as one cublasLtMatmul instead, within f32 rounding of graphcore's
 * kernel (not bitwise); elsewhere graphcore's kernel as described.
 * Pointers: dx, dy and w are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); float4 loads where the sizes are
 * multiples of 4 and the pointers 16-byte aligned.
 * In place: not allowed; dx must not overlap dy or w.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
 * more, dx overlapping an input).
 */
enum gc_status gc_op_linear_backward_input(struct gc_stream *stream,
                                           float *dx,
                                           const float *dy,
                                           const float *w,
                                           uint32_t m,
                                           uint32_t n,
                                           uint32_t k);

/**
 * Weight gradient of linear: dw = dy^T * x (dy m x n, x m x k, dw n x k,
 * row-major, dw overwritten; every product of two of m, n, k below 2^32).
 * The vendor GEMM: where gc_op_linear's dispatch table gives the layer's
 * forward shape (m, n, k; f32) to cuBLASLt, cuBLASLt is loaded and it
 * plans this call (see gc_op_linear and gc_op_linear_backend), this runs
 * as one cublasLtMatmul instead, within f32 rounding of graphcore's
 * kernel (not bitwise); elsewhere graphcore's kernel as described.
 * Pointers: dw, dy and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); float4 loads where the sizes are
 * multiples of 4 and the pointers 16-byte aligned.
 * In place: not allowed; dw must not overlap dy or x.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
 * more, dw overlapping an input).
 */
enum gc_status gc_op_linear_backward_weight(struct gc_stream *stream,
                                            float *dw,
                                            const float *dy,
                                            const float *x,
                                            uint32_t m,
                                            uint32_t n,
                                            uint32_t k);

/**
 * Weight gradient and SGD fused: w -= lr * dy^T * x (dy m x n, x m x k, w
 * n x k, row-major), without materialising the gradient (bitwise equal to
 * gc_op_linear_backward_weight then gc_op_sgd where both run graphcore's
 * kernels).
 * The vendor GEMM: where gc_op_linear's dispatch table gives the layer's
 * forward shape (m, n, k; f32) to cuBLASLt, cuBLASLt is loaded and it
 * plans this call (see gc_op_linear and gc_op_linear_backend), this runs
 * as one cublasLtMatmul instead (W -= lr * dY^T . x with beta 1, in place), within f32 rounding of graphcore's
 * kernel (not bitwise); elsewhere graphcore's kernel as described.
 * Pointers: w, dy and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); float4 loads where the sizes are
 * multiples of 4 and the pointers 16-byte aligned.
 * In place: w is updated in place; it must not overlap dy or x.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
 * more, w overlapping an input).
 */
enum gc_status gc_op_linear_weight_sgd(struct gc_stream *stream,
                                       float *w,
                                       const float *dy,
                                       const float *x,
                                       uint32_t m,
                                       uint32_t n,
                                       uint32_t k,
                                       float lr);

/**
 * Bias gradient: `db[c]` = sum over rows of `dy[r][c]` (dy row-major rows x
 * cols, rows * cols < 2^32), summed in a fixed order (deterministic).
 * Pointers: db and dy are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment).
 * In place: not allowed; db must not overlap dy.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows * cols >= 2^32, db
 * overlapping dy).
 */
enum gc_status gc_op_bias_grad(struct gc_stream *stream,
                               float *db,
                               const float *dy,
                               uint32_t rows,
                               uint32_t cols);

/**
 * Bias gradient and SGD fused: `b[c] -= lr *` sum over rows of `dy[r][c]`
 * (bitwise equal to gc_op_bias_grad then gc_op_sgd).
 * Pointers: b and dy are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment).
 * In place: b is updated in place; it must not overlap dy.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows * cols >= 2^32, b
 * overlapping dy).
 */
enum gc_status gc_op_bias_sgd(struct gc_stream *stream,
                              float *b,
                              const float *dy,
                              uint32_t rows,
                              uint32_t cols,
                              float lr);

/**
 * gc_op_linear flag: run graphcore's own kernels whatever the dispatch
 * table says (for measurements and A/B checks).
 */
#define GC_LINEAR_GRAPHCORE 4

/**
 * gc_op_linear flag: run cuBLASLt whatever the dispatch table says;
 * GC_ERROR_NOT_SUPPORTED (nothing launched) where cuBLASLt is not loaded
 * or has no algorithm for the shape. Not with GC_LINEAR_GRAPHCORE.
 */
#define GC_LINEAR_CUBLASLT 8

/**
 * gc_op_linear_backend: graphcore's own kernels.
 */
#define GC_LINEAR_BACKEND_GRAPHCORE 0

/**
 * gc_op_linear_backend: cuBLASLt.
 */
#define GC_LINEAR_BACKEND_CUBLASLT 1

/**
 * Which GEMM gc_op_linear runs for these sizes and flags on the stream's
 * device: *backend is set to GC_LINEAR_BACKEND_GRAPHCORE or
 * GC_LINEAR_BACKEND_CUBLASLT. Asked as for a call with a bias and
 * 16-byte aligned pointers (pool blocks are); a call with less aligned
 * pointers or no bias may be planned apart, and falls back the same way.
 * The choice: GC_LINEAR_GRAPHCORE or GC_LINEAR_CUBLASLT in flags force
 * one; otherwise the dispatch table compiled into the library (measured
 * by perf/side_by_side/gemm_dispatch.py; until measured, graphcore's
 * kernels below 512 rows and cuBLASLt from 512 rows and for TF32), or the
 * table file the environment variable GRAPHCORE_GEMM_TABLE names (the
 * same format, measured on the machine at hand by that script; read once
 * per process at the first choice; a file that cannot be read or parsed
 * is reported once on stderr and the compiled-in table used), falling
 * back to graphcore's kernels where cuBLASLt is not loaded (see
 * gc_cublaslt_version) or has no algorithm for the shape. Where cuBLASLt
 * is chosen, this also makes and caches its plan for the shape (host work
 * only), so a later capture of the call makes none: call it before
 * capturing to keep cuBLASLt's planning out of the capture.
 * Pointers: backend is host memory.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (backend NULL, an unknown
 * or contradictory flag), GC_ERROR_NOT_SUPPORTED (GC_LINEAR_CUBLASLT and
 * cuBLASLt is not loaded or refuses the shape; gc_last_error says which).
 * Any thread may ask, on any stream, concurrently with launches.
 */
enum gc_status gc_op_linear_backend(struct gc_stream *stream,
                                    uint32_t m,
                                    uint32_t n,
                                    uint32_t k,
                                    int flags,
                                    int *backend);

/**
 * Loads cuBLASLt if not yet tried, and sets *version to its
 * cublasLtGetVersion() (for example 120804 for 12.8.4). graphcore never
 * links cuBLASLt: on first use (this call, or a gc_op_linear the dispatch
 * sends to it) it opens the library named by the environment variable
 * GRAPHCORE_CUBLASLT (a path; `0` or `off`: never load it), or else the
 * first of libcublasLt.so.13, libcublasLt.so.12, libcublasLt.so the
 * dynamic loader finds (LD_LIBRARY_PATH; for the pip wheel nvidia-cublas,
 * point GRAPHCORE_CUBLASLT at site-packages/nvidia/cublas/lib/
 * libcublasLt.so.N, N the major version). The outcome is kept for the process. Where it
 * does not load, gc_op_linear runs graphcore's own kernels.
 * Pointers: version is host memory, written only on success.
 * Errors: GC_ERROR_INVALID_ARGUMENT (version NULL), GC_ERROR_NOT_SUPPORTED
 * (cuBLASLt is not loaded: gc_last_error says what was tried, or that
 * GRAPHCORE_CUBLASLT turned it off), GC_ERROR_CUDA (cublasLtCreate failed).
 * Any thread may call it, concurrently with anything (the library is
 * opened once, under a lock).
 */
enum gc_status gc_cublaslt_version(size_t *version);

/**
 * Writes to *bytes the workspace gc_op_mse needs for n elements on ctx's
 * device (a pure computation: nothing is allocated or launched).
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context).
 */
enum gc_status gc_op_mse_workspace_bytes(struct gc_context *ctx, uint64_t n, uint64_t *bytes);

/**
 * Sum-of-squares loss, as (pred - target).pow(2).sum(): `loss[0]` = sum of
 * `(pred[i] - target[i])^2`, and, when grad is not NULL, `grad[i] = 2 *
 * grad_scale * (pred[i] - target[i])`. workspace holds workspace_bytes >=
 * gc_op_mse_workspace_bytes(n) bytes, zeroed once before first use (the
 * kernel leaves it zeroed); do not share it between concurrent launches.
 * Deterministic: fixed-order reduction.
 * Pointers: loss, grad, pred, target and workspace are device memory of
 * the stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory;
 * not host memory), 4-byte aligned (float alignment); when pred, target
 * and grad are 16-byte aligned the float4 path runs.
 * In place: grad may equal pred or target; loss and workspace must not
 * overlap anything else.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (workspace_bytes too small, a
 * refused overlap).
 */
enum gc_status gc_op_mse(struct gc_stream *stream,
                         float *loss,
                         float *grad,
                         const float *pred,
                         const float *target,
                         uint64_t n,
                         float grad_scale,
                         void *workspace,
                         uint64_t workspace_bytes);

/**
 * gc_op_mse_reduction: `loss[0]` = the sum of the squared errors, as
 * nn.MSELoss(reduction='sum').
 */
#define GC_REDUCTION_SUM 0

/**
 * gc_op_mse_reduction: `loss[0]` = their mean, as nn.MSELoss() (reduction
 * 'mean', PyTorch's default).
 */
#define GC_REDUCTION_MEAN 1

/**
 * nn.MSELoss(reduction=...) and its gradient in one launch: with
 * GC_REDUCTION_SUM, `loss[0]` = sum of `(pred[i] - target[i])^2` and
 * `grad[i] = 2 * (pred[i] - target[i])` (bitwise gc_op_mse with
 * grad_scale 1); with GC_REDUCTION_MEAN, `loss[0]` = that sum times
 * `s = 1.0f / n` (one float multiply, rounded to nearest: how PyTorch's
 * CUDA mean scales its sum) and `grad[i] = (pred[i] - target[i]) * (2 *
 * s)` (bitwise the scale of PyTorch's MSELoss backward, 2 / n as a float).
 * The sum is gc_op_mse's fixed-order sum (deterministic; equal to
 * PyTorch's up to rounding). grad is the gradient of `loss[0]`, or NULL
 * for the loss alone. Workspace, pointers and in-place rules as
 * gc_op_mse's (gc_op_mse_workspace_bytes(n) bytes, zeroed once before
 * first use, not shared between concurrent launches).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a reduction that is
 * neither GC_REDUCTION_SUM nor GC_REDUCTION_MEAN, workspace_bytes too
 * small, a refused overlap).
 */
enum gc_status gc_op_mse_reduction(struct gc_stream *stream,
                                   float *loss,
                                   float *grad,
                                   const float *pred,
                                   const float *target,
                                   uint64_t n,
                                   uint32_t reduction,
                                   void *workspace,
                                   uint64_t workspace_bytes);

/**
 * One layer of gc_op_mlp: y = x * W^T + b, then ReLU when relu != 0.
 */
typedef struct gc_mlp_layer {
    /**
     * W, outputs x inputs floats, row-major (as torch.nn.Linear stores it):
     * device memory of the stream's context.
     */
    const float *w;
    /**
     * b, outputs floats (device memory), or NULL for no bias.
     */
    const float *b;
    /**
     * Input width: the previous layer's outputs (the first: x's columns).
     */
    uint32_t inputs;
    /**
     * Output width.
     */
    uint32_t outputs;
    /**
     * Non-zero: ReLU after this layer.
     */
    int relu;
} gc_mlp_layer;

/**
 * gc_op_mlp flag: one fused launch where that measured at least as fast as
 * one launch per layer on an H100 (one row, 3 or 4 layers, every layer
 * after the first at most 2^17 weights: the notes' 1024-512-256-10 MLP at
 * batch 1), and only where graphcore does not launch its kernels with
 * programmatic dependent launch (below compute capability 9.0, a driver
 * older than CUDA 12.3, or GC_PDL=0): with it, one launch per layer
 * measured faster at every shape; one launch per layer elsewhere.
 */
#define GC_MLP_FUSED 1

/**
 * gc_op_mlp flag: fused wherever the fused kernel takes the layers (up to 8
 * rows, at most 2^25 multiply-adds a layer; one launch per 4 layers),
 * faster or not: for measurements. Takes precedence over GC_MLP_FUSED.
 */
#define GC_MLP_FUSED_ALWAYS 2

/**
 * gc_op_mlp flag: allow TF32 in the per-layer form (gc_op_linear's
 * GC_LINEAR_TF32, whose value 2 is GC_MLP_FUSED_ALWAYS here): each layer
 * runs as gc_op_linear with GC_LINEAR_TF32 would, through cuBLASLt's
 * FAST_TF32 where the dispatch gives it the layer and it is loaded, else
 * graphcore's TF32 kernel (f32 below compute capability 8.0). Not with
 * GC_MLP_FUSED or GC_MLP_FUSED_ALWAYS (the fused kernel is f32).
 */
#define GC_MLP_TF32 16

/**
 * Most layers one gc_op_mlp call takes.
 */
#define GC_MLP_MAX_LAYERS 64

/**
 * Writes to *bytes the workspace gc_op_mlp needs for rows rows through the
 * n_layers layers at layers (a pure computation: nothing is allocated or
 * launched; only the widths are read): 256 bytes (the fused kernel's
 * counter and epoch), then every layer's output but the last twice: as the
 * fused kernel's tagged activations (8 bytes an element) and as floats,
 * each rounded up to 256 bytes.
 * Errors: GC_ERROR_INVALID_ARGUMENT (layers or bytes NULL, n_layers 0 or more
 * than GC_MLP_MAX_LAYERS).
 */
enum gc_status gc_op_mlp_workspace_bytes(uint32_t rows,
                                         const struct gc_mlp_layer *layers,
                                         uint32_t n_layers,
                                         uint64_t *bytes);

/**
 * The forward pass of an MLP: rows rows of x (rows x `layers[0].inputs`)
 * through n_layers layers (each y = x * W^T + b, then ReLU when asked) into
 * y (rows x layers[n_layers - 1].outputs), all f32 row-major. flags 0: one
 * launch per layer (the small-batch or GEMM kernel of gc_op_linear), the
 * faster form on an H100 for most shapes measured (perf/TUNING.md).
 * GC_MLP_FUSED: fused where that pays (see the flag), one launch per
 * layer elsewhere; GC_MLP_FUSED_ALWAYS: fused wherever the fused kernel
 * takes the layers (up to 8 rows, at most 2^25 multiply-adds a layer).
 * Fused: one launch per 4 layers, a cooperative kernel with no barrier
 * between layers (each tile waits only for the
 * activations it reads, which carry a per-launch tag); a 2- to 4-layer MLP
 * is one kernel node when captured; elsewhere one launch per layer. Fused
 * outputs are bitwise those of per-layer launches with the fused kernel's
 * tiles. Results
 * are deterministic (the same bits on every run and replay) and within
 * float rounding of float64. One launch per layer goes through
 * gc_op_linear's GEMM dispatch: a layer the dispatch table gives to
 * cuBLASLt (where it is loaded; see gc_op_linear) runs as one
 * cublasLtMatmul with its bias and ReLU fused, the others as above.
 * In that form flags may also hold GC_LINEAR_GRAPHCORE or
 * GC_LINEAR_CUBLASLT (gc_op_linear's backend flags, the same bits: every
 * layer on that backend; forced cuBLASLt that is not loaded or refuses a
 * layer is GC_ERROR_NOT_SUPPORTED with nothing launched) and GC_MLP_TF32
 * (every layer as gc_op_linear with GC_LINEAR_TF32: cuBLASLt's FAST_TF32
 * where the dispatch picks it and it loads, else graphcore's TF32 kernel;
 * results within TF32 rounding of float64, not bitwise the f32 form's).
 * workspace holds workspace_bytes >= gc_op_mlp_workspace_bytes(rows,
 * layers, n_layers) bytes (a gc_pool_alloc block is the usual choice); its
 * first 4 bytes must be zero before its first use (gc_memset_async once;
 * every launch leaves them zero); do not share it between launches that
 * may run concurrently. The caller keeps layers; graphcore reads it only
 * during the call (a captured launch keeps the pointers in it).
 * Pointers: y, x, workspace and every layer's w and b are device memory of
 * the stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory;
 * not host memory), 4-byte aligned (float alignment); float4 loads where a
 * layer's inputs is a multiple of 4 and its x and W are 16-byte aligned
 * (workspace 16-byte aligned for the intermediates).
 * In place: not allowed; y and workspace must not overlap each other, x
 * or any weight or bias.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a layer's w NULL, an unknown
 * flag, GC_LINEAR_GRAPHCORE with GC_LINEAR_CUBLASLT, GC_MLP_TF32 or
 * GC_LINEAR_CUBLASLT with a fused flag, n_layers more than GC_MLP_MAX_LAYERS (layers is then not read), a
 * layer's inputs not the previous layer's outputs, a matrix of 2^32 elements
 * or more, workspace_bytes too small, a refused overlap),
 * GC_ERROR_NOT_SUPPORTED (GC_LINEAR_CUBLASLT and cuBLASLt is not loaded or
 * refuses a layer; nothing launched), GC_ERROR_CUDA (also: a device without
 * cooperative launch).
 */
enum gc_status gc_op_mlp(struct gc_stream *stream,
                         float *y,
                         const float *x,
                         uint32_t rows,
                         const struct gc_mlp_layer *layers,
                         uint32_t n_layers,
                         void *workspace,
                         uint64_t workspace_bytes,
                         uint32_t flags);

/**
 * gc_op_mlp with its row count in device memory, for exact-size requests:
 * each layer's kernel reads `m = *rows` (a uint32_t) when it runs, so one
 * set of launches, captured once for a bucket of max_rows rows, serves any
 * 1 <= m <= max_rows with x and y of exactly m rows (x m x
 * `layers[0].inputs`, y m x the last layer's outputs: x is read and y
 * written below row m only; no padding). A count above max_rows is
 * clamped to max_rows (nothing past the bucket's rows is read or
 * written); a count of 0 computes nothing. One launch per layer, each the
 * launch gc_op_linear_rows makes for max_rows rows (the small-batch
 * kernel with gc_op_linear's small-batch tiles for max_rows rows): each
 * layer's first m rows are bitwise that launch's for max_rows rows, within
 * float rounding of float64. The workspace is gc_op_mlp's for max_rows
 * rows (gc_op_mlp_workspace_bytes(max_rows, ...); its first 4 bytes need
 * not be zero: only the intermediates are used). flags: 0 (reserved).
 * In a runner's exact-size capture (gc_runner_capture_exact), pass the
 * `rows` the record function was given and declare x and y with
 * GC_ARG_ROWS. The caller keeps layers; graphcore reads it only during the
 * call.
 * Pointers: y, x, rows, workspace and every layer's w and b are device
 * memory of the stream's context (gc_pool_alloc blocks, cudaMalloc,
 * managed memory; not host memory), 4-byte aligned; y, x and workspace
 * are checked for max_rows rows when this is called (the bucket's
 * buffers); rows may be written by a kernel before these on the stream,
 * or bound as a graph argument.
 * In place: not allowed; y and workspace must not overlap each other, x,
 * rows, or any weight or bias.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows NULL, max_rows 0 or
 * more than 256, a layer's w NULL, a nonzero flag, n_layers 0 or more than
 * GC_MLP_MAX_LAYERS (layers is then not read), a layer's inputs not the
 * previous layer's outputs, a matrix of 2^32 elements or more,
 * workspace_bytes too small, a refused overlap).
 */
enum gc_status gc_op_mlp_rows(struct gc_stream *stream,
                              float *y,
                              const float *x,
                              const uint32_t *rows,
                              uint32_t max_rows,
                              const struct gc_mlp_layer *layers,
                              uint32_t n_layers,
                              void *workspace,
                              uint64_t workspace_bytes,
                              uint32_t flags);

/**
 * Writes to *bytes the workspace gc_op_linear_mse_step needs for rows rows,
 * inputs inputs and outputs outputs on ctx's device (a pure computation:
 * nothing is allocated or launched): the loss's counter and per-block sums,
 * rounded up to 256 bytes, then the output gradient (rows x outputs floats).
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context).
 */
enum gc_status gc_op_linear_mse_step_workspace_bytes(struct gc_context *ctx,
                                                     uint32_t rows,
                                                     uint32_t inputs,
                                                     uint32_t outputs,
                                                     uint64_t *bytes);

/**
 * One training step of a linear layer with the summed squared error and
 * SGD, in two launches (up to 256 rows): pred = x * W^T + b (x rows x
 * inputs, W outputs x inputs as torch.nn.Linear stores it, b outputs
 * floats or NULL for no bias), `loss[0]` = sum (pred - target)^2 (PyTorch's
 * (pred - target).pow(2).sum()), dY = 2 * grad_scale * (pred - target)
 * (grad_scale 1 for the summed loss, 1 / (rows * outputs) for the mean),
 * then W -= lr * dY^T * x and b -= lr * (column sums of dY), in place. The
 * first launch is the forward pass with dY and the loss's per-block sums
 * in its epilogue, the second the weight and bias update and the loss's
 * final sum; more than 256 rows take three (GEMM, loss, update). W and b come out bitwise equal to gc_op_linear,
 * gc_op_mse, gc_op_linear_weight_sgd and gc_op_bias_sgd run one after the
 * other (on the same device, where the dispatch gives those calls
 * graphcore's kernels); the loss is summed in another fixed order
 * (equal up to rounding). Deterministic: no float atomics, the same bits
 * on every run and replay. The vendor GEMM: past the two-launch sizes,
 * where gc_op_linear's dispatch gives the forward's shape (rows, outputs,
 * inputs; f32) to cuBLASLt (see gc_op_linear), the forward runs as
 * cublasLtMatmul with the bias fused (as gc_op_linear's), the loss as
 * before, and the update as cublasLtMatmul W -= lr * dY^T * x (beta 1, in
 * place) then gc_op_bias_sgd's kernel: four launches, W within f32
 * rounding of graphcore's update (not bitwise gc_op_linear_weight_sgd's).
 * workspace holds workspace_bytes >= gc_op_linear_mse_step_workspace_bytes
 * bytes (a gc_pool_alloc block is the usual choice); its first 4 bytes must
 * be zero before its first use (gc_memset_async once; every step leaves
 * them zero); do not share it between steps that may run concurrently. dY
 * is left in the workspace (256-byte aligned, after the loss's sums).
 * Pointers: w, b, x, target, loss and workspace are device memory of the
 * stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory; not
 * host memory), 4-byte aligned (float alignment); float4 loads when inputs
 * is a multiple of 4 and x and w are 16-byte aligned.
 * In place: w and b are updated in place; w, b, loss and workspace must
 * not overlap each other, x or target.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
 * more, workspace_bytes too small, a refused overlap).
 */
enum gc_status gc_op_linear_mse_step(struct gc_stream *stream,
                                     float *w,
                                     float *b,
                                     const float *x,
                                     const float *target,
                                     float *loss,
                                     uint32_t rows,
                                     uint32_t inputs,
                                     uint32_t outputs,
                                     float grad_scale,
                                     float lr,
                                     void *workspace,
                                     uint64_t workspace_bytes);

/**
 * gc_op_linear_mse_step with flags choosing the GEMM backend and TF32
 * (the plain form is this with flags 0; everything else as there).
 * flags: 0 is the plain form's behaviour. GC_LINEAR_GRAPHCORE: graphcore's
 * kernels whatever the dispatch says. GC_LINEAR_CUBLASLT: the GEMM form's
 * GEMMs on cuBLASLt whatever the dispatch says (GC_ERROR_NOT_SUPPORTED,
 * nothing launched, where cuBLASLt is not loaded or refuses one of them, or
 * where the step takes its small-batch fused form, which has no GEMM).
 * GC_LINEAR_TF32 (TF32 allowed): in the GEMM form every GEMM (forward, input
 * gradient, weight update) runs on cuBLASLt with
 * CUBLAS_COMPUTE_32F_FAST_TF32, results within TF32 rounding of float64;
 * graphcore has no TF32 form of the steps, so where cuBLASLt is not loaded
 * or refuses one of them this is GC_ERROR_NOT_SUPPORTED naming the flag,
 * nothing launched (and GC_LINEAR_TF32 with GC_LINEAR_GRAPHCORE is always
 * refused so); the small-batch fused form stays f32 (TF32 allows lower
 * precision, it does not require it), as does a device below compute
 * capability 8.0.
 * Pointers, in place, workspace and thread safety: as gc_op_linear_mse_step.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (as gc_op_linear_mse_step;
 * an unknown flag, GC_LINEAR_GRAPHCORE with GC_LINEAR_CUBLASLT),
 * GC_ERROR_NOT_SUPPORTED (as the flags say; gc_last_error says why).
 */
enum gc_status gc_op_linear_mse_step_flags(struct gc_stream *stream,
                                           float *w,
                                           float *b,
                                           const float *x,
                                           const float *target,
                                           float *loss,
                                           uint32_t rows,
                                           uint32_t inputs,
                                           uint32_t outputs,
                                           float grad_scale,
                                           float lr,
                                           void *workspace,
                                           uint64_t workspace_bytes,
                                           int flags);

/**
 * Writes to *bytes the workspace gc_op_mlp2_mse_step needs for rows rows,
 * hidden hidden units and outputs outputs on ctx's device (a pure
 * computation: nothing is allocated or launched): a 256-byte grid barrier,
 * the loss's per-block sums, then h, dP and dH (each 256-byte aligned).
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context).
 */
enum gc_status gc_op_mlp2_mse_step_workspace_bytes(struct gc_context *ctx,
                                                   uint32_t rows,
                                                   uint32_t hidden,
                                                   uint32_t outputs,
                                                   uint64_t *bytes);

/**
 * One training step of a 2-layer MLP with a ReLU hidden layer, the summed
 * squared error and SGD, in two launches while rows * hidden * (inputs +
 * 2 * outputs) < 2^31 multiply-adds (e.g. 4096-wide layers up to 42 rows):
 * h = relu(x * W1^T + b1), pred =
 * h * W2^T + b2, `loss[0]` = sum (pred - target)^2, dP = 2 * grad_scale *
 * (pred - target), dH = (dP * W2) where h > 0 (else 0), then W2 -= lr *
 * dP^T * h, b2 -= lr * (column sums of dP), W1 -= lr * dH^T * x and
 * b1 -= lr * (column sums of dH), in place (x rows x inputs, W1 hidden x
 * inputs, W2 outputs x hidden as torch.nn.Linear stores them; b1, b2 may be
 * NULL).
 * The first launch is cooperative (the forward pass, the loss's per-block
 * sums, dP and dH, with a grid barrier between the phases), the second
 * the loss's final sum and both layers' updates. Larger steps, where the
 * layers' own kernels are faster, take seven launches: gc_op_linear twice,
 * gc_op_mse, gc_op_linear_backward_input, gc_op_relu_backward and each
 * layer's update. Deterministic: no float atomics, the same bits on every
 * run and replay; results within float rounding of float64. The vendor
 * GEMM: in the seven-launch form, a layer whose forward shape (rows,
 * hidden, inputs for W1; rows, outputs, hidden for W2) gc_op_linear's
 * dispatch gives to cuBLASLt (see gc_op_linear) runs its GEMMs as
 * cublasLtMatmul calls (its forward with the bias and ReLU fused; for W2
 * also dH = dP * W2; its update W -= lr * dY^T * x with beta 1) and its
 * bias update as gc_op_bias_sgd's kernel, within f32 rounding of
 * graphcore's kernels.
 * workspace holds workspace_bytes >= gc_op_mlp2_mse_step_workspace_bytes
 * bytes (a gc_pool_alloc block is the usual choice); its first 4 bytes must
 * be zero before its first use (gc_memset_async once; every step leaves
 * them zero); do not share it between steps that may run concurrently.
 * Pointers: w1, b1, w2, b2, x, target, loss and workspace are device
 * memory of the stream's context (gc_pool_alloc blocks, cudaMalloc,
 * managed memory; not host memory), 4-byte aligned (float alignment);
 * float4 loads where widths are multiples of 4 and pointers 16-byte
 * aligned.
 * In place: the weights and biases are updated in place; w1, b1, w2, b2,
 * loss and workspace must not overlap each other, x or target.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a width of 65536 or more,
 * workspace_bytes too small, a refused overlap), GC_ERROR_CUDA (also: a device
 * without cooperative launch).
 */
enum gc_status gc_op_mlp2_mse_step(struct gc_stream *stream,
                                   float *w1,
                                   float *b1,
                                   float *w2,
                                   float *b2,
                                   const float *x,
                                   const float *target,
                                   float *loss,
                                   uint32_t rows,
                                   uint32_t inputs,
                                   uint32_t hidden,
                                   uint32_t outputs,
                                   float grad_scale,
                                   float lr,
                                   void *workspace,
                                   uint64_t workspace_bytes);

/**
 * gc_op_mlp2_mse_step with flags choosing the GEMM backend and TF32 for
 * its seven-launch form's layers (the plain form is this with flags 0;
 * everything else as there). Each layer decides apart from the other
 * (flags 0: the dispatch per layer's forward shape).
 * flags: as gc_op_linear_mse_step_flags's (GC_LINEAR_GRAPHCORE,
 * GC_LINEAR_CUBLASLT, GC_LINEAR_TF32: the same rules and statuses), for
 * the GEMMs of the seven-launch form (each layer's forward, the input
 * gradient dH, each layer's weight update); the small-batch fused form
 * as there (no GEMM: forced cuBLASLt refused, TF32 runs f32).
 * Pointers, in place, workspace and thread safety: as gc_op_mlp2_mse_step.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (as gc_op_mlp2_mse_step;
 * an unknown flag, GC_LINEAR_GRAPHCORE with GC_LINEAR_CUBLASLT),
 * GC_ERROR_NOT_SUPPORTED (as the flags say; gc_last_error says why),
 * GC_ERROR_CUDA (also: a device without cooperative launch).
 */
enum gc_status gc_op_mlp2_mse_step_flags(struct gc_stream *stream,
                                         float *w1,
                                         float *b1,
                                         float *w2,
                                         float *b2,
                                         const float *x,
                                         const float *target,
                                         float *loss,
                                         uint32_t rows,
                                         uint32_t inputs,
                                         uint32_t hidden,
                                         uint32_t outputs,
                                         float grad_scale,
                                         float lr,
                                         void *workspace,
                                         uint64_t workspace_bytes,
                                         int flags);

/*
 * Built-in kernels (gc_kernel_builtin names and their parameters, in order;
 * pass them to gc_launch or gc_graph_add_kernel as void *args[]):
 *
 * gc_fill_f32(float *y, uint64_t n, float value)
 *     y[i] = value for i < n (bitwise equal to chain opcode FILL). Launch:
 *     block 256 (any multiple of 32 up to 1024 is correct), any grid: a
 *     grid-stride loop covers all n. float4 loads/stores when every pointer is
 *     16-byte aligned (decided inside the kernel), a scalar path otherwise.
 *     In-place use (output == an input) is allowed; partly overlapping ranges
 *     are not.
 * gc_copy_f32(float *y, float *x, uint64_t n)
 *     y[i] = x[i] for i < n. Launch: block 256 (any multiple of 32 up to 1024
 *     is correct), any grid: a grid-stride loop covers all n. float4
 *     loads/stores when every pointer is 16-byte aligned (decided inside the
 *     kernel), a scalar path otherwise. In-place use (output == an input) is
 *     allowed; partly overlapping ranges are not.
 * gc_scale_f32(float *y, float *x, uint64_t n, float alpha)
 *     y[i] = alpha * x[i] (one rounding, __fmul_rn; bitwise equal to chain
 *     opcode MUL). Launch: block 256 (any multiple of 32 up to 1024 is
 *     correct), any grid: a grid-stride loop covers all n. float4 loads/stores
 *     when every pointer is 16-byte aligned (decided inside the kernel), a
 *     scalar path otherwise. In-place use (output == an input) is allowed;
 *     partly overlapping ranges are not.
 * gc_add_scalar_f32(float *y, float *x, uint64_t n, float c)
 *     y[i] = x[i] + c (__fadd_rn; bitwise equal to chain opcode ADD). Launch:
 *     block 256 (any multiple of 32 up to 1024 is correct), any grid: a
 *     grid-stride loop covers all n. float4 loads/stores when every pointer is
 *     16-byte aligned (decided inside the kernel), a scalar path otherwise.
 *     In-place use (output == an input) is allowed; partly overlapping ranges
 *     are not.
 * gc_axpy_f32(float *y, float *x, uint64_t n, float alpha)
 *     y[i] = fmaf(alpha, x[i], y[i]). Launch: block 256 (any multiple of 32 up
 *     to 1024 is correct), any grid: a grid-stride loop covers all n. float4
 *     loads/stores when every pointer is 16-byte aligned (decided inside the
 *     kernel), a scalar path otherwise. In-place use (output == an input) is
 *     allowed; partly overlapping ranges are not.
 * gc_add_f32(float *z, float *x, float *y, uint64_t n)
 *     z[i] = x[i] + y[i]. Launch: block 256 (any multiple of 32 up to 1024 is
 *     correct), any grid: a grid-stride loop covers all n. float4 loads/stores
 *     when every pointer is 16-byte aligned (decided inside the kernel), a
 *     scalar path otherwise. In-place use (output == an input) is allowed;
 *     partly overlapping ranges are not.
 * gc_mul_f32(float *z, float *x, float *y, uint64_t n)
 *     z[i] = x[i] * y[i]. Launch: block 256 (any multiple of 32 up to 1024 is
 *     correct), any grid: a grid-stride loop covers all n. float4 loads/stores
 *     when every pointer is 16-byte aligned (decided inside the kernel), a
 *     scalar path otherwise. In-place use (output == an input) is allowed;
 *     partly overlapping ranges are not.
 * gc_relu_f32(float *y, float *x, uint64_t n)
 *     y[i] = x[i] <= 0 ? +0 : x[i] (NaN propagates, as in PyTorch; bitwise
 *     equal to chain opcode RELU). Launch: block 256 (any multiple of 32 up to
 *     1024 is correct), any grid: a grid-stride loop covers all n. float4
 *     loads/stores when every pointer is 16-byte aligned (decided inside the
 *     kernel), a scalar path otherwise. In-place use (output == an input) is
 *     allowed; partly overlapping ranges are not.
 * gc_gelu_f32(float *y, float *x, uint64_t n)
 *     y[i] = gelu(x[i]), the tanh approximation (PyTorch's
 *     gelu(approximate="tanh")) computed as x / (1 + 2^(K * (x + 0.044715
 *     x^3))) with K = -2 sqrt(2/pi) log2(e): explicit roundings and
 *     ex2.approx.f32, bitwise equal to chain opcode GELU. Launch: block 256
 *     (any multiple of 32 up to 1024 is correct), any grid: a grid-stride loop
 *     covers all n. float4 loads/stores when every pointer is 16-byte aligned
 *     (decided inside the kernel), a scalar path otherwise. In-place use
 *     (output == an input) is allowed; partly overlapping ranges are not.
 * gc_relu_backward_f32(float *dx, float *dy, float *x, uint64_t n)
 *     dx[i] = x[i] > 0 ? dy[i] : 0 (x is the ReLU's input or output). Launch:
 *     block 256 (any multiple of 32 up to 1024 is correct), any grid: a
 *     grid-stride loop covers all n. float4 loads/stores when every pointer is
 *     16-byte aligned (decided inside the kernel), a scalar path otherwise.
 *     In-place use (output == an input) is allowed; partly overlapping ranges
 *     are not.
 * gc_sgd_f32(float *w, float *g, uint64_t n, float lr)
 *     w[i] = fmaf(-lr, g[i], w[i]) (SGD step, one rounding). Launch: block 256
 *     (any multiple of 32 up to 1024 is correct), any grid: a grid-stride loop
 *     covers all n. float4 loads/stores when every pointer is 16-byte aligned
 *     (decided inside the kernel), a scalar path otherwise. In-place use
 *     (output == an input) is allowed; partly overlapping ranges are not.
 * gc_bias_add_f32(float *y, float *x, float *b, uint32_t rows, uint32_t cols)
 *     y[r, c] = x[r, c] + b[c] for row-major rows x cols x and y (rows * cols
 *     < 2^32). float4 path when cols % 4 == 0 and y, x, b are 16-byte aligned.
 *     Launch: block 256, any grid (grid-stride over the flattened matrix). y
 *     == x is allowed.
 * gc_chain_f32(float *y, float *x, uint64_t n, uint32_t ops, uint32_t count, float c0, float c1, float c2, float c3, float c4, float c5, float c6, float c7)
 *     y[i] = op_{count-1}(...op_0(x[i])...), all in registers, one pass. Op k
 *     is the 4-bit opcode (ops >> 4k) & 15 with constant ck, count <= 8: 1
 *     FILL v=c, 2 MUL v=v*c, 3 ADD v=v+c, 4 RELU, 5 MAX v=max(v,c), 6 MIN
 *     v=min(v,c) (MAX/MIN propagate a NaN in v), 7 GELU; other opcodes leave v
 *     unchanged. Each opcode is bitwise equal to its standalone kernel (fill,
 *     scale, add_scalar, relu, gelu). When op 0 is FILL, x is not read and may
 *     be null; count == 0 copies. Launch: block 256 (any multiple of 32 up to
 *     1024 is correct), any grid: a grid-stride loop covers all n. float4
 *     loads/stores when every pointer is 16-byte aligned (decided inside the
 *     kernel), a scalar path otherwise. In-place use (output == an input) is
 *     allowed; partly overlapping ranges are not.
 * gc_linear_small_f32(float *y, float *x, float *w, float *b, uint32_t m, uint32_t n, uint32_t k, uint32_t flags, uint32_t config)
 *     Small-batch linear: y[i, j] = act(sum_r x[i, r] * W(r, j) + b[j]) with x
 *     m x k, y m x n (row-major), W(r, j) = w[j * k + r] (w is n x k, PyTorch
 *     layout) or, with flags bit 1, w[r * n + j] (w is k x n: y = x . w, for
 *     the input gradient). flags bit 0: ReLU. b may be null. config = LR | LC
 *     << 2 | LGR << 4 | LGC << 6: thread tile 2^LR x 2^LC (rows x columns; n x
 *     k layout 1x1, 1x2, 4x1, 4x4 or 8x4, k x n layout 1x4, 4x4 or 8x4; other
 *     tiles do nothing) and 2^LGR x 2^LGC tile groups per block (LGR + LGC <=
 *     3); the threads of a group split K. float4 loads when k % 4 == 0 and x,
 *     w are 16-byte aligned (k x n layout: also n % 4 == 0), scalar otherwise;
 *     deterministic fixed-order reduction (warp shuffles, then shared memory).
 *     Launch: block 256, grid (ceil(n / 2^(LC+LGC)), ceil(m / 2^(LR+LGR))), no
 *     dynamic shared memory. y must not overlap x, w or b.
 * gc_linear_small_rows_f32(float *y, float *x, float *w, float *b, uint32_t *rows, uint32_t max_m, uint32_t n, uint32_t k, uint32_t flags, uint32_t config)
 *     gc_linear_small_f32 with m = min(*rows, max_m), read from device memory
 *     (a u32) when the kernel runs: a count above max_m is clamped to max_m.
 *     Grid and config as gc_linear_small_f32's for max_m rows; the first m
 *     rows of y are bitwise that launch's; x is read and y written below row m
 *     only. rows must not overlap y.
 * gc_gemm_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     Tiled GEMM: C = act(alpha * op(A) . op(B) + beta * C + bias[col]), C m x
 *     n (ldc), op(A) m x k: a[i * lda + r], or a[r * lda + i] with flags bit 0
 *     (A stored k x m); op(B) k x n: b[r * ldb + j], or b[j * ldb + r] with
 *     flags bit 1 (B stored n x k). flags bit 2: ReLU. bias may be null. beta
 *     == 0: C is not read; else the result is fmaf(alpha, acc, beta * C), so
 *     alpha = -lr, beta = 1 is bitwise the SGD step on the alpha = 1, beta = 0
 *     result. Deterministic. Every rows * ld must be < 2^32. Launch: block
 *     256, 1-D grid of ceil(m / T) * ceil(n / T) blocks with T = 128 for tile
 *     0, 64 for tile 1 (each thread sums its outputs in increasing k: results
 *     do not depend on the tile), 32 for tile 2 (K split over 4 slices of the
 *     block); no dynamic shared memory. float4 loads and stores where leading
 *     dimensions are multiples of 4 and pointers 16-byte aligned. C must not
 *     overlap A, B or bias.
 * gc_gemm_wide_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     gc_gemm_f32 (same arguments and result) for the linear layer's layout
 *     only (transpose bits 2: A m x k, B n x k; other layouts do nothing), one
 *     block per SM: tile 0: 128 x 256 (rows x columns of C), tile 1: 128 x 128
 *     (both bitwise gc_gemm_f32's tiles 0 and 1), tile 2: 64 x 64 with K split
 *     over 4 slices (bitwise gc_gemm_f32's tile 2). Launch: block 256, 1-D
 *     grid of ceil(m / TM) * ceil(n / TN) blocks for the tile's TM x TN; no
 *     dynamic shared memory. C must not overlap A, B or bias.
 * gc_gemm_128x256_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     gc_gemm_wide_f32's tile 0 as a kernel of its own (same arguments, bits
 *     and launch; tile must be 0, other values do nothing): 128 x 256 tiles of
 *     C, one block per SM, with the registers that tile alone needs (faster
 *     than inside gc_gemm_wide_f32). Launch: block 256, 1-D grid of ceil(m /
 *     128) * ceil(n / 256) blocks; no dynamic shared memory. C must not
 *     overlap A, B or bias.
 * gc_gemm_mid_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     gc_gemm_f32 (same arguments, bitwise its tiles 0 and 1) for the linear
 *     layer's layout only (transpose bits 2: A m x k, B n x k; other layouts
 *     do nothing), two blocks per SM: tile 0 (the only one): 64 x 128 (rows x
 *     columns of C). Launch: block 256, 1-D grid of ceil(m / 64) * ceil(n /
 *     128) blocks; no dynamic shared memory. C must not overlap A, B or bias.
 * gc_linear_cluster_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     What gc_gemm_f32 computes (same arguments; the sums in another order)
 *     for the linear layer's layout (transpose bits 2: A m x k, B n x k) and,
 *     with tiles 0 and 2 only, the plain one (transpose bits 0: A m x k, B k x
 *     n; the input gradient dy . W); other layouts do nothing. K is split over
 *     the S blocks of a thread-block cluster (compute capability 9.0; it traps
 *     on older GPUs): block s of a cluster sums its slice of K chunks, the
 *     partial tiles are added in rank order through distributed shared memory
 *     (deterministic for a given shape and S). tile 0: 128 x 64 (rows x
 *     columns of C), tile 1: 64 x 64, tile 2: 64 x 64 with K chunks of 32
 *     instead of 16 (tile 1's products in the same order), tile 3: tile 2's
 *     products and bits with its chunks copied into shared memory by cp.async
 *     two stages deep where k, lda and ldb are multiples of 4 and a, b are
 *     16-byte aligned (tile 2 elsewhere). Launch: block 256, 1-D grid of S *
 *     ceil(m / TM) * ceil(n / TN) blocks with the cluster dimension (S, 1, 1),
 *     S from 1 to 8; no dynamic shared memory. C must not overlap A, B or
 *     bias.
 * gc_gemm_tf32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     TF32 tensor-core GEMM (compute capability 8.0 or later): C = act(alpha *
 *     A . B^T + beta * C + bias[col]) with A m x k (a[i * lda + r]) and B n x
 *     k (b[j * ldb + r]); flags as gc_gemm_f32's, whose transpose bits must be
 *     2 (B stored n x k; anything else does nothing); bias may be null; beta
 *     == 0: C is not read. A and B are rounded to TF32 (10 mantissa bits, to
 *     nearest) and multiplied with mma.sync m16n8k8, f32 sums in a fixed order
 *     (deterministic; results differ from gc_gemm_f32 by the TF32 rounding).
 *     Launch: block 256, 1-D grid of ceil(m / T) * ceil(n / T) blocks with T =
 *     128 for tile 0, 64 for tile 1; no dynamic shared memory. C must not
 *     overlap A, B or bias.
 * gc_mlp_f32(float *y, float *x, uint32_t *bar, float *act, float *w0, float *b0, float *w1, float *b1, float *w2, float *b2, float *w3, float *b3, uint32_t d01, uint32_t d23, uint32_t d4rows, uint32_t flags)
 *     Fused MLP forward, up to 4 layers in one launch: h_0 = x (rows x d0),
 *     h_{l+1} = act_l(h_l . W_l^T + b_l) (rows x d_{l+1}, W_l d_{l+1} x d_l as
 *     PyTorch stores it, b_l may be null), y = h_L. d01 = d0 | d1 << 16, d23 =
 *     d2 | d3 << 16, d4rows = d4 | rows << 16 (all below 2^16); flags bits
 *     0..3: ReLU after layer l; bits 4..6: L; bits 8 + 2 l: layer l's warp
 *     tile (0: 1 x 1, 1: 4 x 1, 2: 4 x 4, 3: 8 x 4). The grid's warps take
 *     each layer's tiles round-robin and compute them as gc_linear_small_f32's
 *     one-warp tile groups (bitwise equal to per-layer launches with those
 *     tiles and 8 groups per block). No barrier between layers: the
 *     intermediates are 64-bit tagged slots (value, launch tag) and a tile
 *     waits until the slots it reads carry this launch's tag. bar: 8 bytes, an
 *     arrival count (zero before the first launch, left zero by every launch)
 *     and the epoch (any value; each launch advances it). act: the L - 1
 *     intermediates, one after the other, each rows * d slots (8 bytes)
 *     rounded up to a multiple of 32. Launch: cooperative, block 256, any 1-D
 *     grid that is resident at once (one block per SM). y must not overlap any
 *     input or act.
 * gc_linear_mse_f32(float *grad, float *pred, float *partials, float *x, float *w, float *b, float *target, uint32_t m, uint32_t n, uint32_t k, uint32_t config, float grad_scale)
 *     Training step, launch 1 (linear layer + summed squared error): the
 *     forward pass of gc_linear_small_f32 (w n x k, no ReLU, same config and
 *     launch shape, bitwise its outputs p) with a loss epilogue: d = p -
 *     target[i, j], grad[i, j] = d * (2 * grad_scale) (bitwise gc_mse_f32's
 *     gradient), pred[i, j] = p when pred is not null, and each block's sum of
 *     d^2 (fixed order) in partials[blockIdx.y * gridDim.x + blockIdx.x],
 *     which gc_linear_sgd_f32 adds into the loss. Outputs must not overlap the
 *     inputs.
 * gc_linear_sgd_f32(float *w, float *b, float *dy, float *x, uint32_t m, uint32_t n, uint32_t k, float lr, uint32_t tile, uint32_t bias_ty, float *loss, float *partials, uint32_t parts)
 *     Training step, launch 2 (SGD of a linear layer): W (n x k) = fmaf(-lr,
 *     dy^T . x, W) and b[j] = fmaf(-lr, sum_i dy[i, j], b[j]) (b may be null)
 *     for dy m x n, x m x k, in one launch; when loss is not null, role 0
 *     writes loss[0] = the sum of partials[0 .. parts) in a fixed order
 *     (gc_linear_mse_f32's block sums). The next ceil(n / 32) roles (none when
 *     b is null) update b, bitwise gc_bias_sgd_f32 with block (32, bias_ty);
 *     the others are the output tiles of gc_gemm_f32 with tile `tile` (the
 *     fused weight-gradient SGD, bitwise; tile 3: tile 1 with the reduction,
 *     up to 64 rows, staged whole in shared memory, where n % 4 == 0, k % 4 ==
 *     0 and w, dy, x are 16-byte aligned, else tile 1; bitwise tile 1). Block
 *     b takes role b, or with bit 2 of `tile` set (4: the weight tiles handed
 *     out first) role G - 1 - b; the results do not depend on it. Launch:
 *     block 256, grid (loss ? 1 : 0) + ceil(n / 32) + ceil(n / T) * ceil(k /
 *     T) with T = 128, 64, 32, 64 for tile 0, 1, 2, 3; no dynamic shared
 *     memory. w, b and loss must not overlap dy, x or partials.
 * gc_mlp2_mse_f32(float *x, float *w1, float *b1, float *w2, float *b2, float *target, float *h, float *dp, float *dh, float *partials, uint32_t *bar, uint32_t d01, uint32_t d2m, uint32_t tiles, float grad_scale)
 *     Training step of a 2-layer MLP (ReLU hidden layer, summed squared
 *     error), launch 1: h = relu(x . W1^T + b1), then p = h . W2^T + b2 with
 *     dp = (p - target) * (2 * grad_scale) and each block's sum of (p -
 *     target)^2 in partials[blockIdx.x], then dh = h > 0 ? (dp . W2) : 0; a
 *     grid barrier (bar, 16 bytes, first 4 zero, left zero) between the
 *     phases. W1 k1 x k0, W2 k2 x k1 (PyTorch layout), x m x k0; d01 = k0 | k1
 *     << 16, d2m = k2 | m << 16 (below 2^16); tiles: bits 0-1 and 2-3 the warp
 *     tiles of the forward phases (0: 1 x 1, 1: 4 x 1, 2: 4 x 4, 3: 8 x 4),
 *     bits 4-5 the input gradient's (0: 1 x 4, 1: 4 x 4, 2: 8 x 4). Launch:
 *     cooperative, block 256, a 1-D grid of at most two blocks per SM.
 * gc_mlp2_sgd_f32(float *w1, float *b1, float *w2, float *b2, float *x, float *h, float *dp, float *dh, float *loss, float *partials, uint32_t d01, uint32_t d2m, float lr, uint32_t cfg)
 *     Training step of a 2-layer MLP, launch 2: role 0 writes loss[0] (the sum
 *     of partials[0 .. parts) in a fixed order), then layer 2's update (W2 -=
 *     lr dp^T . h, b2 -= lr colsum dp) and layer 1's (W1 -= lr dh^T . x, b1 -=
 *     lr colsum dh), each as gc_linear_sgd_f32's bias blocks and weight tiles.
 *     d01, d2m as gc_mlp2_mse_f32's; cfg: bits 0-1 layer 1's GEMM tile, bits
 *     2-3 layer 2's, bits 4-9 the column sums' TY, bit 10 roles in reverse (as
 *     gc_linear_sgd_f32's tile bit 2), bits 16-31 parts. b1 and b2 may be
 *     null. Launch: block 256, grid 1 + both layers' blocks (ceil(n / 32) bias
 *     blocks when b is not null, then ceil(n / T) * ceil(k / T) tiles).
 * gc_bias_grad_f32(float *db, float *dy, uint32_t rows, uint32_t cols)
 *     db[c] = sum over r of dy[r, c] (dy row-major rows x cols), summed in a
 *     fixed order (deterministic). Launch: block (32, TY, 1) with TY in 1..32,
 *     grid ceil(cols / 32).
 * gc_bias_sgd_f32(float *b, float *dy, uint32_t rows, uint32_t cols, float lr)
 *     b[c] = fmaf(-lr, sum over r of dy[r, c], b[c]): bitwise equal to
 *     gc_bias_grad_f32 then gc_sgd_f32 with the same block shape. Launch:
 *     block (32, TY, 1) with TY in 1..32, grid ceil(cols / 32).
 * gc_mse_f32(float *loss, float *grad, float *pred, float *target, uint64_t n, float grad_scale, void *workspace)
 *     loss[0] = sum_i (pred[i] - target[i])^2 (PyTorch's (y_pred -
 *     y).pow(2).sum()); when grad is not null, grad[i] = (pred[i] - target[i])
 *     * (2 * grad_scale). Deterministic: per-block partial sums in workspace,
 *     added in a fixed order by the last block to finish. workspace: a u32
 *     counter at byte 0 that must be zero before the first launch (the kernel
 *     leaves it zero, so replays work), partial sums from byte 16: at least 16
 *     + 4 * gridDim.x bytes. Launch: block 256, any grid. grad may equal pred
 *     or target.
 * gc_mse_scaled_f32(float *loss, float *grad, float *pred, float *target, uint64_t n, float grad_scale, float loss_scale, void *workspace)
 *     gc_mse_f32 with loss[0] = (sum_i (pred[i] - target[i])^2) * loss_scale,
 *     one float multiply rounded to nearest: loss_scale 1.0f / n is the mean
 *     as PyTorch's CUDA mean computes it (nn.MSELoss()). grad, workspace and
 *     launch as gc_mse_f32's.
 * gc_cond_set_u32(uint64_t handle, uint32_t *value)
 *     Sets conditional handle `handle` to *value (a u32 in device memory; for
 *     SWITCH the case index). Needs CUDA 12.3 and libcudadevrt (see
 *     gc_graph_conditional_handle_create). Launch: grid 1, block 1.
 * gc_cond_count(uint64_t handle, uint32_t *counter, uint32_t limit)
 *     *counter += 1, then sets `handle` to (*counter < limit): before a WHILE
 *     node (counter zeroed) and at the end of its body, the body runs at most
 *     `limit` times. Launch: grid 1, block 1.
 * gc_cond_set_f32(uint64_t handle, float *x, float threshold, uint32_t cmp, uint32_t *counter, uint32_t limit)
 *     Sets `handle` to (*x cmp threshold), cmp 0: <, 1: <=, 2: >, 3: >= (NaN
 *     compares false); when counter is not null, also *counter += 1 and the
 *     value is 0 once *counter >= limit (a WHILE's iteration cap). Launch:
 *     grid 1, block 1.
 * gc_cond_set_bucket(uint64_t handle, uint32_t *rows, uint32_t *sizes, uint32_t count)
 *     Sets `handle` to the first i < count with sizes[i] >= *rows (sizes
 *     ascending: a runner's bucket sizes), or count when none fits: the SWITCH
 *     case of the bucket for a row count held in device memory. Launch: grid
 *     1, block 1.
 */

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* GRAPHCORE_OPS_H */
