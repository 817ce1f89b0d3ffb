// Small-batch linear layers with K split over blocks, against the shipped
// gc_linear_small_f32, on the notes' MLP layers (1024 -> 512, 512 -> 256,
// 256 -> 10) at 1-32 rows.
//
// Why: at 16-32 rows the small kernel's blocks each read their rows of x
// whole, so x is read again by every column tile (about 20 MB from L2 for
// the 2 MB first layer at 32 rows). Here a block takes a column tile and a
// K slice: it reads BN rows of W and m rows of x over its slice only (4 MB
// in all at 32 rows), and the last block of a column tile to finish (a
// counter) adds the slices' partial sums in slice order, then bias and
// ReLU: deterministic, one launch, no atomics on data.
//
// sk_small<BN, RC>: 256 threads; warp w computes columns tile BN + w BN/8
// (+ BN/8); lanes take float4 steps lane, lane + 32 of the slice (ks <=
// 256); rows in chunks of RC (RC BN/8 <= 32 sums per lane), each chunk's
// sums added over the warp by gc_small_exchange and stored as partials
// [slice][row][col].
//
// Prints `L` lines (one layer alone: GPU time in a graph of many / replayed
// alone, error against float64 relative to the sum of |products|, and
// bitwise repeat), then `CHAIN` lines (the three layers as the library
// chains them, programmatic after the first). On the GPU machine, from the
// repository root:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -o small_splitk perf/gemm_harness/small_splitk.cu && ./small_splitk
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

#define SK_MAX_SLICES 16

template <int BN, int RC>
__global__ void __launch_bounds__(256) sk_small(float *y, const float *x, const float *w, const float *b, float *part,
                                                unsigned *count, u32 m, u32 n, u32 k, u32 ks, u32 relu) {
    constexpr int CW = BN / 8, V = RC * CW;
    static_assert(V <= 32, "one sum per lane at most");
    constexpr int LV = V >= 32 ? 5 : (V >= 16 ? 4 : V >= 8 ? 3 : V >= 4 ? 2 : V >= 2 ? 1 : 0);
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const u32 tile = blockIdx.x, s = blockIdx.y, S = gridDim.y;
    const u32 j0 = tile * BN + warp * CW, k0 = s * ks;
    const u32 steps = (min(k, k0 + ks) - k0) / 4;  // k % 4 == 0 here
    // This block's W rows over its slice, into L2 before the wait (weights).
    {
        const u32 lines = (steps * 16 + 127) / 128;
        for (u32 o = tid; o < BN * lines; o += 256) {
            const u32 col = tile * BN + o / lines;
            if (col < n) asm volatile("prefetch.global.L2 [%0];" ::"l"(w + (u64)col * k + k0 + (o % lines) * 32));
        }
    }
    GC_PDL_WAIT();
    float4 wv[2][CW];
#pragma unroll
    for (int u = 0; u < 2; ++u)
#pragma unroll
        for (int c = 0; c < CW; ++c) {
            const u32 st = lane + 32u * u, col = j0 + c;
            wv[u][c] = (st < steps && col < n) ? __ldg(reinterpret_cast<const float4 *>(w + (u64)col * k + k0) + st)
                                               : make_float4(0, 0, 0, 0);
        }
    for (u32 r0 = 0; r0 < m; r0 += RC) {
        float acc[V];
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] = 0.0f;
#pragma unroll
        for (int u = 0; u < 2; ++u) {
            const u32 st = lane + 32u * u;
            if (st >= steps) break;
#pragma unroll
            for (int r = 0; r < RC; ++r) {
                const u32 row = r0 + r;
                if (row >= m) break;
                const float4 xv = __ldg(reinterpret_cast<const float4 *>(x + (u64)row * k + k0) + st);
#pragma unroll
                for (int c = 0; c < CW; ++c) {
                    float a = acc[r * CW + c];
                    a = fmaf(xv.x, wv[u][c].x, a);
                    a = fmaf(xv.y, wv[u][c].y, a);
                    a = fmaf(xv.z, wv[u][c].z, a);
                    a = fmaf(xv.w, wv[u][c].w, a);
                    acc[r * CW + c] = a;
                }
            }
        }
        gc_small_exchange<V, 0>(acc, lane);
        if (V >= 32 || (lane & ((32u >> LV) - 1)) == 0) {
            const u32 vi = V >= 32 ? lane : lane >> (5 - LV);
            const u32 row = r0 + vi / CW, col = j0 + vi % CW;
            if (row < m && col < n) part[((u64)s * m + row) * n + col] = acc[0];
        }
    }
    GC_PDL_TRIGGER();
    // The last block of this column tile adds the partials (the classic
    // fence-and-count: every block's partials are visible before its count).
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (tid == 0) last = atomicAdd(count + tile, 1u) == S - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (u32 o = tid; o < m * BN; o += 256) {
        const u32 row = o / BN, col = tile * BN + o % BN;
        if (col >= n) continue;
        float p[SK_MAX_SLICES];
#pragma unroll
        for (int q = 0; q < SK_MAX_SLICES; ++q)
            if ((u32)q < S) p[q] = __ldcg(part + ((u64)q * m + row) * n + col);
        float v = p[0];
#pragma unroll
        for (int q = 1; q < SK_MAX_SLICES; ++q)
            if ((u32)q < S) v = __fadd_rn(v, p[q]);
        if (b != nullptr) v = __fadd_rn(v, __ldg(b + col));
        y[(u64)row * n + col] = relu ? gc_relu(v) : v;
    }
    if (tid == 0) count[tile] = 0;  // every slice has counted: ready for the next launch
}

