// Split-K over a thread-block cluster for the linear layer (issue 14, item 4
// and the MLP sweep's "nowhere lose"): y = x . W^T + b with small M and long
// K, where neither the small-batch kernel nor the GEMM tiles fill an H100.
// Times gc_linear_cluster_f32's tiles (and template variants of
// gc_cluster_tile, and kvec_cl's cp.async pipelines) at cluster sizes 1-8
// beside the kernels the library
// launches today (gc_linear_small_f32 with ops.rs's launch shape, the GEMM
// tiles), each checked against float64 and run twice for bitwise equality,
// then odd edge shapes (check only). Prints `RES M K N name us err bitwise`,
// `EDGE ...` and `OCC ...` lines; splitk_ref.py times cuBLAS beside it and
// prints the comparison. On the GPU machine, from the repository root:
// bash perf/gemm_harness/splitk.sh (perf/TUNING.md has what it found);
// `splitk quick` runs only the 33-64-row shapes with 2^24 weights.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
// linear.cu's CPU-emulation hook (kernels/emu), unused in a GPU build.
__host__ __device__ inline void emu_yield() {}
#include "linear.cu"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }
// A cluster tile with its own bounds (MINB blocks per SM).
template <int BM, int BN, int TM, int TN, int BK, int MINB>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), MINB) var_cl(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k) {
    GC_PDL_WAIT();
    __shared__ __align__(16) float smem[cmax(2 * BK * (BM + 4) + 2 * BK * (BN + 4), BM * BN)];
    gc_cluster_tile<BM, BN, TM, TN, BK, (BM / TM) * (BN / TN)>(c, a, b, bias, m, n, k, k, k, n, GC_GEMM_TRANS_B, 1.0f, 0.0f, smem);
}

// The 64 x 64 cluster tile with a cp.async pipeline of ST stages (twelfth
// session; shipped with BK 32, ST 2 as gc_linear_cluster_f32 tile 3):
// gc_cluster_kvec<BK, ST> with its staging in dynamic shared memory,
// kvec_smem<BK, ST>() bytes. Needs k % 4 == 0 and 16-byte aligned x, W.
template <int BK, int ST>
__host__ __device__ constexpr size_t kvec_smem() { return (size_t)GC_KVEC_SMEM(BK, ST) * 4; }
template <int BK, int ST>
__global__ void __launch_bounds__(256, 1) kvec_cl(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k) {
    GC_PDL_WAIT();
    extern __shared__ __align__(16) float smem[];
    gc_cluster_kvec<BK, ST>(c, a, b, bias, m, n, k, k, k, n, GC_GEMM_TRANS_B, 1.0f, 0.0f, smem);
}
typedef void (*ClFn)(float *, const float *, const float *, const float *, u32, u32, u32);
struct ClVar { const char *name; ClFn fn; int bm, bn, nt; size_t smem = 0; };

#include "common.cuh"

// ops.rs small_config (n x k layout, m > 1): packed config and grid.
static u32 small_config(u32 m, u32 n, u32 k, u32 sms, dim3 &grid) {
    auto np2 = [](unsigned long long v) { unsigned long long p = 1; while (p < v) p <<= 1; return p; };
    u32 lr = n < 64 ? 2 : m > 32 ? 3 : 2, lc = n < 64 ? 0 : 2;
    unsigned long long rows = std::max(np2(m), 1ull << lr), cols = std::max(np2(n), 1ull << lc);
    unsigned long long steps = std::max((k + 3ull) / 4, 32ull);
    struct S { u32 lgr, lgc; bool ok; unsigned long long blocks; };
    std::vector<S> v;
    for (u32 lgr = 0; lgr <= 3; lgr++) for (u32 lgc = 0; lgc <= 3 - lgr; lgc++) {
        unsigned long long bm = 1ull << (lr + lgr), bn = 1ull << (lc + lgc);
        if (bm > rows || bn > cols) continue;
        unsigned long long lanes = 32ull << (3 - lgr - lgc);
        v.push_back({lgr, lgc, lanes <= steps, ((m + bm - 1) / bm) * ((n + bn - 1) / bn)});
    }
    bool any = false; for (auto &s : v) any |= s.ok;
    if (any) v.erase(std::remove_if(v.begin(), v.end(), [](const S &s) { return !s.ok; }), v.end());
    bool full = false; for (auto &s : v) full |= s.blocks >= sms;
    auto key = [&](const S &s) {
        unsigned long long b = full ? (s.blocks >= sms ? s.blocks : ~0ull) : ~0ull - s.blocks;
        return std::make_pair(b, 3 - s.lgr);
    };
    S best = v[0];
    for (auto &s : v) if (key(s) < key(best)) best = s;
    unsigned long long bm = 1ull << (lr + best.lgr), bn = 1ull << (lc + best.lgc);
    grid = dim3((n + bn - 1) / bn, (m + bm - 1) / bm);
    return lr | lc << 2 | best.lgr << 4 | best.lgc << 6;
}

