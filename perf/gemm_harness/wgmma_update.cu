// Does the training step's weight update run faster on Hopper's warpgroup
// MMA in 3xTF32? The notes' step (Linear 1024 x 1024, 64 rows) updates W with
// W -= lr dY^T x: 1024 x 1024 outputs, a K of only 64 (the rows), so unlike
// the small forward layers it needs no split of K: one block a 64 x 64 tile.
// The shipped update (gc_linear_sgd_f32, gc_wsgd_staged's 64 x 64 tiles on
// FFMA) reads its operands from shared memory at about 2 bytes per
// multiply-add; wgmma reads them once per 64 x 64 x 8 step.
//
// wg_update: grid (k / 64, n / 64), 128 threads (one warpgroup). Before the
// programmatic wait a block loads the 64 x 64 W values it will update
// (registers) and its x tile (the forward reads W and x, never writes them),
// split into tf32 hi / lo, transposed into K-major tiles (K = the rows, 64,
// zero past m) with the 128-byte swizzle; after it, its dY tile the same
// way. Then per 8-wide K step lo.hi + hi.lo + hi.hi (wgmma m64n64k8), and
// W = fmaf(-lr, D, W).
//
// Prints: the update alone (shipped, wg, and wg-vec: wg staging its tiles
// from 16-byte loads; us in a graph of many), each one's
// error against float64, and the forward (gc_linear_mse_f32, the launcher's
// config) followed by each update as a programmatic chain, in a graph of
// many and replayed as a one-step graph; PARTS lines: wg_update with parts
// left out (SKIP).
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>
__host__ __device__ inline void emu_yield() {}
#include "linear.cu"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "common.cuh"
#include "small_common.cuh"
#include "wgmma.cuh"

// Parts left out, for the time breakdown (SKIP = 0: the whole kernel; each
// SKIP its own instantiation, so the whole kernel's code is not changed by
// the others): 1 the products, 2 W's loads and stores, 4 the x and dY loads
// (zeros staged); 8 everything (the launch alone, with its shared memory).

static constexpr size_t WG_UPDATE_SMEM = 4 * 64 * 64 * 4 + 1024;

