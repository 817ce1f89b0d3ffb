// Does Hopper's warpgroup MMA (wgmma, sm_90a) in 3xTF32 make the notes'
// small-batch layers faster than the shipped gc_linear_small_f32? (The last
// lever TUNING.md's twelfth and sixteenth sessions left untried: the small
// kernel's time is issue and latency inside the SM, and mma.sync in 3xTF32
// ran at about the FFMA rate.)
//
// wg_layer<N, KS>: y = act(x . W^T + b) for m <= N rows, n % 64 == 0 output
// features, k == CS * KS. The product is taken transposed, y^T = W . x^T:
// wgmma's M side is 64 output features, its N side the batch rows (N = 8,
// 16 or 32). Block (s, t) of a cluster of CS blocks along x takes features
// 64 t .. 64 t + 63 and the K slice s KS .. s KS + KS - 1:
// - its W rows' slice goes to shared memory before the programmatic wait
//   (weights are no earlier kernel's output), split as hi = tf32(v), lo =
//   tf32(v - hi), K-major with the 128-byte swizzle; then x's slice the same
//   way after the wait;
// - per 8-wide K step, three wgmma m64nNk8: hi.hi + hi.lo + lo.hi (lo.lo,
//   about 2^-22 relative, dropped);
// - each block writes its 64 x N partial tile to its shared memory; after a
//   cluster barrier block s adds the CS partials of its 64 / CS features in
//   rank order through distributed shared memory (deterministic), adds the
//   bias, applies ReLU and stores; a second barrier keeps every block's
//   shared memory alive until its peers have read it.
//
// Prints first PARTS lines: the first layer on wg (CS = 16) at 1 and 32 rows
// with parts of the kernel left out (see c_skip). Then, per row count: each
// layer alone (shipped config vs wg CS = 8, 16; us in a graph of many) with
// its error against float64, whether a repeat is bitwise equal and how many
// outputs were left unwritten (NaN poison), and the notes' 3-layer chain
// (programmatic launches) shipped vs layers 1-2 on wg, replayed too.
// small_json.py wgmma turns the output into JSON.
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
__host__ __device__ inline void emu_yield() {}
#include "linear.cu"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "common.cuh"
#include "small_common.cuh"
#include "wgmma.cuh"

namespace cg = cooperative_groups;

// Parts left out, for the time breakdown (0 = the whole kernel): 1 the W
// loads (zeros staged), 2 the products, 4 the cluster reduction (each block
// stores its own partial tile), 8 the x loads; 16 everything (the launch
// alone), 32 everything but two cluster barriers.
__constant__ u32 c_skip;

template <int N, int KS>
static constexpr size_t wg_smem() { return (size_t)(2 * 64 * KS + 2 * N * KS + 64 * N) * 4 + 1024; }

