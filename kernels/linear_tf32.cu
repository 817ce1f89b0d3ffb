// linear_tf32.cu: the opt-in TF32 tensor-core GEMM (sm_80 and later).
//
// gen_ptx: compute_80
//
// This module is compiled for compute_80 (mma.sync with TF32 operands and
// cvt.rna.tf32.f32 need it) and loaded only on GPUs of compute capability
// 8.0 or later; the launcher falls back to gc_gemm_f32 (linear.cu) on older
// ones.
//
// ===========================================================================
// gc_gemm_tf32(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, tile)
//
//   C = act(alpha * A . B^T + beta * C + bias[col])     C m x n (ldc)
//
// A is m x k (a[i * lda + r]) and B is n x k (b[j * ldb + r]): both rows
// contiguous along k, as the linear layer's x and PyTorch-layout W are.
// flags: GC_GEMM_RELU (4) only (bits 0 and 1, the transposes of
// gc_gemm_f32, must be 0 and 2: the kernel does nothing otherwise). bias may
// be null; beta == 0: C is not read. Every element of A and B is rounded to
// TF32 (cvt.rna: to nearest, ties away from zero, 10 mantissa bits) once, as
// it is staged in shared memory; products and sums are f32 in the tensor
// cores (mma.sync m16n8k8), in an order fixed by the tile (deterministic,
// but not the bits of gc_gemm_f32: results differ from f32 by the TF32
// rounding of the operands, about 2^-11 relative per product).
//
// tile 0: block tile 128 x 128, K chunks of 16, 8 warps as 2 x 4 (warp tile
// 64 x 32); tile 1: 64 x 64, K chunks of 32, 8 warps as 2 x 4 (32 x 16).
// Launch: block 256, 1-D grid of ceil(m / T) * ceil(n / T) blocks (T the
// tile's edge), no dynamic shared memory. float4 loads where lda (ldb) is a
// multiple of 4 and a (b) 16-byte aligned, scalar otherwise; float2 stores
// where ldc is even and c 8-byte aligned. C must not overlap A, B or bias.
// ===========================================================================
#include "common.cuh"

#define GC_TF32_THREADS 256
#define GC_TF32_RELU 4u
#define GC_TF32_LAYOUT 3u  // transpose bits: must be 2 (A m x k, B n x k)
// Shared memory (words): two stages of A and B, rows of BK + 4: tile 0
// 2 x 256 x 20, tile 1 2 x 128 x 36.
#define GC_TF32_SMEM (2 * 256 * 20)

