// linear.cu: linear layers and GEMM.
//
//   gc_linear_small_f32  y = x . W^T (+ b) (ReLU), or y = x . W, for small m
//                        (the launcher: m <= 256 forward, m <= 64 input
//                        gradient): split-K over the threads of a block,
//                        register tiles, shuffles.
//   gc_mlp_f32           up to 4 linear layers (bias, ReLU) in one cooperative
//                        launch for small batches, a grid barrier between
//                        layers, the small-batch kernel's warp tiles.
//   gc_gemm_f32          C = alpha op(A) op(B) + beta C (+ bias[col]) (ReLU),
//                        any M, N, K, transposes and leading dimensions.
//   gc_linear_cluster_f32  the linear layout's GEMM with K split over the
//                        blocks of a thread-block cluster (sm_90), partial
//                        tiles added through distributed shared memory.
//
// Both are deterministic: every output is a sum taken in an order fixed by the
// sizes and launch parameters (no atomics). Matrices are row-major f32; every
// index (row * ld + col) must be below 2^32, which the launcher checks.
#include "common.cuh"

// ===========================================================================
// gc_linear_small_f32(y, x, w, b, m, n, k, flags, config)
//
//   y[i, j] = act( sum_r x[i, r] * W(r, j) + b[j] ),  i < m, j < n, r < k
//   W(r, j) = w[j * k + r]   flags bit 1 clear: w is n x k (PyTorch weight);
//           = w[r * n + j]   flags bit 1 set:   w is k x n (y = x . w, as the
//                            input gradient dx = dy . W needs);
//   act = ReLU when flags bit 0 is set; b may be null (no bias).
//
// config = LR | LC << 2 | LGR << 4 | LGC << 6 (each a base-2 logarithm):
// thread tile R x C = 2^LR x 2^LC, GR x GC = 2^LGR x 2^LGC tile groups per
// block (GR * GC <= 8). Thread tiles: n x k layout 1x1, 4x1, 4x4, 8x4; k x n
// layout 1x4, 4x4, 8x4 (any other tile: the kernel does nothing).
//
// Launch: block 256 threads (8 warps), grid (ceil(n / (C GC)), ceil(m / (R GR))),
// 2 KiB static shared memory. Block (bx, by) computes the block tile of rows
// (by GR + gr) R .. + R - 1 and columns (bx GC + gc) C .. + C - 1 for its
// groups g = gr GC + gc; group g is the WG = 8 / (GR GC) consecutive warps
// g WG .. g WG + WG - 1, and its 32 WG threads split the reduction: thread s of
// the group takes the steps u = s, s + 32 WG, s + 64 WG, ... in that order,
// where a step is 4 consecutive r (float4 loads of x and W, when k % 4 == 0
// and x, w are 16-byte aligned; for the k x n layout also n % 4 == 0) or one r
// (scalar loads). Lanes of a warp read consecutive steps, so a warp reads
// contiguous runs of each x and W row; a thread issues the loads of several
// steps before their FMAs (1 x 1 tiles: batches of 8). Rows past m and
// columns past n are clamped to the last one (computed, never stored).
//
// Reduction, in a fixed order: each warp reduces its V = R C sums over its 32
// lanes by a halving exchange (__shfl_xor_sync with offsets 16 .. 1; at each
// offset a lane keeps one half of its values, adds the partner's copy of that
// half, and hands over the other half), which leaves the sum of value index
// v = r C + c in lane v / (V / 32), slot v % (V / 32) when V >= 32, and in
// each of the lanes v (32 / V) .. v (32 / V) + 32 / V - 1 when V < 32 (the
// last levels are then plain butterflies). With one warp per group the lanes store
// directly; otherwise every warp writes its sums to shared memory and after
// one barrier a thread adds the WG warps' sums in increasing warp order.
// Bias and ReLU come last.
// ===========================================================================

#define GC_SMALL_THREADS 256
#define GC_SMALL_WARPS 8
#define GC_SMALL_MAX_V 64
#define GC_LIN_RELU 1u
#define GC_LIN_W_KN 2u

enum { GC_W_NK = 0, GC_W_KN = 1 };


// How the small-batch kernels read x: GC_X_RO through the read-only
// (non-coherent) path, which only data that no thread of the launch writes
// may use; GC_X_PLAIN with plain (coherent) loads (activations written by
// the same launch before a grid barrier); GC_X_TAG as tagged activations
// (see GcTagIn): x points at 64-bit slots, and a load whose tag is not the
// expected one clears `ok` (the caller loads again).
enum { GC_X_RO = 0, GC_X_PLAIN = 1, GC_X_TAG = 2 };

// A tagged activation of the fused MLP (gc_mlp_f32) is one 64-bit slot: the
// value's bits in the low word, the tag of the launch that wrote it in the
// high word, written and read as one single-copy-atomic 64-bit access, so a
// reader sees either the old slot or the new one whole, and the data is its
// own ready flag (no fence, counter or barrier between layers). GcTagIn is
// what a reader expects (`tag`) and whether every slot read so far had it.
struct GcTagIn {
    u32 tag;
    bool ok;
};

// Strong (volatile: L1 bypassed, never cached in a register) 64-bit loads and
// stores of tagged slots.
__device__ __forceinline__ void gc_ld_slot2(const u64 *p, u64 &a, u64 &b) {
#ifdef __CUDA_ARCH__
    asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p));
#else
    a = __atomic_load_n(p, __ATOMIC_RELAXED);  // CPU emulation (kernels/emu)
    b = __atomic_load_n(p + 1, __ATOMIC_RELAXED);
#endif
}
__device__ __forceinline__ u64 gc_ld_slot(const u64 *p) {
#ifdef __CUDA_ARCH__
    u64 v;
    asm volatile("ld.volatile.u64 %0, [%1];" : "=l"(v) : "l"(p));
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}
__device__ __forceinline__ void gc_st_slot(u64 *p, u64 v) {
#ifdef __CUDA_ARCH__
    asm volatile("st.volatile.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

// The value of a tagged slot; clears t.ok when its tag is not t.tag.
__device__ __forceinline__ float gc_untag(u64 v, GcTagIn &t) {
    t.ok &= (u32)(v >> 32) == t.tag;
    return __uint_as_float((u32)v);
}

// Loads step u: xv[r][q] = x[i0 + r, KV u + q], wv[c][q] = W(KV u + q, j0 + c)
// (rows and columns clamped to the matrix); x read as XM says (GC_X_*).
template <int R, int C, int KV, int LAYOUT, int XM = GC_X_RO>
__device__ __forceinline__ void gc_small_load(float (&xv)[R][KV], float (&wv)[C][KV], const float *x,
                                              const float *w, u32 m, u32 n, u32 k, u32 i0, u32 j0, u32 u,
                                              GcTagIn &tg) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const u32 row = min(i0 + r, m - 1);
        if (XM == GC_X_TAG) {
            const u64 *p = reinterpret_cast<const u64 *>(x) + row * k + KV * u;
            if (KV == 4) {
                u64 s[4];
                gc_ld_slot2(p, s[0], s[1]);
                gc_ld_slot2(p + 2, s[2], s[3]);
#pragma unroll
                for (int q = 0; q < KV; ++q) xv[r][q] = gc_untag(s[q], tg);
            } else {
                xv[r][0] = gc_untag(gc_ld_slot(p), tg);
            }
        } else if (KV == 4) {
            const float4 *p = reinterpret_cast<const float4 *>(x + row * k) + u;
            const float4 v = XM == GC_X_RO ? __ldg(p) : *p;
            xv[r][0] = v.x;
            xv[r][1 % KV] = v.y;
            xv[r][2 % KV] = v.z;
            xv[r][3 % KV] = v.w;
        } else {
            xv[r][0] = XM == GC_X_RO ? __ldg(x + row * k + u) : x[row * k + u];
        }
    }
    if (LAYOUT == GC_W_NK) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const u32 col = min(j0 + c, n - 1);
            if (KV == 4) {
                const float4 v = __ldg(reinterpret_cast<const float4 *>(w + col * k) + u);
                wv[c][0] = v.x;
                wv[c][1 % KV] = v.y;
                wv[c][2 % KV] = v.z;
                wv[c][3 % KV] = v.w;
            } else {
                wv[c][0] = __ldg(w + col * k + u);
            }
        }
    } else if (KV == 4) {
        // k x n, C % 4 == 0, n % 4 == 0: float4 along the columns.
        const u32 last = (n >> 2) - 1;
#pragma unroll
        for (int q = 0; q < KV; ++q) {
            const float4 *row = reinterpret_cast<const float4 *>(w + (KV * u + q) * n);
#pragma unroll
            for (int c4 = 0; c4 < C / 4; ++c4) {
                const float4 v = __ldg(row + min((j0 >> 2) + c4, last));
                wv[(4 * c4) % C][q] = v.x;
                wv[(4 * c4 + 1) % C][q] = v.y;
                wv[(4 * c4 + 2) % C][q] = v.z;
                wv[(4 * c4 + 3) % C][q] = v.w;
            }
        }
    } else {
#pragma unroll
        for (int c = 0; c < C; ++c) wv[c][0] = __ldg(w + u * n + min(j0 + c, n - 1));
    }
}

// The halving exchange, from offset 16 >> L on (see the reduction above).
template <int V, int L>
__device__ __forceinline__ void gc_small_exchange(float (&acc)[V], u32 lane) {
    if constexpr (L < 5) {
        constexpr int o = 16 >> L;
        constexpr int live = V >> L;  // sums still held per lane
        if constexpr (live >= 2) {
            constexpr int h = live / 2;
            const bool up = (lane & o) != 0;
#pragma unroll
            for (int i = 0; i < h; ++i) {
                const float send = up ? acc[i] : acc[i + h];
                const float keep = up ? acc[i + h] : acc[i];
                acc[i] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, o));
            }
        } else {
            acc[0] = __fadd_rn(acc[0], __shfl_xor_sync(0xffffffffu, acc[0], o));
        }
        gc_small_exchange<V, L + 1>(acc, lane);
    }
}

template <int R, int C, int KV>
__device__ __forceinline__ void gc_small_fma(float (&acc)[R * C], const float (&xv)[R][KV],
                                             const float (&wv)[C][KV]) {
#pragma unroll
    for (int q = 0; q < KV; ++q)
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int c = 0; c < C; ++c) acc[r * C + c] = fmaf(xv[r][q], wv[c][q], acc[r * C + c]);
}

// Gives up a wait for tagged activations that never come (a bug, or
// another launch overwriting the workspace): a trap, after about 2^26 loads
// (seconds), instead of a hang.
__device__ __forceinline__ void gc_poll_check(u32 tries) {
#ifdef __CUDA_ARCH__
    if (tries > (1u << 26)) asm volatile("trap;");
#else
    (void)tries;
    emu_yield();  // CPU emulation (kernels/emu): let the producing threads run
#endif
}

