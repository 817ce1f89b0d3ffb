// A whole small-batch MLP forward on thread-block clusters, against the
// library's chain of per-layer small-batch launches (programmatic, as
// ops.rs runs them on an H100).
//
// mlp_cluster<CS, WARPS, RB>: cluster c of CS blocks computes rows
// [c RB, c RB + RB) of every layer. Block `rank` computes the columns
// [rank per, rank per + per) of a layer (per = ceil(n / CS)), one warp per
// column (the small kernel's 1 x 1 tile: lane-strided float4 steps, a
// butterfly), reading the layer's input from its own shared memory and
// storing each output into every block's shared memory (distributed
// shared memory), then one cluster barrier per layer boundary. Layer 0's
// input is staged from global memory; the last layer stores to y.
// Hidden widths up to 1024.
//
// Timed two ways: in a graph of many forwards (GPU time per forward), and
// as a one-forward graph replayed back to back (what a request costs the
// GPU). Outputs are checked against float64. Prints `MLP`, `CHAIN` and
// `CL` lines. On the GPU machine, from the repository root:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -o mlp_cluster perf/gemm_harness/mlp_cluster.cu && ./mlp_cluster
// (`./mlp_cluster floors`: the launch and barrier floors; `./mlp_cluster
// parts`: the notes' MLP layer by layer.)
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

#define HMAX 1024  // widest hidden layer (and input) the cluster kernel takes

struct MlpArgs {
    const float *w[4], *b[4];
    u32 d[5];
    u32 layers, rows, relu;  // relu: bit l = ReLU after layer l
    const float *x;
    float *y;
};

__device__ __forceinline__ void st_cluster(float *p, u32 rank, float v) {
    u32 remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"((u32)__cvta_generic_to_shared(p)), "r"(rank));
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
}

template <int CS, int WARPS, int RB, int KV>
__global__ void __launch_bounds__(WARPS * 32, 1) mlp_cluster(MlpArgs a) {
    constexpr int NT = WARPS * 32;
    __shared__ __align__(16) float h[2][RB][HMAX];
    const u32 rank = gc_cluster_rank();
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const u32 r0 = blockIdx.y * RB;
    const u32 nr = a.rows - r0 < (u32)RB ? a.rows - r0 : (u32)RB;
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    GC_PDL_WAIT();
    {
        const u32 k4 = a.d[0] / 4;
        for (u32 i = tid; i < RB * k4; i += NT) {
            const u32 r = i / k4, c = i % k4;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (r < nr) v = __ldg(reinterpret_cast<const float4 *>(a.x + (u64)(r0 + r) * a.d[0]) + c);
            *reinterpret_cast<float4 *>(&h[0][r][c * 4]) = v;
        }
    }
    __syncthreads();
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    for (u32 l = 0; l < a.layers; l++) {
        const u32 K = a.d[l], N = a.d[l + 1];
        const float *W = a.w[l], *B = a.b[l];
        const bool last = l + 1 == a.layers, relu = (a.relu >> l) & 1u;
        float(*hin)[HMAX] = h[l & 1];
        float(*hout)[HMAX] = h[(l + 1) & 1];
        const u32 per = (N + CS - 1) / CS, c0 = rank * per, c1 = min(N, c0 + per);
        for (u32 j = c0 + warp; j < c1; j += WARPS) {
            float acc[RB];
#pragma unroll
            for (int r = 0; r < RB; r++) acc[r] = 0.0f;
            const float *wr = W + (u64)j * K;
            for (u32 kc = 0; kc < K; kc += 128 * KV) {
                float4 wv[KV];
#pragma unroll
                for (int i = 0; i < KV; i++) {
                    const u32 k = kc + (lane + 32u * i) * 4u;
                    wv[i] = k < K ? __ldg(reinterpret_cast<const float4 *>(wr + k)) : make_float4(0.f, 0.f, 0.f, 0.f);
                }
#pragma unroll
                for (int i = 0; i < KV; i++) {
                    const u32 k = kc + (lane + 32u * i) * 4u;
                    if (k < K) {
#pragma unroll
                        for (int r = 0; r < RB; r++) {
                            const float4 xv = *reinterpret_cast<const float4 *>(&hin[r][k]);
                            acc[r] = fmaf(xv.x, wv[i].x, acc[r]);
                            acc[r] = fmaf(xv.y, wv[i].y, acc[r]);
                            acc[r] = fmaf(xv.z, wv[i].z, acc[r]);
                            acc[r] = fmaf(xv.w, wv[i].w, acc[r]);
                        }
                    }
                }
            }
#pragma unroll
            for (int r = 0; r < RB; r++)
#pragma unroll
                for (int o = 16; o >= 1; o >>= 1) acc[r] = __fadd_rn(acc[r], __shfl_xor_sync(0xffffffffu, acc[r], o));
            const float bias = B != nullptr ? __ldg(B + j) : 0.0f;
#pragma unroll
            for (int r = 0; r < RB; r++) {
                if ((u32)r >= nr) break;
                float v = __fadd_rn(acc[r], bias);
                if (relu) v = gc_relu(v);
                if (last) {
                    if (lane == 0) a.y[(u64)(r0 + r) * N + j] = v;
                } else if (lane < CS) {
                    st_cluster(&hout[r][j], lane, v);
                }
            }
        }
        if (!last) gc_cluster_sync();
    }
}

