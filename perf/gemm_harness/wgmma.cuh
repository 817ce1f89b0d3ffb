// Hopper warpgroup MMA (wgmma, sm_90a) in 3xTF32 for the benches' CUDA
// harnesses (wgmma_small.cu, wgmma_update.cu): f32 operands split as
// hi = tf32(v), lo = tf32(v - hi) into K-major shared-memory tiles with the
// 128-byte swizzle, their descriptors, and `wgmma` m64nNk8 tf32 with f32
// accumulators (N = 8, 16, 32, 64). Include after linear.cu (u32, u64).
#pragma once

__device__ __forceinline__ float tf32_rna(float v) {
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return __uint_as_float(r);
}

// Byte offset of the 16-byte chunk q (K offset 4 q) of row r in a K-major tile
// of R rows (R % 8 == 0) with the 128-byte swizzle: 32-float K atoms one
// after the other, each R rows of 128 bytes, chunk c of row r at c ^ (r % 8).
__device__ __forceinline__ u32 swz(u32 r, u32 q, u32 R) {
    return (q >> 3) * R * 128 + r * 128 + (((q & 7) ^ (r & 7)) << 4);
}

// Descriptor of K step s (8 wide) of such a tile at shared address `base`
// (1024-byte aligned): start, LBO 16 (unused when swizzled), SBO 1024 (8 rows
// of 128 bytes), 128-byte swizzle.
__device__ __forceinline__ u64 desc(u32 base, u32 s, u32 R) {
    const u32 a = base + (s >> 2) * R * 128 + (s & 3) * 32;
    return (u64)((a & 0x3FFFF) >> 4) | ((u64)1 << 16) | ((u64)(1024 >> 4) << 32) | ((u64)1 << 62);
}

// D += A . B^T for one 8-wide K step: A 64 x 8 and B N x 8, both K-major in
// shared memory (descriptors a, b); d is this thread's N / 2 accumulators
// (row 16 warp + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) (+ 1)).
template <int N> struct Mma;
template <> struct Mma<8> {
    static __device__ __forceinline__ void run(float (&d)[4], u64 a, u64 b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0,%1,%2,%3}, %4, %5, p, 1, 1;\n}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "l"(a), "l"(b), "r"(1));
    }
};
template <> struct Mma<16> {
    static __device__ __forceinline__ void run(float (&d)[8], u64 a, u64 b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1;\n}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                     : "l"(a), "l"(b), "r"(1));
    }
};
template <> struct Mma<32> {
    static __device__ __forceinline__ void run(float (&d)[16], u64 a, u64 b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1;\n}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                     : "l"(a), "l"(b), "r"(1));
    }
};
template <> struct Mma<64> {
    static __device__ __forceinline__ void run(float (&d)[32], u64 a, u64 b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1;\n}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(a), "l"(b), "r"(1));
    }
};

// Splits v into hi and lo and stores them at byte offset o of the hi and lo tiles.
__device__ __forceinline__ void put(char *hi, char *lo, u32 o, float4 v) {
    float4 h = make_float4(tf32_rna(v.x), tf32_rna(v.y), tf32_rna(v.z), tf32_rna(v.w));
    float4 l = make_float4(tf32_rna(v.x - h.x), tf32_rna(v.y - h.y), tf32_rna(v.z - h.z), tf32_rna(v.w - h.w));
    *reinterpret_cast<float4 *>(hi + o) = h;
    *reinterpret_cast<float4 *>(lo + o) = l;
}

// Splits v and stores hi and lo as one float each at byte offset o.
__device__ __forceinline__ void put1(char *hi, char *lo, u32 o, float v) {
    const float h = tf32_rna(v);
    *reinterpret_cast<float *>(hi + o) = h;
    *reinterpret_cast<float *>(lo + o) = tf32_rna(v - h);
}