// Adds to acc the products of the steps u0, u0 + S, u0 + 2 S, ... below
// k / KV (in that order) for the thread tile at rows i0.., columns j0..
// With XM == GC_X_TAG each batch of loads is issued again until every x
// slot in it carries the tag `tag` (then the products, unchanged).
template <int R, int C, int KV, int LAYOUT, int XM = GC_X_RO>
__device__ __forceinline__ void gc_small_sums(float (&acc)[R * C], const float *x, const float *w, u32 m, u32 n,
                                              u32 k, u32 i0, u32 j0, u32 u0, u32 S, u32 tag = 0) {
    // Steps per loop trip (loads in flight): 1 x 1 tiles take 8 steps in
    // guarded batches (one trip covers K <= 1024 with one warp per column);
    // larger tiles fewer, with a tail loop.
    constexpr bool GUARD = R * C == 1;
    constexpr int U = GUARD ? 8 : (R + C <= 4) ? 4 : (R + C <= 8 ? 2 : 1);
    const u32 steps = k / KV;
    GcTagIn tg{tag, true};
    u32 u = u0;
    if constexpr (GUARD) {
        // Batches of U steps, all loads issued first (guarded at the end of K).
        for (; u < steps; u += U * S) {
            float xv[U][R][KV], wv[U][C][KV];
            for (u32 tries = 0;; ++tries) {
                tg.ok = true;
#pragma unroll
                for (int t = 0; t < U; ++t)
                    if (t == 0 || u + t * S < steps)
                        gc_small_load<R, C, KV, LAYOUT, XM>(xv[t], wv[t], x, w, m, n, k, i0, j0, u + t * S, tg);
                if (XM != GC_X_TAG || tg.ok) break;
                gc_poll_check(tries);
            }
#pragma unroll
            for (int t = 0; t < U; ++t)
                if (t == 0 || u + t * S < steps) gc_small_fma<R, C, KV>(acc, xv[t], wv[t]);
        }
    } else {
        if (U > 1) {
            for (; u + (U - 1) * S < steps; u += U * S) {
                float xv[U][R][KV], wv[U][C][KV];
                for (u32 tries = 0;; ++tries) {
                    tg.ok = true;
#pragma unroll
                    for (int t = 0; t < U; ++t)
                        gc_small_load<R, C, KV, LAYOUT, XM>(xv[t], wv[t], x, w, m, n, k, i0, j0, u + t * S, tg);
                    if (XM != GC_X_TAG || tg.ok) break;
                    gc_poll_check(tries);
                }
#pragma unroll
                for (int t = 0; t < U; ++t) gc_small_fma<R, C, KV>(acc, xv[t], wv[t]);
            }
        }
        for (; u < steps; u += S) {
            float xv[R][KV], wv[C][KV];
            for (u32 tries = 0;; ++tries) {
                tg.ok = true;
                gc_small_load<R, C, KV, LAYOUT, XM>(xv, wv, x, w, m, n, k, i0, j0, u, tg);
                if (XM != GC_X_TAG || tg.ok) break;
                gc_poll_check(tries);
            }
            gc_small_fma<R, C, KV>(acc, xv, wv);
        }
    }
}

// Where the small-batch kernels put an output. A thread stores at most 2
// outputs, its slots t = 0, 1: out.fetch(t, row, col) is called for each
// slot at the start of the kernel (row < m, col < n; a slot may be fetched
// and never stored), and out(t, row, col, v) once for each output the
// thread stores, with its final value (after bias and ReLU). GcStore writes
// y (m x n, row-major); gc_linear_mse_f32 passes its loss epilogue, which
// fetches its targets early.
struct GcStore {
    float *y;
    u32 n;
    __device__ __forceinline__ void fetch(int, u32, u32) const {}
    __device__ __forceinline__ void operator()(int, u32 row, u32 col, float v) const { y[row * n + col] = v; }
};

// Stores the sums of a one-warp tile group after gc_small_exchange (bias,
// then ReLU when `relu`): lane L holds value index L NV + t (V >= 32) or
// L >> (5 - LV) (V < 32, one lane of each run stores).
template <int R, int C, class Out>
__device__ __forceinline__ void gc_small_store_warp(Out &out, const float *b, u32 m, u32 n, u32 i0, u32 j0,
                                                    bool relu, const float (&acc)[R * C], const float (&bias)[2],
                                                    u32 lane) {
    constexpr int V = R * C;
    constexpr int NV = V >= 32 ? V / 32 : 1;
    constexpr int LV = V >= 32 ? 5 : (V >= 16 ? 4 : V >= 8 ? 3 : V >= 4 ? 2 : V >= 2 ? 1 : 0);
    if (V >= 32 || (lane & ((32u >> LV) - 1)) == 0) {
#pragma unroll
        for (int t = 0; t < NV; ++t) {
            const u32 o = V >= 32 ? lane * NV + t : lane >> (5 - LV);
            const u32 row = i0 + o / C, col = j0 + o % C;
            if (row < m && col < n) {
                float v = acc[t];
                if (b != nullptr) v = __fadd_rn(v, bias[t]);
                out(t, row, col, relu ? gc_relu(v) : v);
            }
        }
    }
}

template <int R, int C, int KV, int LAYOUT, class Out>
__device__ __forceinline__ void gc_linear_small(Out &out, const float *x, const float *w, const float *b, u32 m,
                                                u32 n, u32 k, u32 flags, u32 lgr, u32 lgc,
                                                float (*red)[GC_SMALL_MAX_V]) {
    constexpr int V = R * C;
    constexpr int NV = V >= 32 ? V / 32 : 1;        // sums per lane after the exchange
    constexpr int LV = V >= 32 ? 5 : (V >= 16 ? 4 : V >= 8 ? 3 : V >= 4 ? 2 : V >= 2 ? 1 : 0);
    const u32 gc = 1u << lgc, groups = 1u << (lgr + lgc);
    const u32 wg = GC_SMALL_WARPS >> (lgr + lgc);  // warps per group
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const u32 g = warp / wg;
    const u32 i0 = ((blockIdx.y << lgr) + (g >> lgc)) * R;
    const u32 j0 = ((blockIdx.x << lgc) + (g & (gc - 1))) * C;
    const u32 S = 32u * wg;

    // Bias of the outputs this thread stores, and the output's own early
    // loads (out.fetch), issued first.
    float bias[2];
    u32 out_idx[2];  // value index (wg == 1) or output of the block (wg > 1)
#pragma unroll
    for (int t = 0; t < 2; ++t) {
        u32 row, col;
        if (wg == 1) {
            out_idx[t] = V >= 32 ? lane * NV + t : lane >> (5 - LV);
            row = i0 + out_idx[t] / C;
            col = j0 + out_idx[t] % C;
        } else {
            out_idx[t] = tid + GC_SMALL_THREADS * t;
            const u32 gg = out_idx[t] / V, idx = out_idx[t] % V;
            row = ((blockIdx.y << lgr) + (gg >> lgc)) * R + idx / C;
            col = ((blockIdx.x << lgc) + (gg & (gc - 1))) * C + idx % C;
            if (out_idx[t] >= groups * V) row = m;  // no such output
        }
        bias[t] = (b != nullptr && col < n) ? __ldg(b + col) : 0.0f;
        if (row < m && col < n) out.fetch(t, row, col);
    }

    float acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = 0.0f;

    gc_small_sums<R, C, KV, LAYOUT>(acc, x, w, m, n, k, i0, j0, (warp % wg) * 32u + lane, S);
    GC_PDL_TRIGGER();

    gc_small_exchange<V, 0>(acc, lane);

    const bool relu = flags & GC_LIN_RELU;
    if (wg == 1) {
        // One warp per group: lanes store their sums.
        gc_small_store_warp<R, C>(out, b, m, n, i0, j0, relu, acc, bias, lane);
        return;
    }
    if (V >= 32) {
#pragma unroll
        for (int t = 0; t < NV; ++t) red[warp][lane * NV + t] = acc[t];
    } else if ((lane & ((32u >> LV) - 1)) == 0) {
        red[warp][lane >> (5 - LV)] = acc[0];
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < 2; ++t) {
        const u32 o = out_idx[t];
        if (o >= groups * V) break;
        const u32 gg = o / V, idx = o % V;
        const u32 row = (((blockIdx.y << lgr) + (gg >> lgc)) * R) + idx / C;
        const u32 col = (((blockIdx.x << lgc) + (gg & (gc - 1))) * C) + idx % C;
        if (row >= m || col >= n) continue;
        float v = red[gg * wg][idx];
        for (u32 wi = 1; wi < wg; ++wi) v = __fadd_rn(v, red[gg * wg + wi][idx]);
        if (b != nullptr) v = __fadd_rn(v, bias[t]);
        out(t, row, col, relu ? gc_relu(v) : v);
    }
}

// One thread-tile case of the dispatch: (R, C) with the layouts it serves.
#define GC_SMALL_CASE(R_, C_, NK_, KN_)                                                                    \
    case (R_) * 16 + (C_):                                                                                 \
        if (kn) {                                                                                          \
            if constexpr (KN_) {                                                                           \
                if (vec)                                                                                   \
                    gc_linear_small<R_, C_, 4, GC_W_KN>(out, x, w, b, m, n, k, flags, lgr, lgc, red);        \
                else                                                                                       \
                    gc_linear_small<R_, C_, 1, GC_W_KN>(out, x, w, b, m, n, k, flags, lgr, lgc, red);        \
            }                                                                                              \
        } else if constexpr (NK_) {                                                                        \
            if (vec)                                                                                       \
                gc_linear_small<R_, C_, 4, GC_W_NK>(out, x, w, b, m, n, k, flags, lgr, lgc, red);            \
            else                                                                                           \
                gc_linear_small<R_, C_, 1, GC_W_NK>(out, x, w, b, m, n, k, flags, lgr, lgc, red);            \
        }                                                                                                  \
        break;

// The body of gc_linear_small_f32 with its outputs handed to `out`.
template <class Out>
__device__ __forceinline__ void gc_linear_small_any(Out &out, const float *x, const float *w, const float *b, u32 m,
                                                    u32 n, u32 k, u32 flags, u32 config) {
    __shared__ float red[GC_SMALL_WARPS][GC_SMALL_MAX_V];  // per-warp sums, 2 KiB
    const u32 lr = config & 3u, lc = (config >> 2) & 3u, lgr = (config >> 4) & 3u, lgc = (config >> 6) & 3u;
    const bool kn = flags & GC_LIN_W_KN;
    const bool vx = (k & 3) == 0 && gc_aligned16(x, w);
    const bool vec = kn ? vx && (n & 3) == 0 : vx;
    // Thread tiles (R x C): n x k layout 1x1, 4x1, 4x4, 8x4; k x n layout 1x4, 4x4, 8x4.
    switch ((1u << lr) * 16 + (1u << lc)) {
        GC_SMALL_CASE(1, 1, true, false)
        GC_SMALL_CASE(1, 4, false, true)
        GC_SMALL_CASE(4, 1, true, false)
        GC_SMALL_CASE(4, 4, true, true)
        GC_SMALL_CASE(8, 4, true, true)
    default: break;
    }
}

// Weights gc_linear_small_f32 prefetches into L2 at most (16 MB: a third
// of an H100's L2).
#define GC_PREFETCH_MAX_FLOATS (1ull << 22)