// Floors: a cluster kernel that only meets its cluster `bars` times (the
// first barrier as the MLP kernel's start: relaxed arrive, acquire wait).
template <int CS>
__global__ void cluster_floor(u32 bars, float *sink) {
    for (u32 i = 0; i < bars; i++) gc_cluster_sync();
    if (bars == 1000u) sink[threadIdx.x] = 0.0f;  // never: keeps the kernel
}
__global__ void plain_floor(float *sink) {
    if (sink != nullptr) sink[threadIdx.x] = 0.0f;
}

struct Mlp {
    std::vector<unsigned> d;
    std::vector<std::vector<float>> hw, hb;
    std::vector<float> hx;
    float *dw[4] = {}, *db[4] = {}, *dx = nullptr, *dy = nullptr, *dh[4] = {};
    explicit Mlp(std::vector<unsigned> widths, unsigned seed) : d(widths) {
        srand(seed);
        auto rnd = [](size_t n, float s) {
            std::vector<float> v(n);
            for (auto &e : v) e = s * (2.0f * rand() / RAND_MAX - 1.0f);
            return v;
        };
        size_t L = d.size() - 1;
        hw.resize(L);
        hb.resize(L);
        for (size_t l = 0; l < L; l++) {
            hw[l] = rnd((size_t)d[l + 1] * d[l], 1.0f / sqrtf((float)d[l]));
            hb[l] = rnd(d[l + 1], 0.1f);
            CK(cudaMalloc(&dw[l], hw[l].size() * 4));
            CK(cudaMalloc(&db[l], hb[l].size() * 4));
            CK(cudaMemcpy(dw[l], hw[l].data(), hw[l].size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(db[l], hb[l].data(), hb[l].size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMalloc(&dh[l], (size_t)128 * d[l + 1] * 4));
        }
        hx = rnd((size_t)128 * d[0], 1.0f);
        CK(cudaMalloc(&dx, hx.size() * 4));
        CK(cudaMemcpy(dx, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
        dy = dh[L - 1];
    }
    size_t layers() const { return d.size() - 1; }
    // Worst |y - ref| / max |ref| over the first m rows, ref in float64.
    double err(unsigned m) const {
        size_t L = layers();
        std::vector<float> y((size_t)m * d[L]);
        CK(cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost));
        double worst = 0, big = 1e-30;
        for (unsigned i = 0; i < m; i++) {
            std::vector<double> h(hx.begin() + (size_t)i * d[0], hx.begin() + (size_t)(i + 1) * d[0]);
            for (size_t l = 0; l < L; l++) {
                std::vector<double> o(d[l + 1]);
                for (unsigned j = 0; j < d[l + 1]; j++) {
                    double s = hb[l][j];
                    for (unsigned k = 0; k < d[l]; k++) s += h[k] * hw[l][(size_t)j * d[l] + k];
                    o[j] = (l + 1 < L && s < 0) ? 0 : s;
                }
                h = o;
            }
            for (unsigned j = 0; j < d[L]; j++) {
                worst = std::max(worst, fabs(y[(size_t)i * d[L] + j] - h[j]));
                big = std::max(big, fabs(h[j]));
            }
        }
        return worst / big;
    }
    void chain(unsigned m, unsigned sms) const {
        size_t L = layers();
        for (size_t l = 0; l < L; l++)
            launch_small(launcher(m, d[l + 1], d[l], sms), dh[l], l == 0 ? dx : dh[l - 1], dw[l], db[l], m, d[l + 1], d[l],
                         l + 1 < L, l > 0);
    }
    MlpArgs args(unsigned m) const {
        MlpArgs a = {};
        for (size_t l = 0; l < layers(); l++) { a.w[l] = dw[l]; a.b[l] = db[l]; }
        for (size_t l = 0; l < d.size(); l++) a.d[l] = d[l];
        a.layers = (u32)layers();
        a.rows = m;
        a.relu = (1u << (layers() - 1)) - 1u;
        a.x = dx;
        a.y = dy;
        return a;
    }
};

// Launches `kern` on st in clusters of `cs` blocks along x (sizes over 8
// allowed once per kernel).
template <class... P, class... A>
static void launch_clustered(void (*kern)(P...), dim3 grid, unsigned threads, unsigned cs, A... args) {
    if (cs > 8) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    CK(launch_ex(kern, grid, threads, 0, st, cs, false, args...));
}

template <int CS, int WARPS, int RB, int KV>
static void launch_cluster(const Mlp &net, unsigned m) {
    launch_clustered(mlp_cluster<CS, WARPS, RB, KV>, dim3(CS, (m + RB - 1) / RB, 1), WARPS * 32, CS, net.args(m));
}

template <int CS, int WARPS, int RB, int KV>
static void variant(const char *name, Mlp &net, unsigned m) {
    CK(cudaMemset(net.dy, 0xff, (size_t)m * net.d.back() * 4));
    launch_cluster<CS, WARPS, RB, KV>(net, m);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    double e = net.err(m);
    std::vector<float> y1((size_t)m * net.d.back()), y2(y1.size());
    CK(cudaMemcpy(y1.data(), net.dy, y1.size() * 4, cudaMemcpyDeviceToHost));
    double us_graph = time_fn([&] { launch_cluster<CS, WARPS, RB, KV>(net, m); });
    double us_replay = time_replay([&] { launch_cluster<CS, WARPS, RB, KV>(net, m); });
    CK(cudaMemcpy(y2.data(), net.dy, y2.size() * 4, cudaMemcpyDeviceToHost));
    bool same = memcmp(y1.data(), y2.data(), y1.size() * 4) == 0;
    printf("CL %-12s m %3u  in-graph %7.3f us  replay %7.3f us  err %.1e %s\n", name, m, us_graph, us_replay, e,
           same ? "bitwise-repeat" : "DIFFERS");
}

template <int CS>
static void floor_line(unsigned threads, unsigned bars) {
    auto go = [&] { launch_clustered(cluster_floor<CS>, dim3(CS, 1, 1), threads, CS, (u32)bars, (float *)nullptr); };
    printf("FLOOR cluster %2d threads %4u barriers %u  in-graph %7.3f us  replay %7.3f us\n", CS, threads, bars,
           time_fn(go), time_replay(go));
}

static void floors() {
    for (unsigned threads : {32u, 1024u}) {
        auto go = [&] { plain_floor<<<16, threads, 0, st>>>(nullptr); };
        printf("FLOOR plain 16 blocks threads %4u  in-graph %7.3f us  replay %7.3f us\n", threads, time_fn(go), time_replay(go));
    }
    for (unsigned threads : {32u, 512u, 1024u})
        for (unsigned bars : {0u, 1u, 4u}) {
            floor_line<8>(threads, bars);
            floor_line<16>(threads, bars);
        }
}

// The notes' MLP taken apart: each layer alone (a plain launch), and the
// chains of its first 1, 2 and 3 layers (programmatic after the first, as
// the library runs them), beside chains of as many empty kernels of the
// first layer's grid (the launches' floor). GPU time per call in a graph of
// many / replayed alone. Prints `PART` lines.
static void parts(unsigned sms) {
    Mlp net({1024, 512, 256, 10}, 7);
    const size_t L = net.layers();
    auto layer = [&](unsigned m, size_t l, bool pdl) {
        launch_small(launcher(m, net.d[l + 1], net.d[l], sms), net.dh[l], l == 0 ? net.dx : net.dh[l - 1], net.dw[l],
                     net.db[l], m, net.d[l + 1], net.d[l], l + 1 < L, pdl);
    };
    for (unsigned m : {1u, 4u, 16u, 32u}) {
        for (size_t l = 0; l < L; l++) {
            dim3 g = grid_of(launcher(m, net.d[l + 1], net.d[l], sms), m, net.d[l + 1]);
            printf("PART m %3u  layer %zu grid      %u blocks\n", m, l + 1, g.x * g.y);
            auto go = [&] { layer(m, l, false); };
            printf("PART m %3u  layer %zu alone      in-graph %7.3f us  replay %7.3f us\n", m, l + 1, time_fn(go),
                   time_replay(go));
        }
        for (size_t n = 1; n <= L; n++) {
            auto go = [&] { for (size_t l = 0; l < n; l++) layer(m, l, l > 0); };
            printf("PART m %3u  layers 1-%zu chain   in-graph %7.3f us  replay %7.3f us\n", m, n, time_fn(go),
                   time_replay(go));
        }
        CK(cudaStreamSynchronize(st));
        printf("PART m %3u  err %.1e\n", m, net.err(m));
    }
    dim3 g0 = grid_of(launcher(1, 512, 1024, sms), 1, 512);
    for (size_t n = 1; n <= L; n++) {
        auto go = [&] {
            for (size_t l = 0; l < n; l++) launch_pdl(plain_floor, g0, l > 0, (float *)nullptr);
        };
        printf("PART empty x %zu (%u blocks)    in-graph %7.3f us  replay %7.3f us\n", n, g0.x * g0.y, time_fn(go),
               time_replay(go));
    }
}

static void one(std::vector<unsigned> widths, const std::vector<unsigned> &batches, unsigned sms) {
    Mlp net(widths, 7);
    printf("MLP");
    for (unsigned w : widths) printf(" %u", w);
    printf("\n");
    for (unsigned m : batches) {
        net.chain(m, sms);
        CK(cudaStreamSynchronize(st));
        double e = net.err(m);
        double g = time_fn([&] { net.chain(m, sms); });
        double r = time_replay([&] { net.chain(m, sms); });
        printf("CHAIN %-9s m %3u  in-graph %7.3f us  replay %7.3f us  err %.1e\n", "per-layer", m, g, r, e);
        variant<16, 32, 1, 8>("16x32w r1", net, m);
        variant<16, 16, 1, 8>("16x16w r1", net, m);
        variant<8, 32, 1, 8>("8x32w r1", net, m);
        if (m >= 2) variant<16, 32, 2, 8>("16x32w r2", net, m);
        if (m >= 4) {
            variant<16, 32, 4, 8>("16x32w r4", net, m);
            variant<16, 16, 4, 8>("16x16w r4", net, m);
            variant<8, 32, 4, 8>("8x32w r4", net, m);
        }
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    CK(cudaStreamCreate(&st));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    if (argc > 1 && !strcmp(argv[1], "floors")) {
        floors();
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "parts")) {
        parts((unsigned)sms);
        return 0;
    }
    bool quick = argc > 1;
    one({1024, 512, 256, 10}, {1, 2, 4, 8, 16, 32, 64}, (unsigned)sms);
    if (quick) return 0;
    one({256, 256, 256}, {1, 8, 32}, (unsigned)sms);
    one({256, 256, 256, 256, 256}, {1, 8, 32}, (unsigned)sms);
    one({1024, 1024, 1024}, {1, 8, 32}, (unsigned)sms);
    one({1024, 1024, 1024, 1024, 1024}, {1, 8}, (unsigned)sms);
    return 0;
}
