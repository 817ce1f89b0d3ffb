// linear.cu: linear layers and GEMM.
//
//   gc_linear_small_f32  y = x . W^T (+ b) (ReLU), or y = x . W, for M <= 64
//                        rows: reads W once, spread over every SM.
//   gc_gemm_f32          C = alpha op(A) op(B) + beta C (+ bias[col]) (ReLU),
//                        any M, N, K, transposes and leading dimensions.
//
// Both are deterministic: every output is a sum taken in an order fixed by the
// sizes and launch parameters (no atomics). Matrices are row-major f32; every
// index (row * ld + col) must be below 2^32, which the launcher checks.
#include "common.cuh"

// ===========================================================================
// gc_linear_small_f32(y, x, w, b, m, n, k, flags, cols_per_block)
//
//   y[i, j] = act( sum_r x[i, r] * W(r, j) + b[j] ),  i < m <= 64, j < n, r < k
//   W(r, j) = w[j * k + r]   flags bit 1 clear: w is n x k (PyTorch weight);
//           = w[r * n + j]   flags bit 1 set:   w is k x n (y = x . w, as the
//                            input gradient dx = dy . W needs);
//   act = ReLU when flags bit 0 is set; b may be null (no bias).
//
// Launch: block 256 threads, grid ceil(n / cols_per_block), cols_per_block in
// 1..8; 16 KiB static shared memory. Block bx owns output columns
// j0 = bx * cols_per_block .. j0 + cols_per_block - 1, for all m rows, so W is
// read exactly once over the grid and each block streams its columns of W
// while every block reads all of x (which stays in L2).
//
// Thread mapping inside a block (all decided from m, uniform per warp):
//   GM  = m-groups: 1, 2, 4 or 8 (m <= 8, 16, 32, 64); m-group g owns rows
//         g, g + GM, g + 2 GM, ... (8 rows), so a thread's register tile is
//         8 rows x 8 columns (acc[8][8]).
//   GMW = min(GM, 4) m-groups per warp, MH = GM / GMW warps per slice set,
//   KSW = 32 / GMW lanes per m-group: lane = mgw * KSW + ks.
//   Warp w: m-half mh = w % MH (m-group g = mh * GMW + mgw) and slot w / MH.
//   K-slice s = (w / MH) * KSW + ks of S = (8 / MH) * KSW slices: the thread
//   takes reduction steps u = s, s + S, s + 2 S, ... where a step is 4
//   consecutive r (float4 loads of x and W, when k % 4 == 0 and the pointers
//   are 16-byte aligned, and for the k x n layout also n % 4 == 0 and
//   cols_per_block % 4 == 0) or 1 r otherwise (scalar loads). Lanes of one
//   m-group read consecutive steps: a warp reads contiguous runs of each W
//   row. The next step's loads are issued before the current step's FMAs
//   (register double buffering).
// Reduction, in a fixed order: a butterfly over the KSW lanes of each m-group
// (__shfl_xor_sync, offsets KSW/2 .. 1), lane ks == 0 writes its 8 x 8 tile to
// shared memory, then thread t sums output (t / cpb, t % cpb) over the warps
// of its m-half in increasing warp order and applies bias and ReLU.
// ===========================================================================

#define GC_SMALL_THREADS 256
#define GC_SMALL_MAX_M 64
#define GC_LIN_RELU 1u
#define GC_LIN_W_KN 2u

enum { GC_W_NK = 0, GC_W_KN_VEC = 1, GC_W_KN_SCALAR = 2 };

struct GcSmallMap {
    u32 gm, gmw, mh_count, ksw, mg, ks, slice, slices;
};

__device__ __forceinline__ GcSmallMap gc_small_map(u32 m) {
    GcSmallMap p;
    p.gm = m <= 8 ? 1u : m <= 16 ? 2u : m <= 32 ? 4u : 8u;
    p.gmw = p.gm < 4u ? p.gm : 4u;
    p.mh_count = p.gm / p.gmw;
    p.ksw = 32u / p.gmw;
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const u32 mh = warp % p.mh_count, slot = warp / p.mh_count;
    p.mg = mh * p.gmw + lane / p.ksw;
    p.ks = lane % p.ksw;
    p.slice = slot * p.ksw + p.ks;
    p.slices = (8u / p.mh_count) * p.ksw;
    return p;
}