// At most 128 registers (2 blocks of 256 threads per SM): the largest thread
// tile, 8 x 4, needs about that many.
extern "C" __global__ void __launch_bounds__(GC_SMALL_THREADS, 2)
    gc_linear_small_f32(float *y, const float *x, const float *w, const float *b, u32 m, u32 n, u32 k, u32 flags,
                        u32 config) {
    // The block's weight rows (n x k layout) into L2 while the kernel before
    // this one may still run (a hint only: L2 is where the device's writes
    // meet, so even weights that kernel updates are never read stale). Only
    // for weights of at most GC_PREFETCH_MAX_FLOATS: larger ones do not stay
    // in L2 until the loads come (on an H100, 4096 x 4096 layers ran within
    // 0.5% with and without the prefetch; the time is DRAM's either way).
    const u32 cols = 1u << ((config >> 2) & 3u) << ((config >> 6) & 3u), j0 = blockIdx.x * cols;
    if (!(flags & GC_LIN_W_KN) && blockIdx.y == 0 && j0 < n && (u64)n * k <= GC_PREFETCH_MAX_FLOATS)
        gc_prefetch_l2(w + (u64)j0 * k, (u64)(n - j0 < cols ? n - j0 : cols) * k * sizeof(float));
    GC_PDL_WAIT();
    if (m == 0 || n == 0 || k == 0 || ((config >> 4) & 3u) + ((config >> 6) & 3u) > 3 || config >> 8 != 0) return;
    GcStore out{y, n};
    gc_linear_small_any(out, x, w, b, m, n, k, flags, config);
}

// gc_linear_small_rows_f32(y, x, w, b, rows, max_m, n, k, flags, config):
// gc_linear_small_f32 with its row count read from device memory when the
// kernel runs (after GC_PDL_WAIT, so a kernel before it may write it):
// m = min(*rows, max_m) (a count above max_m is clamped: the launch and its
// buffers are sized for max_m rows; nothing past row max_m - 1 is read or
// written), so one captured launch serves every m <= max_m. The grid and
// config are those of gc_linear_small_f32 for max_m rows; blocks whose rows
// all lie past m return at once. Each output is the same sum in the same
// order as that launch's (a row's outputs do not depend on the other rows),
// so the first m rows of y are bitwise what gc_linear_small_f32 gives for
// max_m rows; x is read only below row m and y written only below row m.
extern "C" __global__ void __launch_bounds__(GC_SMALL_THREADS, 2)
    gc_linear_small_rows_f32(float *y, const float *x, const float *w, const float *b, const u32 *rows, u32 max_m,
                             u32 n, u32 k, u32 flags, u32 config) {
    const u32 cols = 1u << ((config >> 2) & 3u) << ((config >> 6) & 3u), j0 = blockIdx.x * cols;
    if (!(flags & GC_LIN_W_KN) && blockIdx.y == 0 && j0 < n && (u64)n * k <= GC_PREFETCH_MAX_FLOATS)
        gc_prefetch_l2(w + (u64)j0 * k, (u64)(n - j0 < cols ? n - j0 : cols) * k * sizeof(float));
    GC_PDL_WAIT();
    u32 m = *rows;
    if (m > max_m) m = max_m;
    const u32 block_rows = 1u << (config & 3u) << ((config >> 4) & 3u);
    if (m == 0 || n == 0 || k == 0 || ((config >> 4) & 3u) + ((config >> 6) & 3u) > 3 || config >> 8 != 0 ||
        (u64)blockIdx.y * block_rows >= m)
        return;
    GcStore out{y, n};
    gc_linear_small_any(out, x, w, b, m, n, k, flags, config);
}

// ===========================================================================
// gc_linear_mse_f32(grad, pred, partials, x, w, b, target, m, n, k, config,
//                   grad_scale)
//
// The first launch of a training step of a linear layer with the summed
// squared error: the forward pass of gc_linear_small_f32 (n x k layout, no
// ReLU, same config and launch shape: bitwise its outputs) with a loss
// epilogue instead of the store. For each output p = y[i, j]:
//   d = p - target[i, j],  grad[i, j] = d * (2 * grad_scale),
//   pred[i, j] = p when pred is not null,
// bitwise what gc_mse_f32 computes from y (each thread loads its targets
// at the start, with the bias). Each thread adds d * d (fmaf) of its outputs
// in the order it produces them, gc_block_sum adds those of the block, and
// thread 0 writes the block's sum to partials[by * gridDim.x + bx]; the
// second launch (gc_linear_sgd_f32) adds the partial sums in order into the
// loss, so this launch needs no grid-wide completion step.
// ===========================================================================

// The loss epilogue of gc_linear_mse_f32.
struct GcMseOut {
    float *grad, *pred;
    const float *target;
    u32 n;
    float g2;
    float tv[2];  // the targets of slots 0 and 1
    float sum;    // this thread's d * d, in output order
    __device__ __forceinline__ void fetch(int t, u32 row, u32 col) { tv[t] = __ldg(target + row * n + col); }
    __device__ __forceinline__ void operator()(int t, u32 row, u32 col, float v) {
        const u32 i = row * n + col;
        const float d = __fsub_rn(v, tv[t]);
        sum = fmaf(d, d, sum);
        grad[i] = __fmul_rn(d, g2);
        if (pred != nullptr) pred[i] = v;
    }
};

extern "C" __global__ void __launch_bounds__(GC_SMALL_THREADS, 2)
    gc_linear_mse_f32(float *grad, float *pred, float *partials, const float *x, const float *w, const float *b,
                      const float *target, u32 m, u32 n, u32 k, u32 config, float grad_scale) {
    GC_PDL_WAIT();
    if (m == 0 || n == 0 || k == 0 || ((config >> 4) & 3u) + ((config >> 6) & 3u) > 3 || config >> 8 != 0) return;
    GcMseOut out{grad, pred, target, n, 2.0f * grad_scale, {0.0f, 0.0f}, 0.0f};
    gc_linear_small_any(out, x, w, b, m, n, k, 0u, config);
    const float s = gc_block_sum(out.sum);
    if (threadIdx.x == 0) partials[blockIdx.y * gridDim.x + blockIdx.x] = s;
}

// ===========================================================================
// gc_mlp_f32(y, x, bar, act, w0, b0, .. w3, b3, d01, d23, d4rows, flags)
//
// The forward pass of up to 4 linear layers in one launch, for small batches:
//   h_0 = x (rows x d0), h_{l+1} = act_l(h_l . W_l^T + b_l) (rows x d_{l+1}),
//   y = h_L; W_l is d_{l+1} x d_l (PyTorch layout), b_l may be null.
// d01 = d0 | d1 << 16, d23 = d2 | d3 << 16, d4rows = d4 | rows << 16 (widths
// and rows below 2^16; unused widths 0); flags bits 0..3: ReLU after layer l,
// bits 4..6: L (1..4), bits 8 + 2 l: layer l's warp tile (0: 1 x 1, 1: 4 x 1,
// 2: 4 x 4, 3: 8 x 4, rows x columns).
//
// Launch: cooperative (every block resident: a warp may wait for another
// block's outputs), block 256, a 1-D grid of at most one block per SM (up to
// 255 registers a thread: the whole network's code shares one register
// budget). The warps of the grid take layer l's tiles round-robin (tile
// t = (tile row) * (tile columns) + (tile column) goes to warp t mod P G,
// warp w < P of block b being P b + w, where P = min(8, ceil(tiles / G)):
// a block's warps take neighbouring tiles, and fewer tiles than warps still
// spread over every block). A warp computes its tile exactly as one
// tile group of gc_linear_small_f32 with one warp per group (lanes split K
// in steps, halving exchange, bias, ReLU): the outputs are bitwise those of
// the per-layer launches with the same tiles and 8 groups per block.
//
// No barrier between the layers: the intermediates h_1 .. h_{L-1} are
// tagged slots (GcTagIn: value and tag in one 64-bit word) and a warp
// starts a tile of layer l as soon as the h_l slots it reads carry this
// launch's tag (it loads them again until they do), so a tile waits only for
// the data it reads, and the wait costs no fence, counter or extra round
// trip. The tag is 2 E + 3 (odd: never a zeroed slot's) for the epoch E =
// bar[1], which every warp reads at the start; bar[0] counts the warps that
// have read it (an atomic add after layer 0, ordered after the read by a
// dependency), and the last warp to count sets bar[0] back to 0 and bar[1]
// to E + 1, so each launch's tag differs from the previous one's. bar[0]
// must be 0 before the first launch (every launch leaves it 0); bar[1] may
// hold anything. Layer l < L - 1 writes h_{l+1} at act + the sum of the
// earlier intermediates' ceil(rows d / 32) * 32 slots (8 bytes each; each
// intermediate 256-byte aligned when act is); x, weights and biases are read
// through the read-only path. A wait that never ends (the workspace written
// by something else meanwhile) traps after about 2^26 loads.
// ===========================================================================

#define GC_MLP_MAX_LAYERS 4
#define GC_MLP_ALIGN 32  // slots: intermediates start 256-byte aligned

// Memory operations of the grid barrier, at GPU scope (sm_70 and later).
__device__ __forceinline__ u32 gc_atom_add_acq_rel(u32 *p, u32 v) {
#ifdef __CUDA_ARCH__
    u32 old;
    asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
#else
    return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);  // CPU emulation (kernels/emu)
#endif
}
__device__ __forceinline__ u32 gc_ld_acquire(const u32 *p) {
#ifdef __CUDA_ARCH__
    u32 v;
    asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}
__device__ __forceinline__ void gc_st_release(u32 *p, u32 v) {
#ifdef __CUDA_ARCH__
    asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

// Grid-wide barrier number i (1, 2, ...) of a cooperative launch
// (gc_mlp2_mse_f32), in two halves (arrive, then wait). bar[0] counts the
// arrivals of the launch: barrier i is passed when it reaches i G (G
// blocks); it is zero when the launch starts, and the last block to arrive at
// the launch's final barrier sets it back to zero, so that barrier is also
// passed when it has dropped below its start (nothing else lowers it while
// the launch runs). Thread 0 of each block arrives with one acquire-release
// add (after the block's stores: __syncthreads) and waits with acquire loads;
// the reset is a release store by the block that acquired every arrival.
// Two memory round trips after the last arrival, no fences.
__device__ __forceinline__ void gc_grid_arrive(u32 *bar, u32 i, bool final) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const u32 target = i * gridDim.x;
        if (gc_atom_add_acq_rel(bar, 1u) == target - 1 && final) gc_st_release(bar, 0u);
    }
}

__device__ __forceinline__ void gc_grid_wait(const u32 *bar, u32 i, bool final) {
    if (threadIdx.x == 0) {
        const u32 target = i * gridDim.x;
        for (;;) {
            const u32 v = gc_ld_acquire(bar);
            if (v >= target || (final && v + gridDim.x <= target)) break;
        }
    }
    __syncthreads();
}

// 0, computed from v: an operand that makes an instruction wait for v's load.
__device__ __forceinline__ u32 gc_after(u32 v) {
#ifdef __CUDA_ARCH__
    u32 z;
    asm volatile("and.b32 %0, %1, 0;" : "=r"(z) : "r"(v));
    return z;
#else
    return v & 0u;
#endif
}

// Writes an MLP intermediate as tagged slots (see gc_mlp_f32).
struct GcTagStore {
    u64 *y;
    u32 n, tag;
    __device__ __forceinline__ void fetch(int, u32, u32) const {}
    __device__ __forceinline__ void operator()(int, u32 row, u32 col, float v) const {
        gc_st_slot(y + row * n + col, (u64)tag << 32 | __float_as_uint(v));
    }
};

