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
// Launch: block 256 threads, 1-D grid of ceil(m / BM) * ceil(n / BN) blocks,
// no dynamic shared memory; `tile` picks the block tile:
//   tile 0: BM = BN = 64, thread tile 8 x 8;   tile 1: BM = BN = 32, 4 x 4.
// Block b computes the output tile (b / ceil(n / BN), b % ceil(n / BN)).
//
// Thread mapping: the 256 threads form KS = 4 K-slices of 64 threads (slice =
// tid / 64). The block stages op(A) and op(B) in BK = 32 wide K chunks in
// shared memory (k-major, As[r][i], Bs[r][j]; guarded loads, zeros past the
// edges; the next chunk is fetched into registers while the current one is
// used); slice s multiplies rows r = 8 s .. 8 s + 7 of each chunk. Within a
// slice, thread (ty, tx) = (t / (BN/TN), t % (BN/TN)) owns rows
// {4 ty .. 4 ty + 3} (+ BM/2 for TM = 8) and columns {4 tx .. 4 tx + 3}
// (+ BN/2 for TN = 8), read as float4 from shared memory. At the end slices
// 1, 2, 3 hand their tiles to slice 0 through shared memory, added in that
// order, and slice 0 applies the epilogue.
// ===========================================================================

#define GC_GEMM_THREADS 256
#define GC_GEMM_BK 32
#define GC_GEMM_KS 4
#define GC_GEMM_TRANS_A 1u
#define GC_GEMM_TRANS_B 2u
#define GC_GEMM_RELU 4u
// Shared memory: two staged chunks of BK x (64 + 4) floats; the slice
// reduction reuses it as a 64 x 64 tile.
#define GC_GEMM_LDS (64 + 4)
#define GC_GEMM_SMEM (2 * GC_GEMM_BK * GC_GEMM_LDS)

template <int BM, int BN, int TM, int TN>
__device__ __forceinline__ void gc_gemm(float *cmat, const float *a, const float *bm, const float *bias, u32 m,
                                        u32 n, u32 k, u32 lda, u32 ldb, u32 ldc, u32 flags, float alpha,
                                        float beta, float *smem) {
    constexpr int BK = GC_GEMM_BK;
    constexpr int LDS = BM > BN ? BM + 4 : BN + 4;  // row length of As / Bs
    constexpr int TPS = (BM / TM) * (BN / TN);       // threads per slice
    static_assert(TPS * GC_GEMM_KS == GC_GEMM_THREADS, "tile must use 4 slices of the block");
    constexpr int RPS = BK / GC_GEMM_KS;             // chunk rows per slice
    constexpr int LA = BM * BK / GC_GEMM_THREADS;    // A elements staged per thread
    constexpr int LB = BN * BK / GC_GEMM_THREADS;
    constexpr int TX = BN / TN;
    float *As = smem;              // [BK][LDS]
    float *Bs = smem + BK * LDS;   // [BK][LDS]

    const u32 tid = threadIdx.x;
    const u32 tiles_n = (n + BN - 1) / BN;
    const u32 i0 = (blockIdx.x / tiles_n) * BM, j0 = (blockIdx.x % tiles_n) * BN;
    const bool ta = flags & GC_GEMM_TRANS_A, tb = flags & GC_GEMM_TRANS_B;

    // Staging map: element e = tid + 256 q of the chunk; the index that is
    // contiguous in global memory varies fastest across threads.
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
            const float *arow = As + (slice * RPS + rr) * LDS;
            const float *brow = Bs + (slice * RPS + rr) * LDS;
            float av[TM], bv[TN];
#pragma unroll
            for (int h = 0; h < TM / 4; ++h) {
                const float4 v = gc_lds4(arow + 4 * ty + h * (BM / 2));
                av[4 * h] = v.x;
                av[4 * h + 1] = v.y;
                av[4 * h + 2] = v.z;
                av[4 * h + 3] = v.w;
            }
#pragma unroll
            for (int h = 0; h < TN / 4; ++h) {
                const float4 v = gc_lds4(brow + 4 * tx + h * (BN / 2));
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
        __syncthreads();
        if (ch + 1 < chunks) {
            stage();
            __syncthreads();
        }
    }

    // Row / column of acc[i][j] inside the block tile.
    auto trow = [&](int i) { return 4 * ty + (i & 3) + (i >> 2) * (BM / 2); };
    auto tcol = [&](int j) { return 4 * tx + (j & 3) + (j >> 2) * (BN / 2); };

    // Slices 1..3 hand their partial tiles to slice 0, in order.
    float *red = smem;  // [BM][BN], fits in the staging buffers
#pragma unroll 1
    for (u32 s = 1; s < GC_GEMM_KS; ++s) {
        if (slice == s) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) red[trow(i) * BN + tcol(j)] = acc[i][j];
        }
        __syncthreads();
        if (slice == 0) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = __fadd_rn(acc[i][j], red[trow(i) * BN + tcol(j)]);
        }
        __syncthreads();
    }
    if (slice != 0) return;

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const u32 gi = i0 + trow(i);
        if (gi >= m) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const u32 gj = j0 + tcol(j);
            if (gj >= n) continue;
            float v;
            if (beta == 0.0f)
                v = __fmul_rn(alpha, acc[i][j]);
            else
                v = fmaf(alpha, acc[i][j], __fmul_rn(beta, cmat[gi * ldc + gj]));
            if (bias != nullptr) v = __fadd_rn(v, bias[gj]);
            if (flags & GC_GEMM_RELU) v = gc_relu(v);
            cmat[gi * ldc + gj] = v;
        }
    }
}

extern "C" __global__ void __launch_bounds__(GC_GEMM_THREADS)
    gc_gemm_f32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k, u32 lda,
                u32 ldb, u32 ldc, u32 flags, float alpha, float beta, u32 tile) {
    __shared__ __align__(16) float smem[GC_GEMM_SMEM];
    if (m == 0 || n == 0 || k == 0) return;
    if (tile == 0)
        gc_gemm<64, 64, 8, 8>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem);
    else
        gc_gemm<32, 32, 4, 4>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem);
}