// Loads W for reduction step u: wv[q][c] = W(KV*u + q, j0 + c). Columns
// past n are clamped to the last one (their results are never stored).
template <int KV, int LAYOUT>
__device__ __forceinline__ void gc_small_load_w(float (&wv)[KV][8], const float *w, u32 n, u32 k, u32 j0,
                                                bool hi, u32 u) {
    if (LAYOUT == GC_W_NK) {
#pragma unroll
        for (int c = 0; c < 8; ++c) {
            if (c < 4 || hi) {
                const u32 j = min(j0 + c, n - 1);
                if (KV == 4) {
                    const float4 v = __ldg(reinterpret_cast<const float4 *>(w + j * k) + u);
                    wv[0][c] = v.x;
                    wv[1 % KV][c] = v.y;
                    wv[2 % KV][c] = v.z;
                    wv[3 % KV][c] = v.w;
                } else {
                    wv[0][c] = __ldg(w + j * k + u);
                }
            }
        }
    } else if (LAYOUT == GC_W_KN_VEC) {
#pragma unroll
        for (int q = 0; q < KV; ++q) {
            const float4 *row = reinterpret_cast<const float4 *>(w + (KV * u + q) * n);
            const u32 last = (n >> 2) - 1;
            const float4 a = __ldg(row + min(j0 >> 2, last));
            wv[q][0] = a.x;
            wv[q][1] = a.y;
            wv[q][2] = a.z;
            wv[q][3] = a.w;
            if (hi) {
                const float4 b = __ldg(row + min((j0 >> 2) + 1, last));
                wv[q][4] = b.x;
                wv[q][5] = b.y;
                wv[q][6] = b.z;
                wv[q][7] = b.w;
            }
        }
    } else {
#pragma unroll
        for (int q = 0; q < KV; ++q) {
#pragma unroll
            for (int c = 0; c < 8; ++c) {
                if (c < 4 || hi) wv[q][c] = __ldg(w + (KV * u + q) * n + min(j0 + c, n - 1));
            }
        }
    }
}

// Loads x[row, KV*u .. KV*u + KV - 1] for one row into xv.
template <int KV>
__device__ __forceinline__ void gc_small_load_x(float (&xv)[KV], const float *x, u32 k, u32 row, u32 u) {
    if (KV == 4) {
        const float4 v = __ldg(reinterpret_cast<const float4 *>(x + row * k) + u);
        xv[0] = v.x;
        xv[1 % KV] = v.y;
        xv[2 % KV] = v.z;
        xv[3 % KV] = v.w;
    } else {
        xv[0] = __ldg(x + row * k + u);
    }
}

template <int KV, int LAYOUT>
__device__ __forceinline__ void gc_linear_small(float *y, const float *x, const float *w, const float *b,
                                                u32 m, u32 n, u32 k, u32 flags, u32 cpb,
                                                float (*red)[GC_SMALL_MAX_M][8]) {
    const GcSmallMap p = gc_small_map(m);
    const u32 j0 = blockIdx.x * cpb;
    const bool hi = cpb > 4;  // columns 4..7 in use
    const u32 steps = k / KV;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[i][c] = 0.0f;

    // W is streamed from DRAM: the next step's W is loaded before the current
    // step's FMAs. x (small, L2-resident) is loaded at the top of each step.
    float wc[KV][8], wn[KV][8];
#pragma unroll
    for (int q = 0; q < KV; ++q)
#pragma unroll
        for (int c = 0; c < 8; ++c) wc[q][c] = wn[q][c] = 0.0f;

    u32 u = p.slice;
    if (u < steps) gc_small_load_w<KV, LAYOUT>(wc, w, n, k, j0, hi, u);
    for (; u < steps; u += p.slices) {
        float xv[8][KV];
#pragma unroll
        for (int i = 0; i < 8; ++i)
            if (i * p.gm < m) gc_small_load_x<KV>(xv[i], x, k, min(p.mg + p.gm * i, m - 1), u);
        const u32 un = u + p.slices;
        if (un < steps) gc_small_load_w<KV, LAYOUT>(wn, w, n, k, j0, hi, un);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            if (i * p.gm < m) {
#pragma unroll
                for (int c = 0; c < 4; ++c)
#pragma unroll
                    for (int q = 0; q < KV; ++q) acc[i][c] = fmaf(xv[i][q], wc[q][c], acc[i][c]);
                if (hi) {
#pragma unroll
                    for (int c = 4; c < 8; ++c)
#pragma unroll
                        for (int q = 0; q < KV; ++q) acc[i][c] = fmaf(xv[i][q], wc[q][c], acc[i][c]);
                }
            }
        }
#pragma unroll
        for (int q = 0; q < KV; ++q)
#pragma unroll
            for (int c = 0; c < 8; ++c) wc[q][c] = wn[q][c];
    }

    // Butterfly over the KSW lanes of each m-group (all lanes take part).
    for (u32 o = p.ksw >> 1; o > 0; o >>= 1) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            if (i * p.gm < m) {
#pragma unroll
                for (int c = 0; c < 8; ++c)
                    if (c < 4 || hi) acc[i][c] = __fadd_rn(acc[i][c], __shfl_xor_sync(0xffffffffu, acc[i][c], o));
            }
        }
    }
    const u32 warp = threadIdx.x >> 5;
    if (p.ks == 0) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const u32 row = p.mg + p.gm * i;
            if (row < m) {
#pragma unroll
                for (int c = 0; c < 8; ++c) red[warp][row][c] = acc[i][c];
            }
        }
    }
    __syncthreads();

    const u32 outs = m * cpb;
    for (u32 o = threadIdx.x; o < outs; o += GC_SMALL_THREADS) {
        const u32 row = o / cpb, c = o - row * cpb, j = j0 + c;
        if (j >= n) continue;
        const u32 mh = (row % p.gm) / p.gmw;
        float t = red[mh][row][c];
        for (u32 wi = mh + p.mh_count; wi < 8; wi += p.mh_count) t = __fadd_rn(t, red[wi][row][c]);
        if (b != nullptr) t = __fadd_rn(t, b[j]);
        if (flags & GC_LIN_RELU) t = gc_relu(t);
        y[row * n + j] = t;
    }
}