// One layer y = act(x . W + b) as warp tiles R x C taken round-robin by the
// warps of the grid (see gc_mlp_f32), outputs handed to `out` (see GcStore):
// W n x k (GC_W_NK, PyTorch layout) or k x n (GC_W_KN, C == 4: x . W, the
// input gradient). x is read as XM says (GC_X_*; tagged slots expect `tag`),
// w and b through the read-only path.
template <int R, int C, int LAYOUT = GC_W_NK, int XM = GC_X_PLAIN, class Out>
__device__ __forceinline__ void gc_mlp_tiles(Out &out, const float *x, const float *w, const float *b, u32 m, u32 n,
                                             u32 k, bool relu, u32 tag = 0) {
    constexpr int V = R * C;
    constexpr int NV = V >= 32 ? V / 32 : 1;
    constexpr int LV = V >= 32 ? 5 : (V >= 16 ? 4 : V >= 8 ? 3 : V >= 4 ? 2 : V >= 2 ? 1 : 0);
    const u32 lane = threadIdx.x & 31u;
    const u32 tcols = (n + C - 1) / C, tiles = ((m + R - 1) / R) * tcols;
    // A round gives each block `per` consecutive tiles, one a warp: all 8
    // warps once the tiles fill the grid's warps, fewer (and the rest idle)
    // so that fewer tiles still spread over every block.
    const u32 per = min((u32)GC_SMALL_WARPS, (tiles + gridDim.x - 1) / gridDim.x), warp = threadIdx.x >> 5;
    const bool vec = (k & 3) == 0 && gc_aligned16(x, w) && (LAYOUT == GC_W_NK || (n & 3) == 0);
    const u32 S = 32u;  // a warp's lanes split K
#pragma unroll 1
    for (u32 t = warp < per ? blockIdx.x * per + warp : tiles; t < tiles; t += gridDim.x * per) {
        const u32 i0 = (t / tcols) * R, j0 = (t % tcols) * C;
        float bias[2];
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const u32 o = V >= 32 ? lane * NV + q : lane >> (5 - LV);
            const u32 row = i0 + o / C, col = j0 + o % C;
            bias[q] = (b != nullptr && col < n) ? __ldg(b + col) : 0.0f;
            if (row < m && col < n) out.fetch(q, row, col);
        }
        float acc[V];
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] = 0.0f;
        if (vec)
            gc_small_sums<R, C, 4, LAYOUT, XM>(acc, x, w, m, n, k, i0, j0, lane, S, tag);
        else
            gc_small_sums<R, C, 1, LAYOUT, XM>(acc, x, w, m, n, k, i0, j0, lane, S, tag);
        gc_small_exchange<V, 0>(acc, lane);
        gc_small_store_warp<R, C>(out, b, m, n, i0, j0, relu, acc, bias, lane);
    }
}

// gc_mlp_tiles (n x k layout) with warp tile `code`: 0: 1 x 1, 1: 4 x 1,
// 2: 4 x 4, 3: 8 x 4.
template <int XM = GC_X_PLAIN, class Out>
__device__ __forceinline__ void gc_mlp_layer(u32 code, Out &out, const float *x, const float *w, const float *b, u32 m,
                                             u32 n, u32 k, bool relu, u32 tag = 0) {
    switch (code) {
    case 0: gc_mlp_tiles<1, 1, GC_W_NK, XM>(out, x, w, b, m, n, k, relu, tag); break;
    case 1: gc_mlp_tiles<4, 1, GC_W_NK, XM>(out, x, w, b, m, n, k, relu, tag); break;
    case 2: gc_mlp_tiles<4, 4, GC_W_NK, XM>(out, x, w, b, m, n, k, relu, tag); break;
    default: gc_mlp_tiles<8, 4, GC_W_NK, XM>(out, x, w, b, m, n, k, relu, tag); break;
    }
}

// Layer l of gc_mlp_f32 into `out`: from x (l == 0, read-only path) or from
// the tagged intermediate `in`.
template <class Out>
__device__ __forceinline__ void gc_mlp_step(u32 l, u32 code, Out &out, const float *x, const u64 *in, const float *w,
                                            const float *b, u32 m, u32 n, u32 k, bool relu, u32 tag) {
    if (l == 0)
        gc_mlp_layer<GC_X_RO>(code, out, x, w, b, m, n, k, relu);
    else
        gc_mlp_layer<GC_X_TAG>(code, out, reinterpret_cast<const float *>(in), w, b, m, n, k, relu, tag);
}

extern "C" __global__ void __launch_bounds__(GC_SMALL_THREADS, 1)
    gc_mlp_f32(float *y, const float *x, u32 *bar, float *act, const float *w0, const float *b0, const float *w1,
               const float *b1, const float *w2, const float *b2, const float *w3, const float *b3, u32 d01,
               u32 d23, u32 d4rows, u32 flags) {
    GC_PDL_WAIT();
    const u32 layers = (flags >> 4) & 7u, m = d4rows >> 16;
    if (layers == 0 || layers > GC_MLP_MAX_LAYERS || m == 0) return;
    const u32 epoch = *(volatile u32 *)(bar + 1), tag = 2 * epoch + 3;
    const u64 *in = nullptr;
    u64 *h = reinterpret_cast<u64 *>(act);
    u32 counted = 0;
#pragma unroll 1
    for (u32 l = 0; l < layers; ++l) {
        const float *w = l == 0 ? w0 : l == 1 ? w1 : l == 2 ? w2 : w3;
        const float *b = l == 0 ? b0 : l == 1 ? b1 : l == 2 ? b2 : b3;
        const u32 k = l == 0 ? d01 & 0xffffu : l == 1 ? d01 >> 16 : l == 2 ? d23 & 0xffffu : d23 >> 16;
        const u32 n = l == 0 ? d01 >> 16 : l == 1 ? d23 & 0xffffu : l == 2 ? d23 >> 16 : d4rows & 0xffffu;
        const u32 code = (flags >> (8 + 2 * l)) & 3u;
        const bool relu = (flags >> l) & 1u;
        if (l + 1 == layers) {
            GcStore out{y, n};
            gc_mlp_step(l, code, out, x, in, w, b, m, n, k, relu, tag);
        } else {
            GcTagStore out{h, n, tag};
            gc_mlp_step(l, code, out, x, in, w, b, m, n, k, relu, tag);
        }
        if (l == 0 && (threadIdx.x & 31u) == 0) counted = atomicAdd(bar, 1u + gc_after(epoch)) + 1;
        in = h;
        h += (m * n + GC_MLP_ALIGN - 1) / GC_MLP_ALIGN * GC_MLP_ALIGN;
    }
    if ((threadIdx.x & 31u) == 0 && counted == gridDim.x * GC_SMALL_WARPS) {
        *(volatile u32 *)bar = 0;  // every warp has read the epoch: the next launch's
        *(volatile u32 *)(bar + 1) = epoch + 1;
    }
}

// ===========================================================================
// gc_mlp2_mse_f32(x, w1, b1, w2, b2, target, h, dp, dh, partials, bar, d01, d2m,
//                 tiles, grad_scale)
//
// Launch 1 of a 2-layer MLP's training step (ReLU hidden layer, summed
// squared error), cooperative, three phases with a grid barrier
// (gc_grid_arrive / gc_grid_wait on bar: 4 bytes, zero before the first
// launch, left zero) between them:
//   A: h = relu(x . W1^T + b1)                  h m x k1, W1 k1 x k0
//   B: p = h . W2^T + b2, dp = (p - target) * (2 * grad_scale), and each
//      block's sum of (p - target)^2 in partials[blockIdx.x] (added into the
//      loss by gc_mlp2_sgd_f32)                  dp m x k2, W2 k2 x k1
//   C: dh = h > 0 ? (dp . W2)[i, j] : 0          dh m x k1
// d01 = k0 | k1 << 16, d2m = k2 | m << 16 (all below 2^16); tiles: bits 0-1
// phase A's warp tile, bits 2-3 phase B's (gc_mlp_layer codes), bits 4-5
// phase C's (0: 1 x 4, 1: 4 x 4, 2: 8 x 4; W2 read as k x n). Each phase's
// tiles go round-robin to the warps of the grid as in gc_mlp_f32, each sum
// in the order of gc_linear_small_f32's one-warp tile groups; the loss and
// gradients are those of gc_mse_f32 and gc_relu_backward_f32 applied to the
// outputs. Launch: cooperative, block 256, a 1-D grid of at most two blocks
// per SM (at most 128 registers a thread). h, dp, dh, partials and bar must
// not overlap each other or the inputs.
// ===========================================================================

// The ReLU-backward epilogue of phase C: dh = h > 0 ? v : 0, with h loaded
// early through the coherent path (phase A of the same launch wrote it).
struct GcReluBackOut {
    float *dh;
    const float *h;
    u32 n;
    float hv[2];
    __device__ __forceinline__ void fetch(int t, u32 row, u32 col) { hv[t] = h[row * n + col]; }
    __device__ __forceinline__ void operator()(int t, u32 row, u32 col, float v) {
        dh[row * n + col] = hv[t] > 0.0f ? v : 0.0f;
    }
};

