// common.cuh: helpers shared by graphcore's built-in kernels.
//
// gen_ptx.py hands every kernels/*.cuh to NVRTC as an in-memory header, so a
// .cu file includes it as "common.cuh"; no CUDA toolkit headers are used.
//
// Rounding: every arithmetic operation that a fused kernel must reproduce
// bit for bit (scale, add_scalar, relu, ... and the chain kernel's opcodes) is
// written with an explicit rounding intrinsic (__fmul_rn, __fadd_rn, fmaf) or
// a comparison, so the compiler can never contract a multiply and an add into
// an FMA in one kernel and not in another.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

// Programmatic dependent launch (sm_90; the compute_90 PTX, kernels/ptx/sm90/).
// core launches the built-in kernels with the programmatic stream
// serialization attribute on GPUs of compute capability 9.0 or later (CUDA
// 12.3 drivers; GC_PDL=0 turns it off), so a kernel may start while the one
// before it on the stream is still running. GC_PDL_WAIT() blocks until every
// kernel it depends on has completed and its writes are visible: every
// built-in kernel runs it first, before any global load or store (index math
// and L2 prefetches may come before), and in every block, before any early
// return: a grid that exits without waiting would let a kernel that depends
// on it start before the kernels it depends on itself are done.
// GC_PDL_TRIGGER() lets the next kernel start launching (its blocks then wait
// in GC_PDL_WAIT for this whole grid to finish): the kernels trigger once
// their main loop is done, not at the start, so waiting blocks do not take
// SM slots this grid still needs. A grid that never triggers does so when it
// exits. Both are empty below sm_90 (the compute_75 PTX) and in the CPU
// emulation.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GC_PDL_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define GC_PDL_TRIGGER() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define GC_PDL_WAIT() ((void)0)
#define GC_PDL_TRIGGER() ((void)0)
#endif

// Prefetches [p, p + bytes) into L2, one 128-byte line per thread of the
// block at a time (a hint: safe before GC_PDL_WAIT for inputs no kernel
// before this one writes, such as weights). sm_90 only (empty elsewhere).
__device__ __forceinline__ void gc_prefetch_l2(const void *p, u64 bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const char *c = reinterpret_cast<const char *>(p);
    for (u64 o = (u64)threadIdx.x * 128; o < bytes; o += (u64)blockDim.x * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(c + o));
#else
    (void)p;
    (void)bytes;
#endif
}

// Threads per block of the elementwise and reduction kernels.
#define GC_BLOCK 256

// ReLU that propagates NaN (as PyTorch's relu does) and maps -0 to +0:
// v <= 0 -> +0, v > 0 -> v, NaN -> NaN.
__device__ __forceinline__ float gc_relu(float v) { return (v <= 0.0f) ? 0.0f : v; }

// max(v, c) / min(v, c) as clamps that propagate a NaN in v (like PyTorch's
// clamp_min / clamp_max). gc_max(v, 0) is bitwise gc_relu(v).
__device__ __forceinline__ float gc_max(float v, float c) { return (v <= c) ? c : v; }
__device__ __forceinline__ float gc_min(float v, float c) { return (v >= c) ? c : v; }

// True when every address is a multiple of 16 bytes (float4 access allowed).
__device__ __forceinline__ bool gc_aligned16(const void *a) { return ((u64)a & 15) == 0; }
__device__ __forceinline__ bool gc_aligned16(const void *a, const void *b) {
    return (((u64)a | (u64)b) & 15) == 0;
}
__device__ __forceinline__ bool gc_aligned16(const void *a, const void *b, const void *c) {
    return (((u64)a | (u64)b | (u64)c) & 15) == 0;
}

// Global thread index and grid stride for grid-stride loops (64-bit).
__device__ __forceinline__ u64 gc_tid() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 gc_stride() { return (u64)gridDim.x * blockDim.x; }

// 16-byte load from shared memory as one ld.shared.v4.f32. Written as inline
// PTX because NVVM 12.0's load vectorizer is not deterministic on plain
// float4 reads of shared memory here (it sometimes adds a redundant
// ld.shared.v2), which would make the generated PTX differ from run to run.
// `volatile` + "memory": never moved across barriers or other memory accesses.
__device__ __forceinline__ float4 gc_lds4(const float *p) {
#ifdef __CUDA_ARCH__
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"((u32)__cvta_generic_to_shared(p))
                 : "memory");
    return v;
#else
    return *reinterpret_cast<const float4 *>(p);  // CPU emulation (kernels/emu)