extern "C" __global__ void __launch_bounds__(GC_SMALL_THREADS)
    gc_linear_small_f32(float *y, const float *x, const float *w, const float *b, u32 m, u32 n, u32 k, u32 flags,
                        u32 cols_per_block) {
    __shared__ float red[8][GC_SMALL_MAX_M][8];  // per-warp 8 x 8 tiles, 16 KiB
    const u32 cpb = cols_per_block;
    if (m == 0 || m > GC_SMALL_MAX_M || n == 0 || k == 0 || cpb == 0 || cpb > 8) return;
    const bool xv = (k & 3) == 0 && gc_aligned16(x);
    if (flags & GC_LIN_W_KN) {
        if (xv && (n & 3) == 0 && (cpb & 3) == 0 && gc_aligned16(w))
            gc_linear_small<4, GC_W_KN_VEC>(y, x, w, b, m, n, k, flags, cpb, red);
        else
            gc_linear_small<1, GC_W_KN_SCALAR>(y, x, w, b, m, n, k, flags, cpb, red);
    } else {
        if (xv && gc_aligned16(w))
            gc_linear_small<4, GC_W_NK>(y, x, w, b, m, n, k, flags, cpb, red);
        else
            gc_linear_small<1, GC_W_NK>(y, x, w, b, m, n, k, flags, cpb, red);
    }
}