extern "C" __global__ void __launch_bounds__(GC_SMALL_THREADS, 2)
    gc_mlp2_mse_f32(const float *x, const float *w1, const float *b1, const float *w2, const float *b2,
                    const float *target, float *h, float *dp, float *dh, float *partials, u32 *bar, u32 d01, u32 d2m,
                    u32 tiles, float grad_scale) {
    GC_PDL_WAIT();
    const u32 k0 = d01 & 0xffffu, k1 = d01 >> 16, k2 = d2m & 0xffffu, m = d2m >> 16;
    if (k0 == 0 || k1 == 0 || k2 == 0 || m == 0) return;
    GcStore hidden{h, k1};
    gc_mlp_layer(tiles & 3u, hidden, x, w1, b1, m, k1, k0, true);
    gc_grid_arrive(bar, 1, false);
    gc_grid_wait(bar, 1, false);
    GcMseOut mse{dp, nullptr, target, k2, 2.0f * grad_scale, {0.0f, 0.0f}, 0.0f};
    gc_mlp_layer((tiles >> 2) & 3u, mse, h, w2, b2, m, k2, k1, false);
    const float s = gc_block_sum(mse.sum);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
    gc_grid_arrive(bar, 2, true);
    gc_grid_wait(bar, 2, true);
    GcReluBackOut back{dh, h, k1, {0.0f, 0.0f}};
    switch ((tiles >> 4) & 3u) {
    case 0: gc_mlp_tiles<1, 4, GC_W_KN>(back, dp, w2, nullptr, m, k1, k2, false); break;
    case 1: gc_mlp_tiles<4, 4, GC_W_KN>(back, dp, w2, nullptr, m, k1, k2, false); break;
    default: gc_mlp_tiles<8, 4, GC_W_KN>(back, dp, w2, nullptr, m, k1, k2, false); break;
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

// Four consecutive floats at p, columns c..c+3 of a row that is in range
// when `in`, zero past the edge `lim`: one float4 load where the operand is
// 16-byte aligned (`vec`) and all four are in range, else four scalar ones.
__device__ __forceinline__ float4 gc_load4(const float *p, bool in, bool vec, u32 c, u32 lim) {
    if (in && vec && c + 3 < lim) return __ldg(reinterpret_cast<const float4 *>(p));
    float4 v;
    v.x = in && c < lim ? __ldg(p) : 0.0f;
    v.y = in && c + 1 < lim ? __ldg(p + 1) : 0.0f;
    v.z = in && c + 2 < lim ? __ldg(p + 2) : 0.0f;
    v.w = in && c + 3 < lim ? __ldg(p + 3) : 0.0f;
    return v;
}

// The main loop of gc_gemm_reg (below) for output tile (i0, j0), K chunks
// c0 .. c1 - 1 (rows c0 BK .. c1 BK - 1 of the reduction, zeros past k):
// adds the thread's products into acc in increasing k (for its K slice
// `slice` of KS, thread tile (ty, tx)). Ends with a barrier: smem is free
// again when it returns.
template <int BM, int BN, int TM, int TN, int BK, int NT, int LAYOUT, int KS>
__device__ __forceinline__ void gc_gemm_main(float (&acc)[TM][TN], const float *a, const float *bm, u32 m, u32 n,
                                             u32 k, u32 lda, u32 ldb, u32 flags, float *smem, u32 i0, u32 j0,
                                             u32 c0, u32 c1, u32 slice, u32 ty, u32 tx) {
    constexpr int LA = BM + 4, LB = BN + 4;  // k-major rows of As / Bs
    constexpr int A4 = BM * BK / 4 / NT;  // float4 groups per thread
    constexpr int B4 = BN * BK / 4 / NT;
    static_assert(KS * (BM / TM) * (BN / TN) == NT, "one thread tile per thread and slice");
    static_assert(BK % KS == 0, "whole rows per slice");
    static_assert(A4 >= 1 && B4 >= 1, "whole float4 groups");
    float *As = smem;                // [2][BK][LA]
    float *Bs = smem + 2 * BK * LA;  // [2][BK][LB]

    const u32 tid = threadIdx.x;
    const bool ta = LAYOUT >= 0 ? (LAYOUT & GC_GEMM_TRANS_A) != 0 : (flags & GC_GEMM_TRANS_A) != 0;
    const bool tb = LAYOUT >= 0 ? (LAYOUT & GC_GEMM_TRANS_B) != 0 : (flags & GC_GEMM_TRANS_B) != 0;
    const bool va = (lda & 3) == 0 && gc_aligned16(a), vb = (ldb & 3) == 0 && gc_aligned16(bm);
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
                ra[q] = gc_load4(p, gr < k, va, gi, m);
            } else {
                const u32 gi = i0 + e / (BK / 4), gr = r0 + 4 * (e % (BK / 4));
                const float *p = a + gi * lda + gr;
                ra[q] = gc_load4(p, gi < m, va, gr, k);
            }
        }
#pragma unroll
        for (int q = 0; q < B4; ++q) {
            const u32 e = tid + NT * q;
            if (!tb) {
                const u32 gr = r0 + e / (BN / 4), gj = j0 + 4 * (e % (BN / 4));
                const float *p = bm + gr * ldb + gj;
                rb[q] = gc_load4(p, gr < k, vb, gj, n);
            } else {
                const u32 gj = j0 + e / (BK / 4), gr = r0 + 4 * (e % (BK / 4));
                const float *p = bm + gj * ldb + gr;
                rb[q] = gc_load4(p, gj < n, vb, gr, k);
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

    constexpr int SM = 4 * BM / TM, SN = 4 * BN / TN;
    fetch(c0 * BK);
    stage(0);
    __syncthreads();
    for (u32 ch = c0; ch < c1; ++ch) {
        const u32 buf = (ch - c0) & 1u;
        if (ch + 1 < c1) fetch((ch + 1) * BK);
        const float *as = As + buf * BK * LA + slice * (BK / KS) * LA;
        const float *bs = Bs + buf * BK * LB + slice * (BK / KS) * LB;
#pragma unroll
        for (int rr = 0; rr < BK / KS; ++rr) {
            float av[TM], bv[TN];
#pragma unroll
            for (int h = 0; h < TM / 4; ++h) {
                const float4 v = gc_lds4(as + rr * LA + 4 * ty + h * SM);
                av[4 * h] = v.x;
                av[4 * h + 1] = v.y;
                av[4 * h + 2] = v.z;
                av[4 * h + 3] = v.w;
            }
#pragma unroll
            for (int h = 0; h < TN / 4; ++h) {
                const float4 v = gc_lds4(bs + rr * LB + 4 * tx + h * SN);
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
        if (ch + 1 < c1) stage(buf ^ 1u);
        __syncthreads();
    }
}

// LAYOUT: the transpose bits (flags & 3) when known at compile time (the
// code for that layout alone: fewer registers and instructions), -1 to
// read them from flags. KS > 1 splits each K chunk over KS slices of the
// block's threads (slice s takes the chunk's rows s BK / KS .. (s + 1) BK /
// KS - 1, each output summed in increasing k within the slice), added at
// the end in slice order through smem (which must hold BM x BN floats).
template <int BM, int BN, int TM, int TN, int BK, int NT, int LAYOUT = -1, int KS = 1>
__device__ __forceinline__ void gc_gemm_reg(float *cmat, const float *a, const float *bm, const float *bias, u32 m,
                                            u32 n, u32 k, u32 lda, u32 ldb, u32 ldc, u32 flags, float alpha,
                                            float beta, float *smem, u32 blk) {
    constexpr int TX = BN / TN;
    constexpr int PS = NT / KS;  // threads per K slice
    const u32 tid = threadIdx.x;
    const u32 tiles_n = (n + BN - 1) / BN;
    const u32 i0 = (blk / tiles_n) * BM, j0 = (blk % tiles_n) * BN;
    const u32 slice = KS == 1 ? 0u : tid / PS, ts = KS == 1 ? tid : tid % PS;
    const u32 ty = ts / TX, tx = ts % TX;

    // Row / column of acc[i][j] inside the block tile.
    // A thread's rows (columns) come in runs of 4, spaced SM = 4 BM / TM
    // (SN = 4 BN / TN) apart, so a warp's shared-memory reads are contiguous.
    constexpr int SM = 4 * BM / TM, SN = 4 * BN / TN;
    auto trow = [&](int i) { return 4 * ty + (i & 3) + (i >> 2) * SM; };
    auto tcol = [&](int j) { return 4 * tx + (j & 3) + (j >> 2) * SN; };
    const bool vc = (ldc & 3) == 0 && gc_aligned16(cmat);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    gc_gemm_main<BM, BN, TM, TN, BK, NT, LAYOUT, KS>(acc, a, bm, m, n, k, lda, ldb, flags, smem, i0, j0, 0u,
                                                     (k + BK - 1) / BK, slice, ty, tx);
    GC_PDL_TRIGGER();

    if (KS > 1) {
        // Slices 1 .. KS - 1 hand their sums to slice 0, in order.
        float *red = smem;  // [BM][BN], free after the main loop's last barrier
#pragma unroll 1
        for (u32 s = 1; s < KS; ++s) {
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
                                               float beta, float *smem, u32 blk) {
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
    const u32 i0 = (blk / tiles_n) * BM, j0 = (blk % tiles_n) * BN;
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
    GC_PDL_TRIGGER();

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

// Output tile `blk` of gc_gemm_f32 with block tile `tile`.
__device__ __forceinline__ void gc_gemm_tile(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n,
                                             u32 k, u32 lda, u32 ldb, u32 ldc, u32 flags, float alpha, float beta,
                                             u32 tile, float *smem, u32 blk) {
    if (tile == 0)
        gc_gemm_reg<128, 128, 8, 8, 8, GC_GEMM_THREADS>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem,
                                                        blk);
    else if (tile == 1)
        gc_gemm_reg<64, 64, 4, 4, 16, GC_GEMM_THREADS>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem,
                                                       blk);
    else if (tile == 2)
        gc_gemm_sliced(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem, blk);
}

// At most 128 registers (2 blocks per SM; tile 0 needs about that many).
extern "C" __global__ void __launch_bounds__(GC_GEMM_THREADS, 2)
    gc_gemm_f32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k, u32 lda,
                u32 ldb, u32 ldc, u32 flags, float alpha, float beta, u32 tile) {
    GC_PDL_WAIT();
    __shared__ __align__(16) float smem[GC_GEMM_SMEM];
    if (m == 0 || n == 0 || k == 0) return;
    gc_gemm_tile(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, tile, smem, blockIdx.x);
}

// ===========================================================================
// gc_gemm_wide_f32 / gc_gemm_mid_f32(c, a, b, bias, m, n, k, lda, ldb, ldc,
//                                    flags, alpha, beta, tile)
//
// gc_gemm_f32 (same arguments and result) for the linear layer's layout
// only, A m x k and B n x k (flags & 3 == GC_GEMM_TRANS_B; with any other
// transpose bits they do nothing), compiled for that layout alone (fewer
// registers and instructions), with more block tiles: a launch takes the
// largest tile that still gives about one block per SM (the best tile of
// each shape measured on an H100, perf/TUNING.md).
//
//   gc_gemm_wide_f32 (one block per SM, up to 255 registers):
//     tile 0: 128 x 256 (8 x 16 per thread, K chunks of 8),
//     tile 1: 128 x 128 (8 x 8, chunks of 8),
//     tile 2: 64 x 64 in 4 K slices (8 x 8 per thread and slice, chunks of
//             32, slice s taking rows 8 s .. 8 s + 7 of each chunk);
//   gc_gemm_mid_f32 (two blocks per SM, up to 128 registers):
//     tile 0: 64 x 128 (4 x 8, chunks of 16).
//
// Tiles other than wide tile 2 sum each output in increasing k in one
// thread, as gc_gemm_f32's tiles 0 and 1: the results are bitwise theirs.
// Wide tile 2 sums as gc_gemm_f32's tile 2 (the 32 x 32 tile with 4 K
// slices): bitwise its results.
//
// Launch: block 256, 1-D grid of ceil(m / TM) * ceil(n / TN) blocks for
// the tile's TM x TN (rows x columns of C), no dynamic shared memory.
// ===========================================================================

// One tile of the wide / mid kernels (the linear layout; see above).
#define GC_GEMM_NT_TILE(BM, BN, TM, TN, BK, KS)                                                                   \
    gc_gemm_reg<BM, BN, TM, TN, BK, GC_GEMM_THREADS, GC_GEMM_TRANS_B, KS>(c, a, b, bias, m, n, k, lda, ldb, ldc,    \
                                                                          flags, alpha, beta, smem, blockIdx.x)

extern "C" __global__ void __launch_bounds__(GC_GEMM_THREADS, 1)
    gc_gemm_wide_f32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k, u32 lda,
                     u32 ldb, u32 ldc, u32 flags, float alpha, float beta, u32 tile) {
    GC_PDL_WAIT();
    // Tile 2's two stages of 32 x (64 + 4) for A and B (the most of the three).
    __shared__ __align__(16) float smem[2 * 32 * (64 + 4) * 2];
    if (m == 0 || n == 0 || k == 0 || (flags & 3u) != GC_GEMM_TRANS_B) return;
    if (tile == 0)
        GC_GEMM_NT_TILE(128, 256, 8, 16, 8, 1);
    else if (tile == 1)
        GC_GEMM_NT_TILE(128, 128, 8, 8, 8, 1);
    else if (tile == 2)
        GC_GEMM_NT_TILE(64, 64, 8, 8, 32, 4);
}

// gc_gemm_wide_f32's tile 0 as an entry point of its own (the same
// arguments and bits; `tile` must be 0, other values do nothing): a
// kernel's registers are allocated for its largest path, and on an H100
// tile 0 alone (202 registers) ran 2-12% faster than inside
// gc_gemm_wide_f32 (228; perf/TUNING.md). Tile 1 alone (135 registers)
// ran 1-3% slower than inside it, so it stays there.
extern "C" __global__ void __launch_bounds__(GC_GEMM_THREADS, 1)
    gc_gemm_128x256_f32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k, u32 lda,
                        u32 ldb, u32 ldc, u32 flags, float alpha, float beta, u32 tile) {
    GC_PDL_WAIT();
    __shared__ __align__(16) float smem[2 * 8 * (128 + 4) + 2 * 8 * (256 + 4)];
    if (m == 0 || n == 0 || k == 0 || (flags & 3u) != GC_GEMM_TRANS_B || tile != 0) return;
    GC_GEMM_NT_TILE(128, 256, 8, 16, 8, 1);
}

extern "C" __global__ void __launch_bounds__(GC_GEMM_THREADS, 2)
    gc_gemm_mid_f32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k, u32 lda,
                    u32 ldb, u32 ldc, u32 flags, float alpha, float beta, u32 tile) {
    GC_PDL_WAIT();
    __shared__ __align__(16) float smem[2 * 16 * (64 + 4) + 2 * 16 * (128 + 4)];
    if (m == 0 || n == 0 || k == 0 || (flags & 3u) != GC_GEMM_TRANS_B) return;
    if (tile == 0) GC_GEMM_NT_TILE(64, 128, 4, 8, 16, 1);
}

// ===========================================================================
// gc_linear_cluster_f32(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha,
//                       beta, tile)
//
// gc_gemm_f32's linear layout (same arguments; transpose bits 2), or with
// tiles 0 and 2 its plain layout C = A . B (transpose bits 0: the input
// gradient dy . W, B k x n; other layouts and tiles do nothing), with K
// split over the blocks of a thread-block cluster (compute capability 9.0;
// below that the kernel traps, and the launcher never picks it there):
// the S blocks of a cluster (S = the cluster's size, 1-8, along x) compute
// the same output tile, block s (its rank in the cluster) over the K chunks
// s P .. (s + 1) P - 1 (P = ceil(chunks / S), chunks of BK; zeros past k),
// each output summed in increasing k in one thread as gc_gemm_reg does;
// each block stores its partial tile in its shared memory, the cluster
// synchronizes, and block s reduces the s-th of S equal shares of the tile
// (row-major), reading every block's partial through distributed shared
// memory and adding them in rank order 0, 1, .., S - 1 (no atomics, no
// global partials: the same bits on every run for a given shape and S),
// then applies the epilogue (alpha, beta C, bias, ReLU) as gc_gemm_f32.
// A second cluster barrier keeps every block's shared memory alive until
// all blocks have read it.
//
//   tile 0: 128 x 64 (8 x 4 per thread, K chunks of 16);
//   tile 1: 64 x 64 (4 x 4 per thread, K chunks of 16);
//   tile 2: 64 x 64 (4 x 4 per thread, K chunks of 32: half the barriers
//           and twice the bytes per fetch of tile 1; the same products in
//           the same order, so tile 1's bits where k is a multiple of 32
//           times the cluster size).
//   tile 3: tile 2's products and bits, its K chunks copied into shared
//           memory by cp.async two stages deep (gc_cluster_kvec) where k,
//           lda and ldb are multiples of 4 and a, b 16-byte aligned; tile 2
//           itself elsewhere.
//
// Launch: block 256, 1-D grid of S * ceil(m / BM) * ceil(n / BN) blocks
// with the cluster dimension (S, 1, 1); cluster c computes output tile c
// (row-major over the tiles, as gc_gemm_reg's blk). No dynamic shared
// memory.
// ===========================================================================

// GC_CLUSTER_HELPERS: where the sm_90 helpers below exist: the compute_90
// device pass and nvcc's host pass (so host-side code that includes this
// file, like perf/train_harness, sees them); not the compute_75 pass or
// the CPU emulation.
#if defined(__CUDACC__) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900)
#define GC_CLUSTER_HELPERS 1
#endif

#ifdef GC_CLUSTER_HELPERS
// This block's rank in its cluster, the cluster's size, and its index.
__device__ __forceinline__ u32 gc_cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 gc_cluster_size() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 gc_cluster_id() {
    u32 r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
// Every thread of the cluster arrives (release: its shared and global
// writes before are visible to the cluster) and waits for all (acquire).
__device__ __forceinline__ void gc_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// 16 bytes at `p` (this block's shared memory) in the shared memory of the
// cluster's block `rank` (distributed shared memory).
__device__ __forceinline__ float4 gc_ld_cluster4(const float *p, u32 rank) {
    u32 remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                 : "=r"(remote)
                 : "r"((u32)__cvta_generic_to_shared(p)), "r"(rank));
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(remote)
                 : "memory");
    return v;
}
// 16 bytes global -> shared, asynchronous (cp.async; zeros when !in:
// nothing is read then, so `src` need only be a valid address).
__device__ __forceinline__ void gc_cp_async16(float *dst, const float *src, bool in) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((u32)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(in ? 16 : 0)
                 : "memory");
}
// Closes this thread's group of cp.async copies issued since the last.
__device__ __forceinline__ void gc_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most N of this thread's newest copy groups are in flight.
template <int N>
__device__ __forceinline__ void gc_cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#endif