#endif
}

// 16-byte store to shared memory as one st.shared.v4.f32 (see gc_lds4).
__device__ __forceinline__ void gc_sts4(float *p, float4 v) {
#ifdef __CUDA_ARCH__
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"((u32)__cvta_generic_to_shared(p)), "f"(v.x),
                 "f"(v.y), "f"(v.z), "f"(v.w)
                 : "memory");
#else
    *reinterpret_cast<float4 *>(p) = v;  // CPU emulation (kernels/emu)
#endif
}

// ---------------------------------------------------------------------------
// Deterministic reductions shared by reduce.cu and linear.cu (no float
// atomics: every sum is taken in an order fixed by the launch shape).

// Sum of v over a 1-D block of 256 threads, in a fixed order (a butterfly of
// warp shuffles, then warp sums 0..7 in order); valid in thread 0. Every
// thread of the block must call it.
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

// Sum over the blocks of a launch of `block` (each block's sum, valid in its
// thread 0), in a fixed order, with no float atomics: thread 0 stores the
// block's sum in the partials and counts the block in; the last block to
// arrive adds the partials in order (thread t takes t, t + 256, ... , then
// gc_block_sum) and resets the counter for the next launch or replay.
// Returns true in every thread of that last block, with the sum in `total`
// in its thread 0; false elsewhere. Every thread of every block must call it.
//
// workspace: a u32 counter at byte 0 (zero before the first launch; left
// zero), then one float per block from byte 16 (block index bid < nblocks).
__device__ __forceinline__ bool gc_grid_sum(float block, void *workspace, u32 bid, u32 nblocks, float &total) {
    u32 *counter = reinterpret_cast<u32 *>(workspace);
    float *partials = reinterpret_cast<float *>(reinterpret_cast<char *>(workspace) + 16);
    __shared__ bool last;
    if (threadIdx.x == 0) {
        partials[bid] = block;
        __threadfence();  // the partial is visible before the counter moves
        last = atomicAdd(counter, 1u) == nblocks - 1;
    }
    __syncthreads();
    if (!last) return false;
    __threadfence();
    const volatile float *vp = partials;  // bypass L1: other blocks wrote these
    float s = 0.0f;
    for (u32 b = threadIdx.x; b < nblocks; b += blockDim.x) s = __fadd_rn(s, vp[b]);
    total = gc_block_sum(s);
    if (threadIdx.x == 0) *counter = 0u;  // ready for the next launch / graph replay
    return true;
}

// Column sum of a row-major rows x cols matrix dy (rows * cols < 2^32) for
// column c, in the order of a (32, TY) thread block: virtual thread row v
// (0 <= v < TY <= 32) sums rows v, v + TY, v + 2 TY, ... in increasing order,
// then the TY partial sums are added in order v = 0, 1, ..., TY - 1. The
// result depends on TY only, not on how the virtual rows map onto threads:
// the caller's thread row `ty` (of `ny` thread rows, lane `tx` of the 32
// columns) takes virtual rows ty, ty + ny, ... < TY. part: 32 x 33 floats of
// shared memory. Returns the sum in the owner thread (ty == 0, c < cols:
// `owner` set), 0 elsewhere. Every thread of the block must call it.
__device__ __forceinline__ float gc_column_sum(const float *dy, u32 rows, u32 cols, u32 c, u32 tx, u32 ty, u32 ny,
                                               u32 TY, float (*part)[33], bool &owner) {
    for (u32 v = ty; v < TY; v += ny) {
        float s = 0.0f;
        if (c < cols) {
            const float *p = dy + c;
            u32 r = v;
            // Four independent loads in flight per iteration; the adds stay in row order.
            for (; r + 3 * TY < rows; r += 4 * TY) {
                const float a = p[(u64)r * cols], b = p[(u64)(r + TY) * cols];
                const float d = p[(u64)(r + 2 * TY) * cols], e = p[(u64)(r + 3 * TY) * cols];
                s = __fadd_rn(s, a);
                s = __fadd_rn(s, b);
                s = __fadd_rn(s, d);
                s = __fadd_rn(s, e);
            }
            for (; r < rows; r += TY) s = __fadd_rn(s, p[(u64)r * cols]);
        }
        part[v][tx] = s;
    }
    __syncthreads();
    owner = (ty == 0) && (c < cols);
    if (!owner) return 0.0f;
    float t = part[0][tx];
    for (u32 k = 1; k < TY; ++k) t = __fadd_rn(t, part[k][tx]);
    return t;
}
