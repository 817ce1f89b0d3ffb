// reduce.cu: deterministic reductions - bias gradient (+ fused SGD) and the
// MSE loss with its gradient.
//
// No float atomics anywhere: every sum is taken in an order fixed by the
// launch configuration alone, so a replay with the same sizes (and the same
// pointer alignment) gives the same bits.
#include "common.cuh"

// ---------------------------------------------------------------------------
// Column sums (gc_column_sum in common.cuh) with block (32, TY): thread
// (tx, ty) is lane tx of virtual row ty, one virtual row per thread row.
// Launch: grid.x = ceil(cols / 32).
__device__ __forceinline__ float gc_column_sum_block(const float *dy, u32 rows, u32 cols, u32 c, bool &owner) {
    __shared__ float part[32][33];
    return gc_column_sum(dy, rows, cols, c, threadIdx.x, threadIdx.y, blockDim.y, blockDim.y, part, owner);
}

// db[c] = sum over r of dy[r, c].
extern "C" __global__ void __launch_bounds__(1024) gc_bias_grad_f32(float *db, const float *dy, u32 rows, u32 cols) {
    GC_PDL_WAIT();
    const u32 c = blockIdx.x * 32 + threadIdx.x;
    bool owner;
    const float s = gc_column_sum_block(dy, rows, cols, c, owner);
    GC_PDL_TRIGGER();
    if (owner) db[c] = s;
}

// b[c] = fmaf(-lr, sum over r of dy[r, c], b[c]): bitwise equal to
// gc_bias_grad_f32 followed by gc_sgd_f32, without materialising db.
extern "C" __global__ void __launch_bounds__(1024)
    gc_bias_sgd_f32(float *b, const float *dy, u32 rows, u32 cols, float lr) {
    GC_PDL_WAIT();
    const u32 c = blockIdx.x * 32 + threadIdx.x;
    bool owner;
    const float s = gc_column_sum_block(dy, rows, cols, c, owner);
    GC_PDL_TRIGGER();
    if (owner) b[c] = fmaf(-lr, s, b[c]);
}

// ---------------------------------------------------------------------------
// MSE: loss[0] = sum_i (pred[i] - target[i])^2 (PyTorch's
// `(y_pred - y).pow(2).sum()`), and, when grad is not null,
// grad[i] = (pred[i] - target[i]) * (2 * grad_scale).
//
// Thread mapping: a grid-stride loop as in elementwise.cu (float4 when pred,
// target and grad are 16-byte aligned, scalar tail handled by threads
// 0..n%4-1). Each thread accumulates d*d with fmaf in its own fixed order; the
// block reduces its 256 partial sums with a fixed butterfly (warp shuffles)
// and then warp sums 0..7 in order; thread 0 stores the block's sum in
// partials[blockIdx.x].
//
// workspace layout: u32 counter at byte 0 (must be 0 before the first launch,
// e.g. memset once; every launch leaves it 0 again), the partial sums as
// floats from byte 16, one per block. The last block to arrive (atomic
// increment of the counter, after a __threadfence) adds the partials in a
// fixed order (thread t takes t, t + 256, ... in order, then the same block
// reduction), writes loss[0] and resets the counter, so the kernel can be
// replayed. Launch: block 256, any grid; workspace >= 16 + 4 * gridDim.x bytes.
//
// gc_mse_scaled_f32 is the same kernel with loss[0] = sum * loss_scale (one
// float multiply of the fixed-order sum, round to nearest): loss_scale
// 1.0f / n is the mean as PyTorch's CUDA mean computes it (the sum times
// the float reciprocal of the element count); gc_mse_f32 stores the sum
// unscaled.

template <bool SCALED>
__device__ __forceinline__ void gc_mse_body(float *loss, float *grad, const float *pred, const float *target, u64 n,
                                            float grad_scale, float loss_scale, void *workspace) {
    const u64 tid = gc_tid(), stride = gc_stride();
    const float g2 = 2.0f * grad_scale;
    const bool has_grad = grad != nullptr;
    float acc = 0.0f;
    if (gc_aligned16(pred, target) && (!has_grad || gc_aligned16(grad))) {
        const u64 nv = n >> 2;
        const float4 *p4 = reinterpret_cast<const float4 *>(pred);
        const float4 *t4 = reinterpret_cast<const float4 *>(target);
        float4 *g4 = reinterpret_cast<float4 *>(grad);
        for (u64 i = tid; i < nv; i += stride) {
            const float4 p = p4[i], t = t4[i];
            const float4 d = make_float4(__fsub_rn(p.x, t.x), __fsub_rn(p.y, t.y), __fsub_rn(p.z, t.z),
                                         __fsub_rn(p.w, t.w));
            acc = fmaf(d.x, d.x, acc);
            acc = fmaf(d.y, d.y, acc);
            acc = fmaf(d.z, d.z, acc);
            acc = fmaf(d.w, d.w, acc);
            if (has_grad)
                g4[i] = make_float4(__fmul_rn(d.x, g2), __fmul_rn(d.y, g2), __fmul_rn(d.z, g2), __fmul_rn(d.w, g2));
        }
        const u64 i = (nv << 2) + tid;
        if (i < n) {
            const float d = __fsub_rn(pred[i], target[i]);
            acc = fmaf(d, d, acc);
            if (has_grad) grad[i] = __fmul_rn(d, g2);
        }
    } else {
        for (u64 i = tid; i < n; i += stride) {
            const float d = __fsub_rn(pred[i], target[i]);
            acc = fmaf(d, d, acc);
            if (has_grad) grad[i] = __fmul_rn(d, g2);
        }
    }

    GC_PDL_TRIGGER();
    float total;
    if (gc_grid_sum(gc_block_sum(acc), workspace, blockIdx.x, gridDim.x, total) && threadIdx.x == 0)
        loss[0] = SCALED ? __fmul_rn(total, loss_scale) : total;
}

extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_mse_f32(float *loss, float *grad, const float *pred, const float *target, u64 n, float grad_scale,
               void *workspace) {
    GC_PDL_WAIT();
    gc_mse_body<false>(loss, grad, pred, target, n, grad_scale, 1.0f, workspace);
}

extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_mse_scaled_f32(float *loss, float *grad, const float *pred, const float *target, u64 n, float grad_scale,
                      float loss_scale, void *workspace) {
    GC_PDL_WAIT();
    gc_mse_body<true>(loss, grad, pred, target, n, grad_scale, loss_scale, workspace);
}