// ===========================================================================
// gc_gemm_f32(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, tile)
//
//   C[i, j] = act( alpha * sum_r opA(i, r) * opB(r, j) + beta * C[i, j] + bias[j] )
//   opA(i, r) = a[i * lda + r]  (flags bit 0 clear)  or a[r * lda + i] (set: A is k x m)
//   opB(r, j) = b[r * ldb + j]  (flags bit 1 clear)  or b[j * ldb + r] (set: B is n x k)
//   act = ReLU when flags bit 2 is set; bias may be null. When beta == 0, C is
//   not read (it may hold NaN); otherwise the result is
//   fmaf(alpha, acc, beta * C) - with alpha = -lr, beta = 1 this is exactly
//   the SGD step fmaf(-lr, g, w) applied to g = (the same GEMM with alpha = 1,
//   beta = 0), so a fused weight update is bitwise equal to the unfused one.
//
// Launch: block 256 threads, 1-D grid of ceil(m / T) * ceil(n / T) blocks,
// no dynamic shared memory; `tile` picks the block tile T x T:
//   tile 0: T = 128, thread tile 8 x 8, K chunks of 8;
//   tile 1: T = 64,  thread tile 4 x 4, K chunks of 16;
//   tile 2: T = 32,  thread tile 4 x 4 in 4 K-slices (below).
// Block b computes the output tile (b / ceil(n / T), b % ceil(n / T)).
//
// Tiles 0 and 1: thread (ty, tx) = (t / 16, t % 16) owns rows
// {4 ty .. 4 ty + 3} (+ T/2 for tile 0) and columns {4 tx .. 4 tx + 3}
// (+ T/2), and adds its products in increasing r, one fmaf each: the result
// does not depend on the tile. op(A) and op(B) chunks are staged k-major in
// shared memory (two buffers: the next chunk is fetched into registers while
// the current one is used; one barrier per chunk) with float4 global loads
// along the contiguous index when its leading dimension is a multiple of 4 and
// the pointer 16-byte aligned (guarded scalar loads at the edges and
// otherwise; zeros past the edges). The epilogue reads (beta != 0) and writes
// C as float4 when ldc % 4 == 0 and c is 16-byte aligned.
//
// Tile 2 (small outputs): the 256 threads form 4 K-slices of 64 threads
// (slice = tid / 64); chunks of 32 are staged in shared memory and slice s
// multiplies rows r = 8 s .. 8 s + 7 of each chunk; thread (ty, tx) =
// (t / 8, t % 8) of a slice owns rows {4 ty .. 4 ty + 3} and columns
// {4 tx .. 4 tx + 3}. At the end slices 1, 2, 3 hand their tiles to slice 0
// through shared memory, added in that order, and slice 0 applies the
// epilogue.
// ===========================================================================

#define GC_GEMM_THREADS 256
#define GC_GEMM_TRANS_A 1u
#define GC_GEMM_TRANS_B 2u
#define GC_GEMM_RELU 4u
// Shared memory (floats): tiles 0 and 1 stage 2 x 2 chunks of BK x (T + 4)
// (tile 1 is the larger), tile 2 two chunks of 32 x (32 + 4).
#define GC_GEMM_SMEM (2 * 2 * 16 * (64 + 4))

// Epilogue for one output: alpha acc (+ beta c) (+ bias) (ReLU).
__device__ __forceinline__ float gc_gemm_out(float acc, float alpha, float beta, float cold, const float *bias,
                                             u32 j, bool relu) {
    float v = beta == 0.0f ? __fmul_rn(alpha, acc) : fmaf(alpha, acc, __fmul_rn(beta, cold));
    if (bias != nullptr) v = __fadd_rn(v, __ldg(bias + j));
    return relu ? gc_relu(v) : v;
}