struct Layer {
    unsigned n, k;
    std::vector<float> hw, hb;
    float *w, *b, *y;
};

static float *part_ws;
static unsigned *count_ws;

// A split-K variant: column tile BN, K slice ks, row chunk RC.
struct Variant {
    const char *name;
    unsigned bn, ks;
    void (*launch)(const Layer &, const float *x, unsigned m, unsigned ks, bool relu, bool pdl);
};

template <int BN, int RC>
static void launch_sk(const Layer &l, const float *x, unsigned m, unsigned ks, bool relu, bool pdl) {
    dim3 grid((l.n + BN - 1) / BN, (l.k + ks - 1) / ks, 1);
    launch_pdl(sk_small<BN, RC>, grid, pdl, l.y, x, (const float *)l.w, (const float *)l.b, part_ws, count_ws, (u32)m,
               (u32)l.n, (u32)l.k, (u32)ks, (u32)relu);
}

// RC by rows: one row, four, or as many as 32 sums per lane allow.
template <int BN>
static void launch_sk_rows(const Layer &l, const float *x, unsigned m, unsigned ks, bool relu, bool pdl) {
    if (m == 1) launch_sk<BN, 1>(l, x, m, ks, relu, pdl);
    else if (m <= 4) launch_sk<BN, 4>(l, x, m, ks, relu, pdl);
    else launch_sk<BN, 256 / BN>(l, x, m, ks, relu, pdl);
}

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    CK(cudaStreamCreate(&st));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaMalloc(&part_ws, (size_t)SK_MAX_SLICES * 32 * 1024 * 4));
    CK(cudaMalloc(&count_ws, 4096 * 4));
    CK(cudaMemset(count_ws, 0, 4096 * 4));
    srand(7);
    auto rnd = [](size_t n, float s) {
        std::vector<float> v(n);
        for (auto &e : v) e = s * (2.0f * rand() / RAND_MAX - 1.0f);
        return v;
    };
    const unsigned dims[4] = {1024, 512, 256, 10};
    Layer L[3];
    for (int i = 0; i < 3; i++) {
        L[i].n = dims[i + 1];
        L[i].k = dims[i];
        L[i].hw = rnd((size_t)L[i].n * L[i].k, 1.0f / sqrtf((float)L[i].k));
        L[i].hb = rnd(L[i].n, 0.1f);
        CK(cudaMalloc(&L[i].w, L[i].hw.size() * 4));
        CK(cudaMalloc(&L[i].b, L[i].hb.size() * 4));
        CK(cudaMalloc(&L[i].y, (size_t)32 * L[i].n * 4));
        CK(cudaMemcpy(L[i].w, L[i].hw.data(), L[i].hw.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(L[i].b, L[i].hb.data(), L[i].hb.size() * 4, cudaMemcpyHostToDevice));
    }
    // Layer inputs: random x for each layer alone (the chain feeds them).
    std::vector<float> hx[3];
    float *dx[3];
    for (int i = 0; i < 3; i++) {
        hx[i] = rnd((size_t)32 * L[i].k, 1.0f);
        CK(cudaMalloc(&dx[i], hx[i].size() * 4));
        CK(cudaMemcpy(dx[i], hx[i].data(), hx[i].size() * 4, cudaMemcpyHostToDevice));
    }
    const Variant variants[] = {
        {"sk16 ks64", 16, 64, launch_sk_rows<16>},   {"sk16 ks128", 16, 128, launch_sk_rows<16>},
        {"sk16 ks256", 16, 256, launch_sk_rows<16>}, {"sk32 ks64", 32, 64, launch_sk_rows<32>},
        {"sk32 ks128", 32, 128, launch_sk_rows<32>}, {"sk32 ks256", 32, 256, launch_sk_rows<32>},
        {"sk64 ks128", 64, 128, launch_sk_rows<64>},
    };
    auto result = [&](const Layer &l, unsigned m) {
        std::vector<float> out((size_t)m * l.n);
        CK(cudaMemcpy(out.data(), l.y, out.size() * 4, cudaMemcpyDeviceToHost));
        return out;
    };
    for (unsigned m : {1u, 4u, 16u, 32u}) {
        for (int i = 0; i < 2; i++) {
            const Layer &l = L[i];
            const bool relu = true;
            auto small = [&] { launch_small(launcher(m, l.n, l.k, sms), l.y, dx[i], l.w, l.b, m, l.n, l.k, relu, false); };
            small();
            CK(cudaStreamSynchronize(st));
            double e = check(l.y, hx[i], l.hw, l.hb, m, l.n, l.k, relu);
            printf("L %4u -> %3u m %2u  %-11s in-graph %6.3f us  replay %6.3f us  err %.1e\n", l.k, l.n, m, "small",
                   time_fn(small), time_replay(small), e);
            for (const Variant &v : variants) {
                if ((l.k + v.ks - 1) / v.ks > SK_MAX_SLICES || v.ks > 256) continue;
                auto go = [&] { v.launch(l, dx[i], m, v.ks, relu, false); };
                CK(cudaMemset(l.y, 0xff, (size_t)m * l.n * 4));
                go();
                CK(cudaStreamSynchronize(st));
                CK(cudaGetLastError());
                double ev = check(l.y, hx[i], l.hw, l.hb, m, l.n, l.k, relu);
                std::vector<float> y1 = result(l, m);
                double g = time_fn(go), r = time_replay(go);
                bool same = result(l, m) == y1;
                printf("L %4u -> %3u m %2u  %-11s in-graph %6.3f us  replay %6.3f us  err %.1e %s  blocks %u\n", l.k,
                       l.n, m, v.name, g, r, ev, same ? "bitwise-repeat" : "DIFFERS",
                       ((l.n + v.bn - 1) / v.bn) * ((l.k + v.ks - 1) / v.ks));
            }
        }
        // The chain: layers 1 and 2 by the small kernel or a split-K
        // variant, layer 3 by the small kernel; programmatic after layer 1.
        auto chain = [&](const Variant *v1, const Variant *v2) {
            const float *x = dx[0];
            for (int i = 0; i < 3; i++) {
                const Layer &l = L[i];
                const Variant *v = i == 0 ? v1 : i == 1 ? v2 : nullptr;
                if (v != nullptr) v->launch(l, x, m, v->ks, i < 2, i > 0);
                else launch_small(launcher(m, l.n, l.k, sms), l.y, x, l.w, l.b, m, l.n, l.k, i < 2, i > 0);
                x = l.y;
            }
        };
        chain(nullptr, nullptr);
        CK(cudaStreamSynchronize(st));
        std::vector<float> ref = result(L[2], m);
        auto line = [&](const char *name, const Variant *v1, const Variant *v2) {
            auto go = [&] { chain(v1, v2); };
            go();
            CK(cudaStreamSynchronize(st));
            std::vector<float> out = result(L[2], m);
            double worst = 0, big = 1e-30;
            for (size_t q = 0; q < out.size(); q++) {
                worst = std::max(worst, (double)fabsf(out[q] - ref[q]));
                big = std::max(big, (double)fabsf(ref[q]));
            }
            printf("CHAIN m %2u  %-24s in-graph %6.3f us  replay %6.3f us  vs small chain %.1e\n", m, name, time_fn(go),
                   time_replay(go), worst / big);
        };
        line("small, small, small", nullptr, nullptr);
        for (const Variant &a : variants) {
            char name[64];
            snprintf(name, sizeof name, "%s x2, small", a.name);
            line(name, &a, &a);
            snprintf(name, sizeof name, "%s, small, small", a.name);
            line(name, &a, nullptr);
        }
    }
    return 0;
}
