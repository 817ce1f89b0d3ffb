// reduce.cu: deterministic reductions - bias gradient (+ fused SGD) and the
// MSE loss with its gradient.
//
// No float atomics anywhere: every sum is taken in an order fixed by the
// launch configuration alone, so a replay with the same sizes (and the same
// pointer alignment) gives the same bits.
#include "common.cuh"

// ---------------------------------------------------------------------------
// Column sums of a row-major rows x cols matrix dy (rows * cols < 2^32).
//
// Thread mapping: block (32, TY) with TY = blockDim.y in 1..32; the block owns
// the 32 columns c = 32 * blockIdx.x + threadIdx.x (lanes of a warp read 32
// consecutive floats of one row: coalesced). Thread (tx, ty) sums rows
// ty, ty + TY, ty + 2 TY, ... of its column in increasing order into a
// register; then thread (tx, 0) adds the TY partial sums in order ty = 0, 1,
// ..., TY - 1 through shared memory. Launch: grid.x = ceil(cols / 32).
__device__ __forceinline__ float gc_column_sum(const float *dy, u32 rows, u32 cols, u32 c, bool &owner) {
    __shared__ float part[32][33];
    const u32 tx = threadIdx.x, ty = threadIdx.y, ny = blockDim.y;
    float s = 0.0f;
    if (c < cols) {
        const float *p = dy + c;
        u32 r = ty;
        // Four independent loads in flight per iteration; the adds stay in row order.
        for (; r + 3 * ny < rows; r += 4 * ny) {
            const float a = p[(u64)r * cols], b = p[(u64)(r + ny) * cols];
            const float d = p[(u64)(r + 2 * ny) * cols], e = p[(u64)(r + 3 * ny) * cols];
            s = __fadd_rn(s, a);
            s = __fadd_rn(s, b);
            s = __fadd_rn(s, d);
            s = __fadd_rn(s, e);
        }
        for (; r < rows; r += ny) s = __fadd_rn(s, p[(u64)r * cols]);
    }
    part[ty][tx] = s;
    __syncthreads();
    owner = (ty == 0) && (c < cols);
    if (!owner) return 0.0f;
    float t = part[0][tx];
    for (u32 k = 1; k < ny; ++k) t = __fadd_rn(t, part[k][tx]);
    return t;
}

// db[c] = sum over r of dy[r, c].
extern "C" __global__ void __launch_bounds__(1024) gc_bias_grad_f32(float *db, const float *dy, u32 rows, u32 cols) {
    const u32 c = blockIdx.x * 32 + threadIdx.x;
    bool owner;
    const float s = gc_column_sum(dy, rows, cols, c, owner);
    if (owner) db[c] = s;
}

// b[c] = fmaf(-lr, sum over r of dy[r, c], b[c]): bitwise equal to
// gc_bias_grad_f32 followed by gc_sgd_f32, without materialising db.
extern "C" __global__ void __launch_bounds__(1024)
    gc_bias_sgd_f32(float *b, const float *dy, u32 rows, u32 cols, float lr) {
    const u32 c = blockIdx.x * 32 + threadIdx.x;
    bool owner;
    const float s = gc_column_sum(dy, rows, cols, c, owner);
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

// Sum of v over the block (256 threads), in a fixed order; valid in thread 0.
__device__ __forceinline__ float gc_block_sum(float v) {
    __shared__ float warp_sums[GC_BLOCK / 32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    float t = 0.0f;
    if (threadIdx.x == 0) {
        t = warp_sums[0];
        for (u32 w = 1; w < blockDim.x / 32; ++w) t = __fadd_rn(t, warp_sums[w]);
    }
    __syncthreads();  // warp_sums may be reused by a later call
    return t;
}

extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_mse_f32(float *loss, float *grad, const float *pred, const float *target, u64 n, float grad_scale,
               void *workspace) {
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

    u32 *counter = reinterpret_cast<u32 *>(workspace);
    float *partials = reinterpret_cast<float *>(reinterpret_cast<char *>(workspace) + 16);
    __shared__ bool last;
    const float block = gc_block_sum(acc);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = block;
        __threadfence();  // the partial is visible before the counter moves
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    const volatile float *vp = partials;  // bypass L1: other blocks wrote these
    float s = 0.0f;
    for (u32 b = threadIdx.x; b < gridDim.x; b += blockDim.x) s = __fadd_rn(s, vp[b]);
    const float total = gc_block_sum(s);
    if (threadIdx.x == 0) {
        loss[0] = total;
        *counter = 0u;  // ready for the next launch / graph replay
    }
}