template <int N, int KS>
__global__ void __launch_bounds__(128, 1)
    wg_layer(float *y, const float *x, const float *w, const float *b, u32 m, u32 n, u32 k, u32 relu) {
    extern __shared__ unsigned char dsm[];
    cg::cluster_group cluster = cg::this_cluster();
    const u32 raw = (u32)__cvta_generic_to_shared(dsm), pad = (1024 - (raw & 1023)) & 1023;
    char *wh = reinterpret_cast<char *>(dsm) + pad, *wl = wh + 64 * KS * 4, *xh = wl + 64 * KS * 4,
         *xl = xh + N * KS * 4;
    float *red = reinterpret_cast<float *>(xl + N * KS * 4);
    const u32 tid = threadIdx.x, rank = cluster.block_rank(), cs = cluster.num_blocks();
    const u32 f0 = blockIdx.y * 64, k0 = rank * KS;
    if (c_skip & 16u) return;  // the launch alone
    if (c_skip & 32u) {        // the launch and two cluster barriers
        cluster.sync();
        cluster.sync();
        return;
    }
    constexpr u32 Q = KS / 4;  // float4 chunks per row of a slice
    {
        float4 v[64 * Q / 128];
#pragma unroll
        for (u32 i = 0; i < 64 * Q / 128; i++) {
            const u32 c = tid + i * 128, r = c / Q, q = c % Q;
            v[i] = (c_skip & 1u) ? make_float4(0.f, 0.f, 0.f, 0.f)
                                 : __ldg(reinterpret_cast<const float4 *>(w + (u64)(f0 + r) * k + k0) + q);
        }
#pragma unroll
        for (u32 i = 0; i < 64 * Q / 128; i++) {
            const u32 c = tid + i * 128, r = c / Q, q = c % Q;
            put(wh, wl, swz(r, q, 64), v[i]);
        }
    }
    GC_PDL_WAIT();
    {
        constexpr u32 XC = (N * Q + 127) / 128;
        float4 v[XC];
#pragma unroll
        for (u32 i = 0; i < XC; i++) {
            const u32 c = tid + i * 128, r = c / Q, q = c % Q;
            v[i] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (c < N * Q && r < m && !(c_skip & 8u)) v[i] = __ldg(reinterpret_cast<const float4 *>(x + (u64)r * k + k0) + q);
        }
#pragma unroll
        for (u32 i = 0; i < XC; i++) {
            const u32 c = tid + i * 128, r = c / Q, q = c % Q;
            if (c < N * Q) put(xh, xl, swz(r, q, N), v[i]);
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; i++) d[i] = 0.0f;
    const u32 awh = (u32)__cvta_generic_to_shared(wh), awl = (u32)__cvta_generic_to_shared(wl),
              axh = (u32)__cvta_generic_to_shared(xh), axl = (u32)__cvta_generic_to_shared(xl);
    if (!(c_skip & 2u)) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (u32 s = 0; s < KS / 8; s++) {
            Mma<N>::run(d, desc(awl, s, 64), desc(axh, s, N));
            Mma<N>::run(d, desc(awh, s, 64), desc(axl, s, N));
            Mma<N>::run(d, desc(awh, s, 64), desc(axh, s, N));
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    GC_PDL_TRIGGER();
    // Partial tile, feature-major: red[f * N + col].
    const u32 warp = tid >> 5, lane = tid & 31u, g = lane >> 2, t = lane & 3u;
#pragma unroll
    for (int j = 0; j < N / 8; j++) {
        const u32 f = 16 * warp + g, col = 8 * j + 2 * t;
        red[f * N + col] = d[4 * j];
        red[f * N + col + 1] = d[4 * j + 1];
        red[(f + 8) * N + col] = d[4 * j + 2];
        red[(f + 8) * N + col + 1] = d[4 * j + 3];
    }
    if (c_skip & 4u) {
        __syncthreads();
        for (u32 v = tid; v < 64 * N; v += 128)
            if (v % N < m) y[(u64)(v % N) * n + f0 + v / N] = red[v];
        return;
    }
    cluster.sync();
    const u32 fp = 64 / cs;  // features this block finishes
    for (u32 v = tid; v < fp * N; v += 128) {
        const u32 fl = v % fp, col = v / fp, f = rank * fp + fl;
        float s = 0.0f;
        for (u32 q = 0; q < cs; q++) s += cluster.map_shared_rank(red, q)[f * N + col];
        if (col < m) {
            s += b[f0 + f];
            y[(u64)col * n + f0 + f] = relu ? gc_relu(s) : s;
        }
    }
    cluster.sync();
}

template <int N, int KS>
static void launch_wg(float *y, const float *x, const float *w, const float *b, unsigned m, unsigned n, unsigned k,
                      bool relu, bool pdl) {
    const unsigned cs = k / KS;
    static bool set = false;
    if (!set) {
        CK(cudaFuncSetAttribute(wg_layer<N, KS>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)wg_smem<N, KS>()));
        CK(cudaFuncSetAttribute(wg_layer<N, KS>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        set = true;
    }
    CK(launch_ex(wg_layer<N, KS>, dim3(cs, n / 64, 1), 128, wg_smem<N, KS>(), st, cs, pdl, y, x, w, b, (u32)m,
                 (u32)n, (u32)k, (u32)(relu ? 1u : 0u)));
}

// The wg launch for m rows with cluster size cs (8 or 16) at K = k.
static bool wg(unsigned cs, float *y, const float *x, const float *w, const float *b, unsigned m, unsigned n,
               unsigned k, bool relu, bool pdl) {
    const unsigned ks = k / cs;
#define WG_CASE(NN, KK) \
    if (m <= NN && ks == KK) { launch_wg<NN, KK>(y, x, w, b, m, n, k, relu, pdl); return true; }
#define WG_ROWS(KK) WG_CASE(8, KK) WG_CASE(16, KK) WG_CASE(32, KK)
    WG_ROWS(32)
    WG_ROWS(64)
    WG_ROWS(128)
#undef WG_ROWS
#undef WG_CASE
    return false;
}

// Outputs of the first m rows (n wide) at dy that are not finite (unwritten
// outputs keep the NaN poison).
static size_t non_finite(const float *dy, unsigned m, unsigned n) {
    std::vector<float> y((size_t)m * n);
    CK(cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost));
    return (size_t)std::count_if(y.begin(), y.end(), [](float v) { return !std::isfinite(v); });
}

static std::vector<float> fetch(const float *dy, size_t count) {
    std::vector<float> y(count);
    CK(cudaMemcpy(y.data(), dy, count * 4, cudaMemcpyDeviceToHost));
    return y;
}

int main() {
    CK(cudaStreamCreate(&st));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    NotesMlp net;
    const unsigned *d = net.dims;
    for (unsigned m : {1u, 32u})
        for (u32 skip : {0u, 1u, 2u, 4u, 8u, 6u, 7u, 15u, 16u, 32u}) {
            CK(cudaMemcpyToSymbol(c_skip, &skip, 4));
            double t = time_fn([&] { wg(16, net.dh[0], net.dx, net.dw[0], net.db[0], m, d[1], d[0], true, false); });
            printf("PARTS m %2u  1024 -> 512  cs 16  skip %2u  us %6.3f\n", m, skip, t);
        }
    {
        u32 skip = 0;
        CK(cudaMemcpyToSymbol(c_skip, &skip, 4));
    }
    for (unsigned m : {1u, 8u, 16u, 32u}) {
        for (int l = 0; l < 2; l++) {
            const unsigned k = d[l], n = d[l + 1];
            const float *x = l == 0 ? net.dx : net.dh[l - 1];
            if (l == 1) launch_small(launcher(m, d[1], d[0], sms), net.dh[0], net.dx, net.dw[0], net.db[0], m, d[1], d[0], true, false);
            std::vector<float> hx((size_t)m * k);
            CK(cudaMemcpy(hx.data(), x, hx.size() * 4, cudaMemcpyDeviceToHost));
            Cfg c = launcher(m, n, k, (unsigned)sms);
            auto shipped = [&] { launch_small(c, net.dh[l], x, net.dw[l], net.db[l], m, n, k, true, false); };
            shipped();
            CK(cudaStreamSynchronize(st));
            double es = check(net.dh[l], hx, net.hw[l], net.hb[l], m, n, k, true);
            double ts = time_fn(shipped);
            printf("LAYER m %2u  %4u -> %4u  shipped      us %6.3f  err %.1e\n", m, k, n, ts, es);
            for (unsigned cs : {8u, 16u}) {
                CK(cudaMemset(net.dh[l], 0xff, (size_t)m * n * 4));  // NaN: every output must be written
                if (!wg(cs, net.dh[l], x, net.dw[l], net.db[l], m, n, k, true, false)) continue;
                CK(cudaStreamSynchronize(st));
                const size_t bad = non_finite(net.dh[l], m, n);
                double e = check(net.dh[l], hx, net.hw[l], net.hb[l], m, n, k, true);
                std::vector<float> a = fetch(net.dh[l], (size_t)m * n);
                wg(cs, net.dh[l], x, net.dw[l], net.db[l], m, n, k, true, false);
                std::vector<float> bb = fetch(net.dh[l], (size_t)m * n);
                bool same = std::equal(a.begin(), a.end(), bb.begin(),
                                       [](float p, float q) { return __builtin_memcmp(&p, &q, 4) == 0; });
                double t = time_fn([&] { wg(cs, net.dh[l], x, net.dw[l], net.db[l], m, n, k, true, false); });
                printf("LAYER m %2u  %4u -> %4u  wg cs %2u     us %6.3f  err %.1e  repeat %s  unwritten %zu\n", m, k, n,
                       cs, t, e, same ? "bitwise" : "DIFFERS", bad);
            }
        }
        // The notes' 3-layer chain, programmatic after the first launch.
        auto layer3 = [&](bool pdl) {
            launch_small(launcher(m, d[3], d[2], sms), net.dh[2], net.dh[1], net.dw[2], net.db[2], m, d[3], d[2], false, pdl);
        };
        auto chain_shipped = [&] {
            for (int l = 0; l < 2; l++)
                launch_small(launcher(m, d[l + 1], d[l], sms), net.dh[l], l == 0 ? net.dx : net.dh[l - 1], net.dw[l],
                             net.db[l], m, d[l + 1], d[l], true, l > 0);
            layer3(true);
        };
        chain_shipped();
        const std::vector<float> ref = fetch(net.dh[2], (size_t)m * d[3]);
        printf("CHAIN m %2u  shipped            in-graph %6.3f  replay %6.3f\n", m, time_fn(chain_shipped),
               time_replay(chain_shipped));
        for (unsigned cs : {8u, 16u}) {
            auto chain_wg = [&] {
                wg(cs, net.dh[0], net.dx, net.dw[0], net.db[0], m, d[1], d[0], true, false);
                wg(cs, net.dh[1], net.dh[0], net.dw[1], net.db[1], m, d[2], d[1], true, true);
                layer3(true);
            };
            chain_wg();
            const std::vector<float> out = fetch(net.dh[2], (size_t)m * d[3]);
            double diff = 0, big = 1e-30;
            for (size_t i = 0; i < out.size(); i++) {
                diff = std::max(diff, (double)fabsf(out[i] - ref[i]));
                big = std::max(big, (double)fabsf(ref[i]));
            }
            if (!std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); })) diff = INFINITY;
            printf("CHAIN m %2u  wg cs %2u           in-graph %6.3f  replay %6.3f  vs shipped %.1e\n", m, cs,
                   time_fn(chain_wg), time_replay(chain_wg), diff / big);
        }
        CK(cudaStreamSynchronize(st));
    }
    CK(cudaGetLastError());
    return 0;
}