// Stages the 64 x 64 tile T[c][i] = src[i * ld + c0 + c] (i < m, else 0)
// K-major (row c, K = i) as hi and lo. VEC: each thread loads 4 x 4 blocks
// (rows i .. i + 3, 16 bytes of columns c .. c + 3 each; a warp's lanes
// cover 256 contiguous bytes of a row) and transposes them in registers into
// four 16-byte chunks; else each thread loads 4 floats of one column c
// (lanes on 32 consecutive c) for each 16-byte chunk.
template <u32 SKIP, bool VEC>
__device__ __forceinline__ void stage_t(char *hi, char *lo, const float *src, u32 ld, u32 c0, u32 m) {
    if (VEC) {
        float4 v[2][4];
#pragma unroll
        for (u32 u = 0; u < 2; u++) {
            const u32 blk = threadIdx.x + 128 * u, c = 4 * (blk % 16), i = 4 * (blk / 16);
#pragma unroll
            for (u32 t = 0; t < 4; t++)
                v[u][t] = i + t < m && !(SKIP & 4u) ? __ldg(reinterpret_cast<const float4 *>(src + (u64)(i + t) * ld + c0 + c))
                                                    : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (u32 u = 0; u < 2; u++) {
            const u32 blk = threadIdx.x + 128 * u, c = 4 * (blk % 16), q = blk / 16;
            put(hi, lo, swz(c, q, 64), make_float4(v[u][0].x, v[u][1].x, v[u][2].x, v[u][3].x));
            put(hi, lo, swz(c + 1, q, 64), make_float4(v[u][0].y, v[u][1].y, v[u][2].y, v[u][3].y));
            put(hi, lo, swz(c + 2, q, 64), make_float4(v[u][0].z, v[u][1].z, v[u][2].z, v[u][3].z));
            put(hi, lo, swz(c + 3, q, 64), make_float4(v[u][0].w, v[u][1].w, v[u][2].w, v[u][3].w));
        }
        return;
    }
    float4 v[8];
#pragma unroll
    for (u32 u = 0; u < 8; u++) {
        const u32 ch = threadIdx.x + 128 * u, c = ch % 64, q = ch / 64;
        float e[4];
#pragma unroll
        for (u32 t = 0; t < 4; t++)
            e[t] = 4 * q + t < m && !(SKIP & 4u) ? __ldg(src + (u64)(4 * q + t) * ld + c0 + c) : 0.0f;
        v[u] = make_float4(e[0], e[1], e[2], e[3]);
    }
#pragma unroll
    for (u32 u = 0; u < 8; u++) {
        const u32 ch = threadIdx.x + 128 * u;
        put(hi, lo, swz(ch % 64, ch / 64, 64), v[u]);
    }
}

template <u32 SKIP, bool VEC = false>
__global__ void __launch_bounds__(128) wg_update(float *w, const float *dy, const float *x, u32 m, u32 n, u32 k,
                                                 float lr) {
    extern __shared__ unsigned char dsm[];
    const u32 raw = (u32)__cvta_generic_to_shared(dsm), pad = (1024 - (raw & 1023)) & 1023;
    char *ah = reinterpret_cast<char *>(dsm) + pad, *al = ah + 64 * 64 * 4, *bh = al + 64 * 64 * 4,
         *bl = bh + 64 * 64 * 4;
    const u32 tid = threadIdx.x, warp = tid >> 5, lane = tid & 31u, g = lane >> 2, t = lane & 3u;
    const u32 j0 = blockIdx.y * 64, r0 = blockIdx.x * 64;
    if (SKIP & 8u) return;  // the launch alone
    float wv[32] = {};
#pragma unroll
    for (int jj = 0; jj < 8 && !(SKIP & 2u); jj++) {
        const u32 f = j0 + 16 * warp + g, col = r0 + 8 * jj + 2 * t;
        const float2 a = *reinterpret_cast<const float2 *>(w + (u64)f * k + col);
        const float2 b = *reinterpret_cast<const float2 *>(w + (u64)(f + 8) * k + col);
        wv[4 * jj] = a.x, wv[4 * jj + 1] = a.y, wv[4 * jj + 2] = b.x, wv[4 * jj + 3] = b.y;
    }
    stage_t<SKIP, VEC>(bh, bl, x, k, r0, m);  // B[r][i] = x[i][r0 + r]
    GC_PDL_WAIT();
    stage_t<SKIP, VEC>(ah, al, dy, n, j0, m);  // A[j][i] = dy[i][j0 + j]
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[32];
#pragma unroll
    for (int i = 0; i < 32; i++) d[i] = 0.0f;
    const u32 sah = (u32)__cvta_generic_to_shared(ah), sal = (u32)__cvta_generic_to_shared(al),
              sbh = (u32)__cvta_generic_to_shared(bh), sbl = (u32)__cvta_generic_to_shared(bl);
    if (!(SKIP & 1u)) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (u32 s = 0; s < 8; s++) {
            Mma<64>::run(d, desc(sal, s, 64), desc(sbh, s, 64));
            Mma<64>::run(d, desc(sah, s, 64), desc(sbl, s, 64));
            Mma<64>::run(d, desc(sah, s, 64), desc(sbh, s, 64));
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    if (SKIP & 2u) {  // keep the products: one store per block
        float z = 0.0f;
#pragma unroll
        for (int i = 0; i < 32; i++) z += d[i];
        if (z == 1234.5f) w[0] = z;
        return;
    }
    GC_PDL_TRIGGER();
#pragma unroll
    for (int jj = 0; jj < 8; jj++) {
        const u32 f = j0 + 16 * warp + g, col = r0 + 8 * jj + 2 * t;
        *reinterpret_cast<float2 *>(w + (u64)f * k + col) =
            make_float2(fmaf(-lr, d[4 * jj], wv[4 * jj]), fmaf(-lr, d[4 * jj + 1], wv[4 * jj + 1]));
        *reinterpret_cast<float2 *>(w + (u64)(f + 8) * k + col) =
            make_float2(fmaf(-lr, d[4 * jj + 2], wv[4 * jj + 2]), fmaf(-lr, d[4 * jj + 3], wv[4 * jj + 3]));
    }
}

template <u32 SKIP = 0, bool VEC = false>
static void launch_wg_update(float *w, const float *dy, const float *x, unsigned m, unsigned n, unsigned k, float lr,
                             bool pdl) {
    static bool set = false;
    if (!set) {
        CK(cudaFuncSetAttribute(wg_update<SKIP, VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)WG_UPDATE_SMEM));
        set = true;
    }
    CK(launch_ex(wg_update<SKIP, VEC>, dim3(k / 64, n / 64, 1), 128, WG_UPDATE_SMEM, st, 1, pdl, w, dy, x, (u32)m,
                 (u32)n, (u32)k, lr));
}

// The shipped update of W alone (no bias, no loss): gc_wsgd_staged's 64 x 64
// tiles, as ops.rs launches them for 64 rows (tile 3; 256 blocks fit at
// once, so in order).
static void launch_shipped_update(float *w, const float *dy, const float *x, unsigned m, unsigned n, unsigned k,
                                  float lr, bool pdl) {
    CK(launch_ex(gc_linear_sgd_f32, dim3((n / 64) * (k / 64)), 256, 0, st, 1, pdl, w, (float *)nullptr, dy, x,
                 (u32)m, (u32)n, (u32)k, lr, 3u, 16u, (float *)nullptr, (const float *)nullptr, 0u));
}

// Worst |(W - W0) / -lr - dY^T x| over sum |dy x| per element, dY^T x in
// float64 (the update's error relative to its own magnitude).
static double update_err(const float *dw, const std::vector<float> &w0, const std::vector<float> &dy,
                         const std::vector<float> &x, unsigned m, unsigned n, unsigned k, float lr) {
    std::vector<float> w1((size_t)n * k);
    CK(cudaMemcpy(w1.data(), dw, w1.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (unsigned j = 0; j < n; j++)
        for (unsigned r = 0; r < k; r++) {
            double s = 0, a = 1e-30;
            for (unsigned i = 0; i < m; i++) {
                const double p = (double)dy[(size_t)i * n + j] * x[(size_t)i * k + r];
                s += p;
                a += fabs(p);
            }
            const double want = (double)w0[(size_t)j * k + r] - (double)lr * s;
            const double e = fabs((double)w1[(size_t)j * k + r] - want) / ((double)lr * a);
            worst = std::max(worst, std::isfinite(e) ? e : 1e30);
        }
    return worst;
}

int main() {
    CK(cudaStreamCreate(&st));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const unsigned m = 64, n = 1024, k = 1024;
    const float lr = 1e-3f;
    srand(11);
    auto rnd = [](size_t c, float s) {
        std::vector<float> v(c);
        for (auto &e : v) e = s * (2.0f * rand() / RAND_MAX - 1.0f);
        return v;
    };
    std::vector<float> hw = rnd((size_t)n * k, 1.0f / 32), hb = rnd(n, 0.1f), hx = rnd((size_t)m * k, 1.0f),
                       ht = rnd((size_t)m * n, 1.0f), hdy = rnd((size_t)m * n, 1.0f);
    float *w, *b, *x, *t, *dy, *grad, *partials;
    CK(cudaMalloc(&w, hw.size() * 4));
    CK(cudaMalloc(&b, hb.size() * 4));
    CK(cudaMalloc(&x, hx.size() * 4));
    CK(cudaMalloc(&t, ht.size() * 4));
    CK(cudaMalloc(&dy, hdy.size() * 4));
    CK(cudaMalloc(&grad, hdy.size() * 4));
    CK(cudaMalloc(&partials, 4096 * 4));
    CK(cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(t, ht.data(), ht.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, hdy.data(), hdy.size() * 4, cudaMemcpyHostToDevice));
    auto reset = [&] { CK(cudaMemcpy(w, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice)); };

    // Numerics: one update from the same W, each against float64.
    reset();
    launch_shipped_update(w, dy, x, m, n, k, lr, false);
    CK(cudaStreamSynchronize(st));
    const double es = update_err(w, hw, hdy, hx, m, n, k, lr);
    reset();
    launch_wg_update(w, dy, x, m, n, k, lr, false);
    CK(cudaStreamSynchronize(st));
    const double ew = update_err(w, hw, hdy, hx, m, n, k, lr);
    std::vector<float> a((size_t)n * k), bb((size_t)n * k);
    CK(cudaMemcpy(a.data(), w, a.size() * 4, cudaMemcpyDeviceToHost));
    reset();
    launch_wg_update(w, dy, x, m, n, k, lr, false);
    CK(cudaMemcpy(bb.data(), w, bb.size() * 4, cudaMemcpyDeviceToHost));
    const bool same = !memcmp(a.data(), bb.data(), a.size() * 4);

    reset();
    launch_wg_update<0, true>(w, dy, x, m, n, k, lr, false);
    CK(cudaStreamSynchronize(st));
    const double ev = update_err(w, hw, hdy, hx, m, n, k, lr);
    CK(cudaMemcpy(bb.data(), w, bb.size() * 4, cudaMemcpyDeviceToHost));
    const bool same_vec = !memcmp(a.data(), bb.data(), a.size() * 4);
    const double ts = time_fn([&] { launch_shipped_update(w, dy, x, m, n, k, lr, false); });
    const double tw = time_fn([&] { launch_wg_update(w, dy, x, m, n, k, lr, false); });
    printf("UPDATE shipped  us %6.3f  err %.1e\n", ts, es);
    printf("UPDATE wg       us %6.3f  err %.1e  repeat %s\n", tw, ew, same ? "bitwise" : "DIFFERS");
    const double tv = time_fn([&] { launch_wg_update<0, true>(w, dy, x, m, n, k, lr, false); });
    printf("UPDATE wg-vec   us %6.3f  err %.1e  vs-wg %s\n", tv, ev, same_vec ? "bitwise" : "DIFFERS");
#define PART(S) \
    printf("PARTS wg skip %u  us %6.3f\n", S, time_fn([&] { launch_wg_update<S>(w, dy, x, m, n, k, lr, false); }))
    PART(1u);
    PART(2u);
    PART(4u);
    PART(3u);
    PART(5u);
    PART(6u);
    PART(7u);
    PART(8u);
#undef PART

    // The step: forward with the loss's block sums and dY, then the update.
    Cfg c = launcher(m, n, k, (unsigned)sms);
    const dim3 fg = grid_of(c, m, n);
    auto forward = [&] {
        launch_pdl(gc_linear_mse_f32, fg, false, grad, (float *)nullptr, partials, (const float *)x,
                   (const float *)w, (const float *)b, (const float *)t, (u32)m, (u32)n, (u32)k, (u32)packed(c),
                   1.0f);
    };
    reset();
    auto step_shipped = [&] {
        forward();
        launch_shipped_update(w, grad, x, m, n, k, lr, true);
    };
    auto step_wg = [&] {
        forward();
        launch_wg_update(w, grad, x, m, n, k, lr, true);
    };
    auto step_vec = [&] {
        forward();
        launch_wg_update<0, true>(w, grad, x, m, n, k, lr, true);
    };
    printf("FORWARD         us %6.3f  (%u blocks)\n", time_fn(forward), fg.x * fg.y);
    for (int round = 0; round < 2; round++) {
        printf("STEP shipped    in-graph %6.3f  replay %6.3f\n", time_fn(step_shipped), time_replay(step_shipped));
        printf("STEP wg         in-graph %6.3f  replay %6.3f\n", time_fn(step_wg), time_replay(step_wg));
        printf("STEP wg-vec     in-graph %6.3f  replay %6.3f\n", time_fn(step_vec), time_replay(step_vec));
    }
    CK(cudaGetLastError());
    return 0;
}