#ifdef GC_CLUSTER_HELPERS
// The end of a gc_linear_cluster_f32 tile: every block of the cluster has
// its partial BM x BN tile (row-major) in its shared memory; block `rank`
// adds its share of the tile over the cluster's blocks in rank order
// through distributed shared memory and writes it with the epilogue
// (alpha, beta C, bias, ReLU). Cluster barriers before (the partials are
// complete) and after (no block leaves while another reads its partial).
template <int BM, int BN, int NT>
__device__ __forceinline__ void gc_cluster_reduce(float *cmat, const float *bias, u32 m, u32 n, u32 ldc, u32 flags,
                                                  float alpha, float beta, float *smem, u32 i0, u32 j0) {
    const u32 tid = threadIdx.x, rank = gc_cluster_rank(), size = gc_cluster_size();
    gc_cluster_sync();

    // This block's share of the tile: float4 groups g0 .. g1 - 1 (row-major).
    const bool relu = flags & GC_GEMM_RELU;
    const bool vc = (ldc & 3) == 0 && gc_aligned16(cmat);
    constexpr u32 GROUPS = BM * BN / 4;
    const u32 share = (GROUPS + size - 1) / size, g0 = min(GROUPS, rank * share), g1 = min(GROUPS, g0 + share);
    for (u32 g = g0 + tid; g < g1; g += NT) {
        const u32 e = 4 * g, r = e / BN, col = e % BN;
        float4 v = gc_ld_cluster4(smem + e, 0);
        for (u32 s = 1; s < size; ++s) {
            const float4 w = gc_ld_cluster4(smem + e, s);
            v.x = __fadd_rn(v.x, w.x);
            v.y = __fadd_rn(v.y, w.y);
            v.z = __fadd_rn(v.z, w.z);
            v.w = __fadd_rn(v.w, w.w);
        }
        const u32 gi = i0 + r, gj = j0 + col;
        if (gi >= m) continue;
        float *p = cmat + gi * ldc + gj;
        const float sum[4] = {v.x, v.y, v.z, v.w};
        float old[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (vc && gj + 3 < n) {
            if (beta != 0.0f) {
                const float4 o = *reinterpret_cast<const float4 *>(p);
                old[0] = o.x;
                old[1] = o.y;
                old[2] = o.z;
                old[3] = o.w;
            }
            float4 o;
            o.x = gc_gemm_out(sum[0], alpha, beta, old[0], bias, gj, relu);
            o.y = gc_gemm_out(sum[1], alpha, beta, old[1], bias, gj + 1, relu);
            o.z = gc_gemm_out(sum[2], alpha, beta, old[2], bias, gj + 2, relu);
            o.w = gc_gemm_out(sum[3], alpha, beta, old[3], bias, gj + 3, relu);
            *reinterpret_cast<float4 *>(p) = o;
        } else {
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                if (gj + u >= n) break;
                if (beta != 0.0f) old[u] = p[u];
                p[u] = gc_gemm_out(sum[u], alpha, beta, old[u], bias, gj + u, relu);
            }
        }
    }
    // No block leaves while another may still read its partial tile.
    gc_cluster_sync();
}
#endif

// One output tile of gc_linear_cluster_f32 (see above) for the transpose
// bits LAYOUT; smem holds max(the main loop's staging, BM x BN) floats.
template <int BM, int BN, int TM, int TN, int BK, int NT, int LAYOUT = GC_GEMM_TRANS_B>
__device__ __forceinline__ void gc_cluster_tile(float *cmat, const float *a, const float *bm, const float *bias,
                                                u32 m, u32 n, u32 k, u32 lda, u32 ldb, u32 ldc, u32 flags,
                                                float alpha, float beta, float *smem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int TX = BN / TN, SM = 4 * BM / TM, SN = 4 * BN / TN;
    const u32 tid = threadIdx.x, rank = gc_cluster_rank(), size = gc_cluster_size(), blk = gc_cluster_id();
    const u32 tiles_n = (n + BN - 1) / BN;
    const u32 i0 = (blk / tiles_n) * BM, j0 = (blk % tiles_n) * BN;
    const u32 ty = tid / TX, tx = tid % TX;
    const u32 chunks = (k + BK - 1) / BK, per = (chunks + size - 1) / size;
    const u32 c0 = min(chunks, rank * per), c1 = min(chunks, c0 + per);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    if (c0 < c1)
        gc_gemm_main<BM, BN, TM, TN, BK, NT, LAYOUT, 1>(acc, a, bm, m, n, k, lda, ldb, flags, smem, i0, j0, c0, c1,
                                                        0u, ty, tx);
    GC_PDL_TRIGGER();

    // The partial tile, row-major BM x BN, in this block's shared memory
    // (free after the main loop's last barrier).
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int h = 0; h < TN / 4; ++h)
            gc_sts4(smem + (4 * ty + (i & 3) + (i >> 2) * SM) * BN + 4 * tx + h * SN,
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]));
    gc_cluster_reduce<BM, BN, NT>(cmat, bias, m, n, ldc, flags, alpha, beta, smem, i0, j0);
#else
    (void)cmat, (void)a, (void)bm, (void)bias, (void)m, (void)n, (void)k, (void)lda, (void)ldb, (void)ldc;
    (void)flags, (void)alpha, (void)beta, (void)smem;
#ifdef __CUDA_ARCH__
    asm volatile("trap;");
#endif
#endif
}

// The shared memory gc_cluster_kvec<BK, ST> stages in: ST chunks of 64
// x rows and 64 W rows, BK floats each plus 4 of padding.
#define GC_KVEC_SMEM(BK, ST) ((ST) * 128 * ((BK) + 4))