template <class F>
static void launch_cl(F fn, u32 blocks, u32 nt, u32 cs, float *c, const float *x, const float *w, const float *b, u32 m, u32 n, u32 k, size_t smem = 0) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks * cs); cfg.blockDim = dim3(nt); cfg.stream = st; cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cs; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, fn, c, x, w, b, m, n, k));
}
static void launch_ship(u32 tile, u32 blocks, u32 cs, float *c, const float *x, const float *w, const float *b, u32 m, u32 n, u32 k) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks * cs); cfg.blockDim = dim3(256); cfg.stream = st;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cs; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, gc_linear_cluster_f32, c, x, w, b, m, n, k, k, k, n, GC_GEMM_TRANS_B, 1.0f, 0.0f, tile));
}

int main(int argc, char **argv) {
    // `splitk quick`: 33-64 rows with 2^24 weights, the small-batch kernel, the
    // shipped 64 x 64 cluster tile and the same with K chunks of 32 only; no edge shapes.
    const bool quick = argc > 1 && !strcmp(argv[1], "quick");
    CK(cudaStreamCreate(&st));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::vector<ClVar> vars = {
        {"c64x128b1", var_cl<64, 128, 4, 8, 16, 1>, 64, 128, 256},
        {"c64x128", var_cl<64, 128, 4, 8, 16, 2>, 64, 128, 256},
        {"c32x128", var_cl<32, 128, 4, 8, 16, 4>, 32, 128, 128},
        {"c64x64t8", var_cl<64, 64, 8, 8, 16, 4>, 64, 64, 64},
        // K chunks of 32 instead of 16 (half the barriers, twice the bytes per fetch; twelfth session)
        {"c64x64k32", var_cl<64, 64, 4, 4, 32, 2>, 64, 64, 256},
        {"c64x64k32b1", var_cl<64, 64, 4, 4, 32, 1>, 64, 64, 256},
        // cp.async pipelines, float4s along k (kvec_cl)
        {"kv32x3", kvec_cl<32, 3>, 64, 64, 256, kvec_smem<32, 3>()},
        {"kv32x4", kvec_cl<32, 4>, 64, 64, 256, kvec_smem<32, 4>()},
        {"kv64x3", kvec_cl<64, 3>, 64, 64, 256, kvec_smem<64, 3>()},
        {"kv16x6", kvec_cl<16, 6>, 64, 64, 256, kvec_smem<16, 6>()},
        {"kv32x2", kvec_cl<32, 2>, 64, 64, 256, kvec_smem<32, 2>()},
        {"kv16x4", kvec_cl<16, 4>, 64, 64, 256, kvec_smem<16, 4>()},
    };
    for (auto &v : vars)
        if (v.smem) CK(cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)v.smem));
    {
        cudaFuncAttributes at;
        CK(cudaFuncGetAttributes(&at, gc_linear_cluster_f32));
        printf("REG gc_linear_cluster_f32 %d regs %zu local %zu smem\n", at.numRegs, at.localSizeBytes, at.sharedSizeBytes);
        for (auto &v : vars) {
            CK(cudaFuncGetAttributes(&at, v.fn));
            printf("REG %s %d regs %zu local %zu smem\n", v.name, at.numRegs, at.localSizeBytes, at.sharedSizeBytes);
        }
        for (int cs : {2, 4, 8}) {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(cs * 64); cfg.blockDim = dim3(256);
            cudaLaunchAttribute a[1]; a[0].id = cudaLaunchAttributeClusterDimension;
            a[0].val.clusterDim.x = cs; a[0].val.clusterDim.y = 1; a[0].val.clusterDim.z = 1;
            cfg.attrs = a; cfg.numAttrs = 1;
            int nc = 0; CK(cudaOccupancyMaxActiveClusters(&nc, gc_linear_cluster_f32, &cfg));
            printf("OCC gc_linear_cluster_f32 cluster %d: %d active clusters (%d blocks)\n", cs, nc, nc * cs);
        }
    }
    // M K N
    using Shape = std::vector<int>;
    const std::vector<Shape> QS = {{64, 4096, 4096}, {56, 4096, 4096}, {48, 4096, 4096}, {40, 4096, 4096},
                                   {33, 4096, 4096}, {64, 2048, 8192}, {64, 8192, 2048}};
    const std::vector<Shape> SH = {{64, 4096, 4096}, {128, 4096, 4096}, {256, 4096, 4096}, {32, 4096, 4096},
                         {64, 1024, 1024}, {128, 1024, 1024}, {512, 1024, 512}, {64, 1024, 4096}, {64, 4096, 1024}};
    size_t maxe = 4096ull * 4096;
    float *x, *w, *b, *c, *c2; double *r, *ac;
    CK(cudaMalloc(&x, maxe * 4)); CK(cudaMalloc(&w, maxe * 4)); CK(cudaMalloc(&b, 4096 * 4)); CK(cudaMalloc(&c, maxe * 4));
    CK(cudaMalloc(&c2, maxe * 4)); CK(cudaMalloc(&r, maxe * 8)); CK(cudaMalloc(&ac, maxe * 8));
    std::vector<float> h(maxe), h2(maxe);
    srand(1);
    for (auto &v : h) v = 2.0f * rand() / RAND_MAX - 1.0f;
    CK(cudaMemcpy(x, h.data(), maxe * 4, cudaMemcpyHostToDevice));
    for (auto &v : h) v = (2.0f * rand() / RAND_MAX - 1.0f) / 32.0f;
    CK(cudaMemcpy(w, h.data(), maxe * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, h.data() + 7, 4096 * 4, cudaMemcpyHostToDevice));
    auto check = [&](int M, int N) {
        unsigned long long z = 0; CK(cudaMemcpyToSymbol(g_err, &z, 8));
        relerr<<<1024, 256, 0, st>>>(c, r, ac, (size_t)M * N); CK(cudaStreamSynchronize(st));
        CK(cudaMemcpyFromSymbol(&z, g_err, 8)); double e; memcpy(&e, &z, 8); return e;
    };
    // Runs f twice into c (poisoned before each), compares the bits, checks vs float64.
    auto verify = [&](int M, int N, const std::function<void()> &f, double &err, bool &same) {
        size_t bytes = (size_t)M * N * 4;
        CK(cudaMemset(c, 0xff, bytes)); f(); CK(cudaStreamSynchronize(st));
        CK(cudaMemcpy(h.data(), c, bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemset(c, 0x7f, bytes)); f(); CK(cudaStreamSynchronize(st));
        CK(cudaMemcpy(h2.data(), c, bytes, cudaMemcpyDeviceToHost));
        same = memcmp(h.data(), h2.data(), bytes) == 0;
        err = check(M, N);
    };
    for (const Shape &s : quick ? QS : SH) {
        const int M = s[0], K = s[1], N = s[2];
        ref64<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, st>>>(r, ac, x, w, b, M, N, K);
        CK(cudaStreamSynchronize(st));
        auto run = [&](const std::string &name, std::function<void()> f) {
            if (quick && name != "small" && name != "ship1s2" && name != "ship2s2" && name != "ship3s2" && name.rfind("kv", 0) != 0) return;
            double e; bool same;
            verify(M, N, f, e, same);
            double us = time_fn(f);
            printf("RES %d %d %d %s %.2f %.3g %d\n", M, K, N, name.c_str(), us, e, (int)same);
            fflush(stdout);
        };
        if (M <= 256) {
            dim3 g; u32 cfg = small_config(M, N, K, sms, g);
            run("small", [&] { gc_linear_small_f32<<<g, 256, 0, st>>>(c, x, w, b, M, N, K, 0u, cfg); });
        }
        run("gemm_split32", [&] { gc_gemm_f32<<<((M + 31) / 32) * ((N + 31) / 32), 256, 0, st>>>(c, x, w, b, M, N, K, K, K, N, GC_GEMM_TRANS_B, 1.0f, 0.0f, 2u); });
        run("mid64x128", [&] { gc_gemm_mid_f32<<<((M + 63) / 64) * ((N + 127) / 128), 256, 0, st>>>(c, x, w, b, M, N, K, K, K, N, GC_GEMM_TRANS_B, 1.0f, 0.0f, 0u); });
        run("wide64x64s4", [&] { gc_gemm_wide_f32<<<((M + 63) / 64) * ((N + 63) / 64), 256, 0, st>>>(c, x, w, b, M, N, K, K, K, N, GC_GEMM_TRANS_B, 1.0f, 0.0f, 2u); });
        if (M >= 128) run("wide128x128", [&] { gc_gemm_wide_f32<<<((M + 127) / 128) * ((N + 127) / 128), 256, 0, st>>>(c, x, w, b, M, N, K, K, K, N, GC_GEMM_TRANS_B, 1.0f, 0.0f, 1u); });
        for (u32 tile = 0; tile < 4; tile++) {
            u32 bm = tile == 0 ? 128 : 64, blocks = ((M + bm - 1) / bm) * ((N + 63) / 64);
            for (u32 cs : {1u, 2u, 4u, 8u}) {
                if (blocks * cs > 4 * (u32)sms) continue;
                run("ship" + std::to_string(tile) + "s" + std::to_string(cs), [&] { launch_ship(tile, blocks, cs, c, x, w, b, M, N, K); });
            }
        }
        for (auto &v : vars) {
            u32 blocks = ((M + v.bm - 1) / v.bm) * ((N + v.bn - 1) / v.bn);
            for (u32 cs : {2u, 4u, 8u}) {
                if (blocks * cs > 4 * (u32)sms || blocks * cs < (u32)sms / 2) continue;
                run(std::string(v.name) + "s" + std::to_string(cs), [&] { launch_cl(v.fn, blocks, v.nt, cs, c, x, w, b, M, N, K, v.smem); });
            }
        }
    }
    // Edge shapes (odd sizes, K shorter than the cluster's chunks, misaligned rows): check only.
    const int E[][3] = {{67, 1001, 257}, {1, 33, 5}, {130, 4097, 130}, {64, 20, 64}, {3, 4096, 131}};
    for (auto &s : E) {
        if (quick) break;
        int M = s[0], K = s[1], N = s[2];
        ref64<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, st>>>(r, ac, x, w, b, M, N, K);
        CK(cudaStreamSynchronize(st));
        for (u32 tile = 0; tile < 4; tile++) {
            u32 bm = tile == 0 ? 128 : 64, blocks = ((M + bm - 1) / bm) * ((N + 63) / 64);
            for (u32 cs : {1u, 2u, 3u, 4u, 8u}) {
                double e; bool same;
                verify(M, N, [&] { launch_ship(tile, blocks, cs, c, x, w, b, M, N, K); }, e, same);
                printf("EDGE %d %d %d ship%us%u %.3g %d\n", M, K, N, tile, cs, e, (int)same);
            }
        }
    }
    CK(cudaDeviceSynchronize());
    printf("DONE\n");
    return 0;
}