template <int BM, int BN, int TM, int TN, int BK, int NT>
__device__ __forceinline__ void gc_gemm_reg(float *cmat, const float *a, const float *bm, const float *bias, u32 m,
                                            u32 n, u32 k, u32 lda, u32 ldb, u32 ldc, u32 flags, float alpha,
                                            float beta, float *smem) {
    constexpr int LA = BM + 4, LB = BN + 4;  // k-major rows of As / Bs
    constexpr int A4 = BM * BK / 4 / NT;  // float4 groups per thread
    constexpr int B4 = BN * BK / 4 / NT;
    constexpr int TX = BN / TN;
    static_assert((BM / TM) * (BN / TN) == NT, "one thread tile per thread");
    static_assert(A4 >= 1 && B4 >= 1, "whole float4 groups");
    float *As = smem;                // [2][BK][LA]
    float *Bs = smem + 2 * BK * LA;  // [2][BK][LB]

    const u32 tid = threadIdx.x;
    const u32 tiles_n = (n + BN - 1) / BN;
    const u32 i0 = (blockIdx.x / tiles_n) * BM, j0 = (blockIdx.x % tiles_n) * BN;
    const bool ta = flags & GC_GEMM_TRANS_A, tb = flags & GC_GEMM_TRANS_B;
    const bool va = (lda & 3) == 0 && gc_aligned16(a), vb = (ldb & 3) == 0 && gc_aligned16(bm);
    const u32 ty = tid / TX, tx = tid % TX;

    // Staging map for group e = tid + 256 q of a chunk: along the contiguous
    // index, 4 elements: A transposed (k x m): r = e / (BM/4), i = 4 (e % (BM/4));
    // A plain (m x k): i = e / (BK/4), r = 4 (e % (BK/4)); likewise for B.
    float4 ra[A4], rb[B4];
    auto fetch = [&](u32 r0) {
#pragma unroll
        for (int q = 0; q < A4; ++q) {
            const u32 e = tid + NT * q;
            if (ta) {
                const u32 gr = r0 + e / (BM / 4), gi = i0 + 4 * (e % (BM / 4));
                const float *p = a + gr * lda + gi;
                if (gr < k && va && gi + 3 < m) {
                    ra[q] = __ldg(reinterpret_cast<const float4 *>(p));
                } else {
                    const bool in = gr < k;
                    ra[q].x = in && gi < m ? __ldg(p) : 0.0f;
                    ra[q].y = in && gi + 1 < m ? __ldg(p + 1) : 0.0f;
                    ra[q].z = in && gi + 2 < m ? __ldg(p + 2) : 0.0f;
                    ra[q].w = in && gi + 3 < m ? __ldg(p + 3) : 0.0f;
                }
            } else {
                const u32 gi = i0 + e / (BK / 4), gr = r0 + 4 * (e % (BK / 4));
                const float *p = a + gi * lda + gr;
                if (gi < m && va && gr + 3 < k) {
                    ra[q] = __ldg(reinterpret_cast<const float4 *>(p));
                } else {
                    const bool in = gi < m;
                    ra[q].x = in && gr < k ? __ldg(p) : 0.0f;
                    ra[q].y = in && gr + 1 < k ? __ldg(p + 1) : 0.0f;
                    ra[q].z = in && gr + 2 < k ? __ldg(p + 2) : 0.0f;
                    ra[q].w = in && gr + 3 < k ? __ldg(p + 3) : 0.0f;
                }
            }
        }
#pragma unroll
        for (int q = 0; q < B4; ++q) {
            const u32 e = tid + NT * q;
            if (!tb) {
                const u32 gr = r0 + e / (BN / 4), gj = j0 + 4 * (e % (BN / 4));
                const float *p = bm + gr * ldb + gj;
                if (gr < k && vb && gj + 3 < n) {
                    rb[q] = __ldg(reinterpret_cast<const float4 *>(p));
                } else {
                    const bool in = gr < k;
                    rb[q].x = in && gj < n ? __ldg(p) : 0.0f;
                    rb[q].y = in && gj + 1 < n ? __ldg(p + 1) : 0.0f;
                    rb[q].z = in && gj + 2 < n ? __ldg(p + 2) : 0.0f;
                    rb[q].w = in && gj + 3 < n ? __ldg(p + 3) : 0.0f;
                }
            } else {
                const u32 gj = j0 + e / (BK / 4), gr = r0 + 4 * (e % (BK / 4));
                const float *p = bm + gj * ldb + gr;
                if (gj < n && vb && gr + 3 < k) {
                    rb[q] = __ldg(reinterpret_cast<const float4 *>(p));
                } else {
                    const bool in = gj < n;
                    rb[q].x = in && gr < k ? __ldg(p) : 0.0f;
                    rb[q].y = in && gr + 1 < k ? __ldg(p + 1) : 0.0f;
                    rb[q].z = in && gr + 2 < k ? __ldg(p + 2) : 0.0f;
                    rb[q].w = in && gr + 3 < k ? __ldg(p + 3) : 0.0f;
                }
            }
        }
    };
    auto stage = [&](u32 buf) {
        float *as = As + buf * BK * LA, *bs = Bs + buf * BK * LB;
#pragma unroll
        for (int q = 0; q < A4; ++q) {
            const u32 e = tid + NT * q;
            if (ta) {
                gc_sts4(as + (e / (BM / 4)) * LA + 4 * (e % (BM / 4)), ra[q]);
            } else {
                float *p = as + 4 * (e % (BK / 4)) * LA + e / (BK / 4);
                p[0] = ra[q].x;
                p[LA] = ra[q].y;
                p[2 * LA] = ra[q].z;
                p[3 * LA] = ra[q].w;
            }
        }
#pragma unroll
        for (int q = 0; q < B4; ++q) {
            const u32 e = tid + NT * q;
            if (!tb) {
                gc_sts4(bs + (e / (BN / 4)) * LB + 4 * (e % (BN / 4)), rb[q]);
            } else {
                float *p = bs + 4 * (e % (BK / 4)) * LB + e / (BK / 4);
                p[0] = rb[q].x;
                p[LB] = rb[q].y;
                p[2 * LB] = rb[q].z;
                p[3 * LB] = rb[q].w;
            }
        }
    };

    // Row / column of acc[i][j] inside the block tile.
    auto trow = [&](int i) { return 4 * ty + (i & 3) + (i >> 2) * (BM / 2); };
    auto tcol = [&](int j) { return 4 * tx + (j & 3) + (j >> 2) * (BN / 2); };
    const bool vc = (ldc & 3) == 0 && gc_aligned16(cmat);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    const u32 chunks = (k + BK - 1) / BK;
    fetch(0);
    stage(0);
    __syncthreads();
    for (u32 ch = 0; ch < chunks; ++ch) {
        const u32 buf = ch & 1u;
        if (ch + 1 < chunks) fetch((ch + 1) * BK);
        const float *as = As + buf * BK * LA, *bs = Bs + buf * BK * LB;
#pragma unroll
        for (int rr = 0; rr < BK; ++rr) {
            float av[TM], bv[TN];
#pragma unroll
            for (int h = 0; h < TM / 4; ++h) {
                const float4 v = gc_lds4(as + rr * LA + 4 * ty + h * (BM / 2));
                av[4 * h] = v.x;
                av[4 * h + 1] = v.y;
                av[4 * h + 2] = v.z;
                av[4 * h + 3] = v.w;
            }
#pragma unroll
            for (int h = 0; h < TN / 4; ++h) {
                const float4 v = gc_lds4(bs + rr * LB + 4 * tx + h * (BN / 2));
                bv[4 * h] = v.x;
                bv[4 * h + 1] = v.y;
                bv[4 * h + 2] = v.z;
                bv[4 * h + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        if (ch + 1 < chunks) stage(buf ^ 1u);
        __syncthreads();
    }

    const bool relu = flags & GC_GEMM_RELU;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const u32 gi = i0 + trow(i);
        if (gi >= m) continue;
#pragma unroll
        for (int h = 0; h < TN / 4; ++h) {
            const u32 gj = j0 + tcol(4 * h);
            float *p = cmat + gi * ldc + gj;
            float old[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (vc && gj + 3 < n) {
                if (beta != 0.0f) {
                    const float4 v = *reinterpret_cast<const float4 *>(p);
                    old[0] = v.x;
                    old[1] = v.y;
                    old[2] = v.z;
                    old[3] = v.w;
                }
                float4 o;
                o.x = gc_gemm_out(acc[i][4 * h], alpha, beta, old[0], bias, gj, relu);
                o.y = gc_gemm_out(acc[i][4 * h + 1], alpha, beta, old[1], bias, gj + 1, relu);
                o.z = gc_gemm_out(acc[i][4 * h + 2], alpha, beta, old[2], bias, gj + 2, relu);
                o.w = gc_gemm_out(acc[i][4 * h + 3], alpha, beta, old[3], bias, gj + 3, relu);
                *reinterpret_cast<float4 *>(p) = o;
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    if (gj + q >= n) break;
                    if (beta != 0.0f) old[q] = p[q];
                    p[q] = gc_gemm_out(acc[i][4 * h + q], alpha, beta, old[q], bias, gj + q, relu);
                }
            }
        }
    }
}

// Tile 2: 32 x 32 output tile, 4 K-slices (see above).
__device__ __forceinline__ void gc_gemm_sliced(float *cmat, const float *a, const float *bm, const float *bias, u32 m,
                                               u32 n, u32 k, u32 lda, u32 ldb, u32 ldc, u32 flags, float alpha,
                                               float beta, float *smem) {
    constexpr int BM = 32, BN = 32, TM = 4, TN = 4, BK = 32, KS = 4;
    constexpr int LDS = BN + 4;
    constexpr int TPS = (BM / TM) * (BN / TN);     // threads per slice
    constexpr int RPS = BK / KS;                   // chunk rows per slice
    constexpr int LA = BM * BK / GC_GEMM_THREADS;  // A elements staged per thread
    constexpr int LB = BN * BK / GC_GEMM_THREADS;
    constexpr int TX = BN / TN;
    float *As = smem;             // [BK][LDS]
    float *Bs = smem + BK * LDS;  // [BK][LDS]

    const u32 tid = threadIdx.x;
    const u32 tiles_n = (n + BN - 1) / BN;
    const u32 i0 = (blockIdx.x / tiles_n) * BM, j0 = (blockIdx.x % tiles_n) * BN;
    const bool ta = flags & GC_GEMM_TRANS_A, tb = flags & GC_GEMM_TRANS_B;

    float ra[LA], rb[LB];
    auto fetch = [&](u32 r0) {
#pragma unroll
        for (int q = 0; q < LA; ++q) {
            const u32 e = tid + GC_GEMM_THREADS * q;
            const u32 ii = ta ? e % BM : e / BK, rr = ta ? e / BM : e % BK;
            const u32 gi = i0 + ii, gr = r0 + rr;
            ra[q] = (gi < m && gr < k) ? __ldg(a + (ta ? gr * lda + gi : gi * lda + gr)) : 0.0f;
        }
#pragma unroll
        for (int q = 0; q < LB; ++q) {
            const u32 e = tid + GC_GEMM_THREADS * q;
            const u32 jj = tb ? e / BK : e % BN, rr = tb ? e % BK : e / BN;
            const u32 gj = j0 + jj, gr = r0 + rr;
            rb[q] = (gj < n && gr < k) ? __ldg(bm + (tb ? gj * ldb + gr : gr * ldb + gj)) : 0.0f;
        }
    };
    auto stage = [&]() {
#pragma unroll
        for (int q = 0; q < LA; ++q) {
            const u32 e = tid + GC_GEMM_THREADS * q;
            const u32 ii = ta ? e % BM : e / BK, rr = ta ? e / BM : e % BK;
            As[rr * LDS + ii] = ra[q];
        }
#pragma unroll
        for (int q = 0; q < LB; ++q) {
            const u32 e = tid + GC_GEMM_THREADS * q;
            const u32 jj = tb ? e / BK : e % BN, rr = tb ? e % BK : e / BN;
            Bs[rr * LDS + jj] = rb[q];
        }
    };

    const u32 slice = tid / TPS, t = tid % TPS;
    const u32 ty = t / TX, tx = t % TX;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    const u32 chunks = (k + BK - 1) / BK;
    fetch(0);
    stage();
    __syncthreads();
    for (u32 ch = 0; ch < chunks; ++ch) {
        if (ch + 1 < chunks) fetch((ch + 1) * BK);
#pragma unroll
        for (int rr = 0; rr < RPS; ++rr) {
            const float4 av = gc_lds4(As + (slice * RPS + rr) * LDS + 4 * ty);
            const float4 bv = gc_lds4(Bs + (slice * RPS + rr) * LDS + 4 * tx);
            const float a4[4] = {av.x, av.y, av.z, av.w}, b4[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a4[i], b4[j], acc[i][j]);
        }
        __syncthreads();
        if (ch + 1 < chunks) {
            stage();
            __syncthreads();
        }
    }

    // Slices 1..3 hand their partial tiles to slice 0, in order.
    float *red = smem;  // [BM][BN], fits in the staging buffers
#pragma unroll 1
    for (u32 s = 1; s < KS; ++s) {
        if (slice == s) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) red[(4 * ty + i) * BN + 4 * tx + j] = acc[i][j];
        }
        __syncthreads();
        if (slice == 0) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = __fadd_rn(acc[i][j], red[(4 * ty + i) * BN + 4 * tx + j]);
        }
        __syncthreads();
    }
    if (slice != 0) return;

    const bool relu = flags & GC_GEMM_RELU;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const u32 gi = i0 + 4 * ty + i;
        if (gi >= m) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const u32 gj = j0 + 4 * tx + j;
            if (gj >= n) continue;
            float *p = cmat + gi * ldc + gj;
            p[0] = gc_gemm_out(acc[i][j], alpha, beta, beta != 0.0f ? p[0] : 0.0f, bias, gj, relu);
        }
    }
}

// At most 128 registers (2 blocks per SM; tile 0 needs about that many).
extern "C" __global__ void __launch_bounds__(GC_GEMM_THREADS, 2)
    gc_gemm_f32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k, u32 lda,
                u32 ldb, u32 ldc, u32 flags, float alpha, float beta, u32 tile) {
    __shared__ __align__(16) float smem[GC_GEMM_SMEM];
    if (m == 0 || n == 0 || k == 0) return;
    if (tile == 0)
        gc_gemm_reg<128, 128, 8, 8, 8, GC_GEMM_THREADS>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem);
    else if (tile == 1)
        gc_gemm_reg<64, 64, 4, 4, 16, GC_GEMM_THREADS>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem);
    else if (tile == 2)
        gc_gemm_sliced(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem);
}