// Whether gc_cluster_kvec takes these operands: k and both leading
// dimensions multiples of 4, a and b 16-byte aligned.
__device__ __forceinline__ bool gc_cluster_kvec_ok(const float *a, const float *b, u32 k, u32 lda, u32 ldb) {
    return (k & 3) == 0 && (lda & 3) == 0 && (ldb & 3) == 0 && gc_aligned16(a, b);
}

// One 64 x 64 output tile of gc_linear_cluster_f32 with a cp.async pipeline
// of ST stages (tile 3): the block's x and W chunks of BK land in shared
// memory as they lie in memory (rows along k: no transposes, no register
// staging), ST - 1 chunks ahead of the products, and a thread's 4 x 4
// outputs (rows ty + 16 i, columns tx + 16 j) take float4s along k from
// both, 8 LDS.128 per 64 FMAs. Each output is summed in increasing k in
// one thread from the same K split as gc_cluster_tile with chunks of BK,
// so with BK = 32 the bits are tile 2's. Needs gc_cluster_kvec_ok; smem
// holds GC_KVEC_SMEM(BK, ST) floats (at least 64 x 64).
template <int BK, int ST>
__device__ __forceinline__ void gc_cluster_kvec(float *cmat, const float *a, const float *b, const float *bias,
                                                u32 m, u32 n, u32 k, u32 lda, u32 ldb, u32 ldc, u32 flags,
                                                float alpha, float beta, float *smem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = 64, BN = 64, L = BK + 4, Q = BK / 4;
    static_assert(GC_KVEC_SMEM(BK, ST) >= BM * BN, "the partial tile fits the staging");
    static_assert((BM + BN) * Q % GC_GEMM_THREADS == 0, "whole copy rounds");
    const u32 tid = threadIdx.x, rank = gc_cluster_rank(), size = gc_cluster_size(), blk = gc_cluster_id();
    const u32 tiles_n = (n + BN - 1) / BN, i0 = (blk / tiles_n) * BM, j0 = (blk % tiles_n) * BN;
    const u32 ty = tid / 16, tx = tid % 16;
    const u32 chunks = (k + BK - 1) / BK, per = (chunks + size - 1) / size;
    const u32 c0 = min(chunks, rank * per), c1 = min(chunks, c0 + per), nch = c1 - c0;
    float *As = smem, *Bs = smem + ST * BM * L;
    // Chunk `ch` into stage `buf`: rows past m or n and columns past k are
    // zeros (k % 4 == 0, so a float4 is wholly in or out).
    auto issue = [&](u32 ch, u32 buf) {
        float *as = As + buf * BM * L, *bs = Bs + buf * BN * L;
#pragma unroll
        for (int q = 0; q < (BM + BN) * Q / GC_GEMM_THREADS; ++q) {
            const u32 e = tid + GC_GEMM_THREADS * q, row = e / Q, col = 4 * (e % Q), r = ch * BK + col;
            if (row < BM) {
                const bool in = i0 + row < m && r < k;
                gc_cp_async16(as + row * L + col, in ? a + (i0 + row) * lda + r : a, in);
            } else {
                const bool in = j0 + row - BM < n && r < k;
                gc_cp_async16(bs + (row - BM) * L + col, in ? b + (j0 + row - BM) * ldb + r : b, in);
            }
        }
    };
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
#pragma unroll
    for (int s = 0; s + 1 < ST; ++s) {
        if ((u32)s < nch) issue(c0 + s, s);
        gc_cp_commit();
    }
    for (u32 t = 0; t < nch; ++t) {
        gc_cp_wait<ST - 2>();
        __syncthreads();  // chunk t landed for all; stage (t - 1) % ST is free
        if (t + ST - 1 < nch) issue(c0 + t + ST - 1, (t + ST - 1) % ST);
        gc_cp_commit();  // an empty group past the last chunk keeps the count
        const float *as = As + (t % ST) * BM * L + ty * L, *bs = Bs + (t % ST) * BN * L + tx * L;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 4) {
            float4 av[4], bv[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) av[i] = gc_lds4(as + 16 * i * L + kk);
#pragma unroll
            for (int j = 0; j < 4; ++j) bv[j] = gc_lds4(bs + 16 * j * L + kk);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    acc[i][j] = fmaf(av[i].x, bv[j].x, acc[i][j]);
                    acc[i][j] = fmaf(av[i].y, bv[j].y, acc[i][j]);
                    acc[i][j] = fmaf(av[i].z, bv[j].z, acc[i][j]);
                    acc[i][j] = fmaf(av[i].w, bv[j].w, acc[i][j]);
                }
        }
    }
    gc_cp_wait<0>();
    __syncthreads();  // the stages are free for the partial tile
    GC_PDL_TRIGGER();
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) smem[(ty + 16 * i) * BN + tx + 16 * j] = acc[i][j];
    gc_cluster_reduce<BM, BN, GC_GEMM_THREADS>(cmat, bias, m, n, ldc, flags, alpha, beta, smem, i0, j0);
#else
    (void)cmat, (void)a, (void)b, (void)bias, (void)m, (void)n, (void)k, (void)lda, (void)ldb, (void)ldc;
    (void)flags, (void)alpha, (void)beta, (void)smem;
#ifdef __CUDA_ARCH__
    asm volatile("trap;");
#endif
#endif
}

extern "C" __global__ void __launch_bounds__(GC_GEMM_THREADS, 2)
    gc_linear_cluster_f32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k,
                          u32 lda, u32 ldb, u32 ldc, u32 flags, float alpha, float beta, u32 tile) {
    GC_PDL_WAIT();
    // The most of any tile: tile 3's two stages, 2 x 128 x (32 + 4) floats
    // (tile 2's staging is 2 x 32 x (68 + 68), tile 0's partial tile 8192).
    __shared__ __align__(16) float smem[GC_KVEC_SMEM(32, 2)];
    if (m == 0 || n == 0 || k == 0) return;
    if ((flags & 3u) == 0u) {
        // C = A . B (the input gradient dy . W): tiles 0 and 2.
        if (tile == 0)
            gc_cluster_tile<128, 64, 8, 4, 16, GC_GEMM_THREADS, 0>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha,
                                                                   beta, smem);
        else if (tile == 2)
            gc_cluster_tile<64, 64, 4, 4, 32, GC_GEMM_THREADS, 0>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha,
                                                                  beta, smem);
        return;
    }
    if ((flags & 3u) != GC_GEMM_TRANS_B) return;
    if (tile == 0)
        gc_cluster_tile<128, 64, 8, 4, 16, GC_GEMM_THREADS>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta,
                                                            smem);
    else if (tile == 1)
        gc_cluster_tile<64, 64, 4, 4, 16, GC_GEMM_THREADS>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta,
                                                           smem);
    else if (tile == 3 && gc_cluster_kvec_ok(a, b, k, lda, ldb))
        gc_cluster_kvec<32, 2>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta, smem);
    else if (tile == 2 || tile == 3)
        gc_cluster_tile<64, 64, 4, 4, 32, GC_GEMM_THREADS>(c, a, b, bias, m, n, k, lda, ldb, ldc, flags, alpha, beta,
                                                           smem);
}

// ===========================================================================
// The weight-gradient SGD of a layer for short batches (m <= 64 rows): the
// BJ x BR output tile `blk` (tiles row-major over ceil(n / BJ) x ceil(k /
// BR)) of
//   W[j, r] = fmaf(-lr, sum_{i < m} dy[i, j] x[i, r] (increasing i), W[j, r])
// (W n x k, dy m x n, x m x k): gc_gemm_f32's weight-gradient SGD (C = W,
// A = dy transposed, B = x, alpha = -lr, beta = 1) with the same products
// in the same order, so bitwise its result, but with the whole reduction
// (m <= 64 rows of dy and x) staged in shared memory at once (float4 loads,
// no transposes: both are k-major already), the W tile loaded before them,
// and no barrier in the products. A thread owns TJ x TR outputs (rows in
// runs of 4 spaced 4 BJ / TJ apart, columns likewise, as gc_gemm_reg's).
// Needs n % 4 == 0, k % 4 == 0 and w, dy, x 16-byte aligned
// (gc_wsgd_staged_ok); smem holds GC_WSGD_SMEM(BJ, BR) floats. The products
// are those of gc_gemm_f32's tiles, so results do not depend on BJ, BR.
// ===========================================================================

#define GC_WSGD_ROWS 64  // the most rows (the reduction's length) staged
#define GC_WSGD_SMEM(BJ, BR) (GC_WSGD_ROWS * ((BJ) + 4 + (BR) + 4))

// Whether gc_wsgd_staged takes these sizes and pointers.
__device__ __forceinline__ bool gc_wsgd_staged_ok(const float *w, const float *dy, const float *x, u32 m, u32 n,
                                                  u32 k) {
    return m <= GC_WSGD_ROWS && n % 4 == 0 && k % 4 == 0 && gc_aligned16(w, dy, x);
}

template <int BJ, int BR, int TJ, int TR, int NT>
__device__ __forceinline__ void gc_wsgd_staged(float *w, const float *dy, const float *x, u32 m, u32 n, u32 k,
                                               float lr, float *smem, u32 blk) {
    constexpr int LA = BJ + 4, LB = BR + 4, TX = BR / TR, SJ = 4 * BJ / TJ, SR = 4 * BR / TR;
    constexpr int GA = GC_WSGD_ROWS * BJ / 4 / NT, GB = GC_WSGD_ROWS * BR / 4 / NT;  // staged groups a thread
    static_assert((BJ / TJ) * (BR / TR) == NT, "one thread tile per thread");
    float *As = smem, *Bs = smem + GC_WSGD_ROWS * LA;
    const u32 tid = threadIdx.x, tiles_r = (k + BR - 1) / BR;
    const u32 j0 = (blk / tiles_r) * BJ, r0 = (blk % tiles_r) * BR;
    const u32 ty = tid / TX, tx = tid % TX;
    auto jrow = [&](int a) { return 4 * ty + (a & 3) + (a >> 2) * SJ; };

    float4 wv[TJ][TR / 4];
#pragma unroll
    for (int a = 0; a < TJ; ++a)
#pragma unroll
        for (int h = 0; h < TR / 4; ++h) {
            const u32 j = j0 + jrow(a), r = r0 + 4 * tx + h * SR;
            wv[a][h] = j < n && r < k ? *reinterpret_cast<const float4 *>(w + j * k + r) : make_float4(0, 0, 0, 0);
        }
    float4 ra[GA], rb[GB];
#pragma unroll
    for (int q = 0; q < GA; ++q) {
        const u32 g = tid + NT * q, i = g / (BJ / 4), j = j0 + 4 * (g % (BJ / 4));
        ra[q] = i < m && j < n ? __ldg(reinterpret_cast<const float4 *>(dy + i * n + j)) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int q = 0; q < GB; ++q) {
        const u32 g = tid + NT * q, i = g / (BR / 4), r = r0 + 4 * (g % (BR / 4));
        rb[q] = i < m && r < k ? __ldg(reinterpret_cast<const float4 *>(x + i * k + r)) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int q = 0; q < GA; ++q) {
        const u32 g = tid + NT * q;
        gc_sts4(As + (g / (BJ / 4)) * LA + 4 * (g % (BJ / 4)), ra[q]);
    }
#pragma unroll
    for (int q = 0; q < GB; ++q) {
        const u32 g = tid + NT * q;
        gc_sts4(Bs + (g / (BR / 4)) * LB + 4 * (g % (BR / 4)), rb[q]);
    }
    __syncthreads();

    float acc[TJ][TR];
#pragma unroll
    for (int a = 0; a < TJ; ++a)
#pragma unroll
        for (int c = 0; c < TR; ++c) acc[a][c] = 0.0f;
    // The step below is gc_gemm_main's inner step written out again on
    // purpose: one __forceinline__ helper for both changed NVVM's code for
    // every GEMM kernel (gc_gemm_f32's 128 x 128 tile 3% slower on an H100,
    // h100/outer_fma_ab.json) or, in another form, made this kernel spill.
#pragma unroll 4
    for (u32 i = 0; i < m; ++i) {
        float av[TJ], bv[TR];
#pragma unroll
        for (int h = 0; h < TJ / 4; ++h) {
            const float4 v = gc_lds4(As + i * LA + 4 * ty + h * SJ);
            av[4 * h] = v.x;
            av[4 * h + 1] = v.y;
            av[4 * h + 2] = v.z;
            av[4 * h + 3] = v.w;
        }
#pragma unroll
        for (int h = 0; h < TR / 4; ++h) {
            const float4 v = gc_lds4(Bs + i * LB + 4 * tx + h * SR);
            bv[4 * h] = v.x;
            bv[4 * h + 1] = v.y;
            bv[4 * h + 2] = v.z;
            bv[4 * h + 3] = v.w;
        }
#pragma unroll
        for (int a = 0; a < TJ; ++a)
#pragma unroll
            for (int c = 0; c < TR; ++c) acc[a][c] = fmaf(av[a], bv[c], acc[a][c]);
    }
    GC_PDL_TRIGGER();
#pragma unroll
    for (int a = 0; a < TJ; ++a)
#pragma unroll
        for (int h = 0; h < TR / 4; ++h) {
            const u32 j = j0 + jrow(a), r = r0 + 4 * tx + h * SR;
            if (j >= n || r >= k) continue;
            const float4 o = wv[a][h];
            *reinterpret_cast<float4 *>(w + j * k + r) =
                make_float4(fmaf(-lr, acc[a][4 * h], o.x), fmaf(-lr, acc[a][4 * h + 1], o.y),
                            fmaf(-lr, acc[a][4 * h + 2], o.z), fmaf(-lr, acc[a][4 * h + 3], o.w));
        }
}

