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