// f32 -> TF32 (round to nearest, ties away), as the bits mma.sync reads.
__device__ __forceinline__ u32 gc_tf32(float v) {
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

// d += a . b for one m16n8k8 TF32 tile (PTX fragment layouts).
__device__ __forceinline__ void gc_mma_tf32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// 32-bit load from shared memory (an ordinary load; see gc_lds4 for why
// the 16-byte accesses are inline PTX).
__device__ __forceinline__ u32 gc_lds1(const u32 *p) { return *p; }

// Four consecutive floats of a row along k (r..r+3 of lim), zero past the
// edge or when the row is out of range: a float4 load when `vec` allows.
__device__ __forceinline__ float4 gc_tf32_load4(const float *p, bool in, bool vec, u32 r, u32 lim) {
    if (in && vec && r + 3 < lim) return __ldg(reinterpret_cast<const float4 *>(p));
    float4 v;
    v.x = in && r < lim ? __ldg(p) : 0.0f;
    v.y = in && r + 1 < lim ? __ldg(p + 1) : 0.0f;
    v.z = in && r + 2 < lim ? __ldg(p + 2) : 0.0f;
    v.w = in && r + 3 < lim ? __ldg(p + 3) : 0.0f;
    return v;
}

// Epilogue for one output: alpha acc (+ beta c) (+ bias) (ReLU), as gc_gemm_f32's.
__device__ __forceinline__ float gc_tf32_out(float acc, float alpha, float beta, float cold, const float *bias, u32 j,
                                             bool relu) {
    float v = beta == 0.0f ? __fmul_rn(alpha, acc) : fmaf(alpha, acc, __fmul_rn(beta, cold));
    if (bias != nullptr) v = __fadd_rn(v, __ldg(bias + j));
    return relu ? ((v <= 0.0f) ? 0.0f : v) : v;
}

template <int BM, int BN, int BK, int WM, int WN>
__device__ __forceinline__ void gc_tf32_tile(float *cmat, const float *a, const float *bm, const float *bias, u32 m,
                                             u32 n, u32 k, u32 lda, u32 ldb, u32 ldc, u32 flags, float alpha,
                                             float beta, u32 *smem, u32 blk) {
    constexpr int NT = GC_TF32_THREADS, L = BK + 4;
    constexpr int WTM = BM / WM, WTN = BN / WN;  // warp tile
    constexpr int MT = WTM / 16, NTL = WTN / 8;  // mma tiles per warp
    constexpr int KQ = BK / 4;                   // float4 groups per row
    constexpr int A4 = BM * KQ / NT, B4 = BN * KQ / NT;
    static_assert(WM * WN * 32 == NT, "8 warps");
    static_assert(A4 >= 1 && B4 >= 1 && MT >= 1 && NTL >= 1, "tile shape");
    u32 *As = smem;               // [2][BM][L]
    u32 *Bs = smem + 2 * BM * L;  // [2][BN][L]

    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const u32 g = lane >> 2, t = lane & 3u;
    const u32 wm = warp / WN, wn = warp % WN;
    const u32 tiles_n = (n + BN - 1) / BN;
    const u32 i0 = (blk / tiles_n) * BM, j0 = (blk % tiles_n) * BN;
    const bool va = (lda & 3) == 0 && gc_aligned16(a), vb = (ldb & 3) == 0 && gc_aligned16(bm);

    float4 ra[A4], rb[B4];
    auto fetch = [&](u32 r0) {
#pragma unroll
        for (int q = 0; q < A4; ++q) {
            const u32 e = tid + NT * q, gi = i0 + e / KQ, gr = r0 + 4 * (e % KQ);
            ra[q] = gc_tf32_load4(a + gi * lda + gr, gi < m, va, gr, k);
        }
#pragma unroll
        for (int q = 0; q < B4; ++q) {
            const u32 e = tid + NT * q, gj = j0 + e / KQ, gr = r0 + 4 * (e % KQ);
            rb[q] = gc_tf32_load4(bm + gj * ldb + gr, gj < n, vb, gr, k);
        }
    };
    auto put = [&](u32 *p, float4 v) {
        float4 w;
        w.x = __uint_as_float(gc_tf32(v.x));
        w.y = __uint_as_float(gc_tf32(v.y));
        w.z = __uint_as_float(gc_tf32(v.z));
        w.w = __uint_as_float(gc_tf32(v.w));
        gc_sts4(reinterpret_cast<float *>(p), w);
    };
    auto stage = [&](u32 buf) {
        u32 *as = As + buf * BM * L, *bs = Bs + buf * BN * L;
#pragma unroll
        for (int q = 0; q < A4; ++q) {
            const u32 e = tid + NT * q;
            put(as + (e / KQ) * L + 4 * (e % KQ), ra[q]);
        }
#pragma unroll
        for (int q = 0; q < B4; ++q) {
            const u32 e = tid + NT * q;
            put(bs + (e / KQ) * L + 4 * (e % KQ), rb[q]);
        }
    };

    float acc[MT][NTL][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NTL; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    const u32 chunks = (k + BK - 1) / BK;
    fetch(0);
    stage(0);
    __syncthreads();
    for (u32 ch = 0; ch < chunks; ++ch) {
        const u32 buf = ch & 1u;
        if (ch + 1 < chunks) fetch((ch + 1) * BK);
        const u32 *as = As + buf * BM * L + (wm * WTM + g) * L + t;
        const u32 *bs = Bs + buf * BN * L + (wn * WTN + g) * L + t;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            u32 af[MT][4], bf[NTL][2];
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                const u32 *p = as + i * 16 * L + kk;
                af[i][0] = gc_lds1(p);
                af[i][1] = gc_lds1(p + 8 * L);
                af[i][2] = gc_lds1(p + 4);
                af[i][3] = gc_lds1(p + 8 * L + 4);
            }
#pragma unroll
            for (int j = 0; j < NTL; ++j) {
                const u32 *p = bs + j * 8 * L + kk;
                bf[j][0] = gc_lds1(p);
                bf[j][1] = gc_lds1(p + 4);
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NTL; ++j) gc_mma_tf32(acc[i][j], af[i], bf[j]);
        }
        if (ch + 1 < chunks) stage(buf ^ 1u);
        __syncthreads();
    }
    GC_PDL_TRIGGER();

    const bool relu = flags & GC_TF32_RELU;
    const bool v2 = (ldc & 1) == 0 && ((u64)cmat & 7) == 0;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const u32 gi = i0 + wm * WTM + i * 16 + g + 8 * h;
            if (gi >= m) continue;
#pragma unroll
            for (int j = 0; j < NTL; ++j) {
                const u32 gj = j0 + wn * WTN + j * 8 + 2 * t;
                float *p = cmat + gi * ldc + gj;
                const float s0 = acc[i][j][2 * h], s1 = acc[i][j][2 * h + 1];
                if (v2 && gj + 1 < n) {
                    float2 old = make_float2(0.0f, 0.0f);
                    if (beta != 0.0f) old = *reinterpret_cast<const float2 *>(p);
                    float2 o;
                    o.x = gc_tf32_out(s0, alpha, beta, old.x, bias, gj, relu);
                    o.y = gc_tf32_out(s1, alpha, beta, old.y, bias, gj + 1, relu);
                    *reinterpret_cast<float2 *>(p) = o;
                } else {
                    if (gj < n) p[0] = gc_tf32_out(s0, alpha, beta, beta != 0.0f ? p[0] : 0.0f, bias, gj, relu);
                    if (gj + 1 < n) p[1] = gc_tf32_out(s1, alpha, beta, beta != 0.0f ? p[1] : 0.0f, bias, gj + 1, relu);
                }
            }
        }
}

// At most 128 registers (2 blocks per SM).
extern "C" __global__ void __launch_bounds__(GC_TF32_THREADS, 2)
    gc_gemm_tf32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k, u32 lda,
                 u32 ldb, u32 ldc, u32 flags, float alpha, float beta, u32 tile) {
    GC_PDL_WAIT();
    __shared__ __align__(16) u32 smem[GC_TF32_SMEM];
    if (m == 0 || n == 0 || k == 0 || (flags & GC_TF32_LAYOUT) != 2u) return;
    if (tile == 0)
        gc_tf32_tile<128, 128, 16, 2, 4>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem,
                                         blockIdx.x);
    else if (tile == 1)
        gc_tf32_tile<64, 64, 32, 2, 4>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem, blockIdx.x);
}