// ===========================================================================
// gc_linear_sgd_f32(w, b, dy, x, m, n, k, lr, tile, bias_ty, loss, partials,
//                   parts)
//
// The second launch of a linear layer's training step: the SGD update of
// its weights and bias from the output gradient dy (m x n) and the input x
// (m x k), in one launch, without materialising the gradients:
//   W[j, r] = fmaf(-lr, sum_i dy[i, j] x[i, r], W[j, r])   (W n x k)
//   b[j]    = fmaf(-lr, sum_i dy[i, j], b[j])             (b may be null)
// and, when loss is not null, the loss: block 0 adds partials[0 .. parts)
// (gc_linear_mse_f32's block sums) in a fixed order (thread t takes t,
// t + 256, ..., then gc_block_sum) into loss[0]. The next LB = ceil(n / 32)
// blocks (none when b is null) update
// the bias: block j takes columns 32 j .. 32 j + 31 with gc_column_sum's
// order for TY = bias_ty (thread t is lane t % 32 of thread row t / 32 of
// 8), so b is bitwise what gc_bias_sgd_f32 with block (32, bias_ty) gives.
// The blocks after those are the output tiles of gc_gemm_f32 for C = W (m' = n,
// n' = k, k' = m, A = dy transposed, B = x, alpha = -lr, beta = 1) with block
// tile `tile` (0, 1, 2: gc_gemm_f32's; 3: 64 x 64 tiles of gc_wsgd_staged,
// for m <= 64, with gc_gemm_f32's tile 1 where gc_wsgd_staged_ok fails):
// W is bitwise what gc_gemm_f32 with those arguments (the weight-gradient
// SGD of gc_op_linear_weight_sgd) gives, whatever the tile.
//
// "Block" above is a role: block b takes role b, or role G - 1 - b with
// bit 2 of `tile` (GC_SGD_REVERSED, gc_sgd_role; the tile is bits 0-1).
//
// Launch: block 256, 1-D grid of (loss ? 1 : 0) + LB + ceil(n / T) *
// ceil(k / T) blocks (T the tile's edge: 128, 64, 32, 64), no dynamic
// shared memory. W, b and loss must not overlap dy, x or partials.
// ===========================================================================

// Block 0 of a step's update when it writes the loss: loss[0] = the sum of
// partials[0 .. parts) (thread t takes t, t + 256, ..., then gc_block_sum).
__device__ __forceinline__ void gc_loss_block(float *loss, const float *partials, u32 parts) {
    float s = 0.0f;
    for (u32 i = threadIdx.x; i < parts; i += blockDim.x) s = __fadd_rn(s, __ldg(partials + i));
    const float total = gc_block_sum(s);
    if (threadIdx.x == 0) loss[0] = total;
}

// Blocks of one layer's update: ceil(n / 32) bias blocks (when b is not
// null), then the weight GEMM's tiles (edge T of `tile`).
__device__ __forceinline__ u32 gc_layer_sgd_blocks(const float *b, u32 n, u32 k, u32 tile) {
    const u32 t = tile == 0 ? 128u : tile == 2 ? 32u : 64u;
    return (b != nullptr ? (n + 31) / 32 : 0u) + ((n + t - 1) / t) * ((k + t - 1) / t);
}

// Block `blk` (< gc_layer_sgd_blocks) of one layer's update (see
// gc_linear_sgd_f32).
__device__ __forceinline__ void gc_layer_sgd(u32 blk, float *w, float *b, const float *dy, const float *x, u32 m,
                                             u32 n, u32 k, float lr, u32 tile, u32 bias_ty, float *smem) {
    const u32 bias_blocks = b != nullptr ? (n + 31) / 32 : 0;
    if (blk < bias_blocks) {
        const u32 c = blk * 32 + (threadIdx.x & 31u);
        bool owner;
        const float s = gc_column_sum(dy, m, n, c, threadIdx.x & 31u, threadIdx.x >> 5, GC_GEMM_THREADS / 32, bias_ty,
                                      reinterpret_cast<float (*)[33]>(smem), owner);
        if (owner) b[c] = fmaf(-lr, s, b[c]);
        return;
    }
    if (tile == 3 && gc_wsgd_staged_ok(w, dy, x, m, n, k))
        gc_wsgd_staged<64, 64, 4, 4, GC_GEMM_THREADS>(w, dy, x, m, n, k, lr, smem, blk - bias_blocks);
    else
        gc_gemm_tile(w, dy, x, nullptr, n, k, m, n, k, k, GC_GEMM_TRANS_A, -lr, 1.0f, tile == 3 ? 1u : tile, smem,
                     blk - bias_blocks);
}

// The role (loss block, bias blocks, then weight tiles) of this block of an
// update kernel: block b, or with `reversed` role G - 1 - b. Reversed, the
// weight tiles, the long blocks, are handed out first and the short loss
// and bias blocks fill the slots left: a grid of more blocks than fit at
// once then ends with short blocks, not long ones started late. Roles, and
// so results, do not depend on the order.
__device__ __forceinline__ u32 gc_sgd_role(bool reversed) {
    return reversed ? gridDim.x - 1u - blockIdx.x : blockIdx.x;
}

// gc_linear_sgd_f32's `tile` bit (gc_mlp2_sgd_f32's cfg bit 10): roles in
// reverse (gc_sgd_role).
#define GC_SGD_REVERSED 4u

// Shared memory of the update kernels (floats): gc_wsgd_staged's 64 x 64
// tile, the most of the tiles.
#define GC_SGD_SMEM GC_WSGD_SMEM(64, 64)

extern "C" __global__ void __launch_bounds__(GC_GEMM_THREADS, 2)
    gc_linear_sgd_f32(float *w, float *b, const float *dy, const float *x, u32 m, u32 n, u32 k, float lr, u32 tile,
                      u32 bias_ty, float *loss, const float *partials, u32 parts) {
    GC_PDL_WAIT();
    __shared__ __align__(16) float smem[GC_SGD_SMEM];
    if (m == 0 || n == 0 || k == 0 || bias_ty == 0 || bias_ty > 32) return;
    u32 blk = gc_sgd_role(tile & GC_SGD_REVERSED);
    if (loss != nullptr) {
        if (blk == 0) {
            gc_loss_block(loss, partials, parts);
            return;
        }
        --blk;
    }
    gc_layer_sgd(blk, w, b, dy, x, m, n, k, lr, tile & 3u, bias_ty, smem);
}

// ===========================================================================
// gc_mlp2_sgd_f32(w1, b1, w2, b2, x, h, dp, dh, loss, partials, d01, d2m, lr,
//                 cfg)
//
// Launch 2 of a 2-layer MLP's training step: block 0 writes loss[0] (the sum
// of partials[0 .. parts), gc_mlp2_mse_f32's block sums, in a fixed order);
// then the blocks of layer 2's update (W2 -= lr dp^T . h, b2 -= lr colsum
// dp) and of layer 1's (W1 -= lr dh^T . x, b1 -= lr colsum dh), each as in
// gc_linear_sgd_f32 (bias blocks, then the weight GEMM's tiles; bitwise
// gc_bias_sgd_f32 and gc_gemm_f32's weight-gradient SGD). d01 and d2m as
// gc_mlp2_mse_f32's; cfg: bits 0-1 layer 1's GEMM tile, bits 2-3 layer
// 2's, bits 4-9 the bias column sums' TY (1..32), bit 10 the roles in
// reverse (gc_sgd_role: "block" above is a role), bits 16-31 parts. b1, b2
// may be null. Launch: block 256, grid 1 + the two layers' blocks.
// ===========================================================================
extern "C" __global__ void __launch_bounds__(GC_GEMM_THREADS, 2)
    gc_mlp2_sgd_f32(float *w1, float *b1, float *w2, float *b2, const float *x, const float *h, const float *dp,
                    const float *dh, float *loss, const float *partials, u32 d01, u32 d2m, float lr, u32 cfg) {
    GC_PDL_WAIT();
    __shared__ __align__(16) float smem[GC_SGD_SMEM];
    const u32 k0 = d01 & 0xffffu, k1 = d01 >> 16, k2 = d2m & 0xffffu, m = d2m >> 16;
    const u32 tile1 = cfg & 3u, tile2 = (cfg >> 2) & 3u, ty = (cfg >> 4) & 63u, parts = cfg >> 16;
    if (k0 == 0 || k1 == 0 || k2 == 0 || m == 0 || ty == 0 || ty > 32) return;
    const u32 role = gc_sgd_role(cfg & (GC_SGD_REVERSED << 8));
    if (role == 0) {
        gc_loss_block(loss, partials, parts);
        return;
    }
    const u32 blk = role - 1, second = gc_layer_sgd_blocks(b2, k2, k1, tile2);
    if (blk < second)
        gc_layer_sgd(blk, w2, b2, dp, h, m, k2, k1, lr, tile2, ty, smem);
    else
        gc_layer_sgd(blk - second, w1, b1, dh, x, m, k1, k0, lr, tile1, ty, smem);
}
