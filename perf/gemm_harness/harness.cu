// The linear layer's GEMM, C = x . W^T + b (x M x K, W N x K), on the sweep
// shapes of issue 14 (item 4): the shipped GEMM kernels with each tile
// (gc_gemm_f32, gc_gemm_wide_f32, gc_gemm_mid_f32, gc_gemm_tf32) and
// variants of the tile templates (`vars` below), each checked against a
// float64 reference (and on odd edge shapes), timed as CUDA graph replays.
// Prints `RES M K N name us err` and `EDGE ...` lines; torch_ref.py times
// cuBLAS on the same shapes and prints the comparison. On the GPU machine,
// from the repository root: bash perf/gemm_harness/run.sh (perf/TUNING.md
// has what it found).
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
#include "linear_tf32.cu"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }
template <int BM, int BN, int TM, int TN, int BK, int MINB, int KS = 1>
__global__ void __launch_bounds__(KS * (BM / TM) * (BN / TN), MINB) var_f32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k) {
    __shared__ __align__(16) float smem[cmax(2 * BK * (BM + 4) + 2 * BK * (BN + 4), KS > 1 ? BM * BN : 0)];
    gc_gemm_reg<BM, BN, TM, TN, BK, KS * (BM / TM) * (BN / TN), GC_GEMM_TRANS_B, KS>(c, a, b, bias, m, n, k, k, k, n, GC_GEMM_TRANS_B, 1.0f, 0.0f, smem, blockIdx.x);
}
template <int BM, int BN, int BK, int WM, int WN, int MINB>
__global__ void __launch_bounds__(256, MINB) var_tf32(float *c, const float *a, const float *b, const float *bias, u32 m, u32 n, u32 k) {
    __shared__ __align__(16) u32 smem[2 * (BM + BN) * (BK + 4)];
    gc_tf32_tile<BM, BN, BK, WM, WN>(c, a, b, bias, m, n, k, k, k, n, 2u, 1.0f, 0.0f, smem, blockIdx.x);
}

#include "common.cuh"

typedef void (*VarFn)(float *, const float *, const float *, const float *, u32, u32, u32);
struct Var { const char *name; VarFn fn; int bm, bn, nt = 256; };

int main(int argc, char **argv) {
    CK(cudaStreamCreate(&st));
    std::vector<Var> vars = {
        {"f128x128k8b1", var_f32<128, 128, 8, 8, 8, 1>, 128, 128},
        {"f64x128k16b2", var_f32<64, 128, 4, 8, 16, 2>, 64, 128},
        {"f128x256k8b1", var_f32<128, 256, 8, 16, 8, 1>, 128, 256},
        {"f64x64k32b2", var_f32<64, 64, 4, 4, 32, 2>, 64, 64},
        {"f64x64k32s2", var_f32<64, 64, 4, 4, 32, 2, 2>, 64, 64, 512},
        {"f64x64x8k32s4", var_f32<64, 64, 8, 8, 32, 1, 4>, 64, 64, 256},
        {"t128x128k16w24", var_tf32<128, 128, 16, 2, 4, 2>, 128, 128},
        {"t128x128k16w42", var_tf32<128, 128, 16, 4, 2, 2>, 128, 128},
        {"t64x64k32w24", var_tf32<64, 64, 32, 2, 4, 2>, 64, 64},
        {"t128x64k16w42", var_tf32<128, 64, 16, 4, 2, 2>, 128, 64},
        {"t128x256k8w24b1", var_tf32<128, 256, 8, 2, 4, 1>, 128, 256},
    };
    for (auto &v : vars) {
        cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, v.fn));
        if (at.sharedSizeBytes > 48 * 1024) printf("%s smem %zu\n", v.name, at.sharedSizeBytes);
        printf("REG %s %d regs %zu local %zu smem\n", v.name, at.numRegs, at.localSizeBytes, at.sharedSizeBytes);
    }
    { cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, gc_gemm_f32)); printf("REG gc_gemm_f32 %d regs %zu local\n", at.numRegs, at.localSizeBytes);
      CK(cudaFuncGetAttributes(&at, gc_gemm_tf32)); printf("REG gc_gemm_tf32 %d regs %zu local\n", at.numRegs, at.localSizeBytes);
      CK(cudaFuncGetAttributes(&at, gc_gemm_wide_f32)); printf("REG gc_gemm_wide_f32 %d regs %zu local\n", at.numRegs, at.localSizeBytes);
      CK(cudaFuncGetAttributes(&at, gc_gemm_mid_f32)); printf("REG gc_gemm_mid_f32 %d regs %zu local\n", at.numRegs, at.localSizeBytes); }
    const int Ms[] = {256, 512, 1024, 2048, 4096};
    const int KN[][2] = {{1024, 1024}, {1024, 4096}, {4096, 1024}, {4096, 4096}, {1024, 512}};
    size_t maxe = 4096ull * 4096;
    float *x, *w, *b, *c; double *r, *ac;
    CK(cudaMalloc(&x, maxe * 4)); CK(cudaMalloc(&w, maxe * 4)); CK(cudaMalloc(&b, 4096 * 4)); CK(cudaMalloc(&c, maxe * 4));
    CK(cudaMalloc(&r, maxe * 8)); CK(cudaMalloc(&ac, maxe * 8));
    std::vector<float> h(maxe);
    srand(1);
    for (auto &v : h) v = 2.0f * rand() / RAND_MAX - 1.0f;
    CK(cudaMemcpy(x, h.data(), maxe * 4, cudaMemcpyHostToDevice));
    for (auto &v : h) v = (2.0f * rand() / RAND_MAX - 1.0f) / 32.0f;
    CK(cudaMemcpy(w, h.data(), maxe * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, h.data() + 7, 4096 * 4, cudaMemcpyHostToDevice));
    for (int M : Ms) for (auto &kn : KN) {
        const int K = kn[0], N = kn[1];
        ref64<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, st>>>(r, ac, x, w, b, M, N, K);
        CK(cudaStreamSynchronize(st));
        auto check = [&]() {
            unsigned long long z = 0; CK(cudaMemcpyToSymbol(g_err, &z, 8));
            relerr<<<1024, 256, 0, st>>>(c, r, ac, (size_t)M * N); CK(cudaStreamSynchronize(st));
            CK(cudaMemcpyFromSymbol(&z, g_err, 8)); double e; memcpy(&e, &z, 8); return e;
        };
        auto run = [&](const char *name, std::function<void()> f) {
            CK(cudaMemset(c, 0xff, (size_t)M * N * 4));
            f(); CK(cudaStreamSynchronize(st));
            double e = check();
            double us = time_fn(f);
            printf("RES %d %d %d %s %.2f %.3g\n", M, K, N, name, us, e);
            fflush(stdout);
        };
        for (u32 tile = 0; tile < 3; tile++) {
            u32 T = tile == 0 ? 128 : tile == 1 ? 64 : 32;
            u32 grid = ((M + T - 1) / T) * ((N + T - 1) / T);
            std::string nm = "ship" + std::to_string(tile);
            if (tile == 2 && K < 4096 && M > 512) continue;
            run(nm.c_str(), [&] { gc_gemm_f32<<<grid, 256, 0, st>>>(c, x, w, b, M, N, K, K, K, N, GC_GEMM_TRANS_B, 1.0f, 0.0f, tile); });
        }
        const u32 wide[3][2] = {{128, 256}, {128, 128}, {64, 64}};
        for (u32 tile = 0; tile < 3; tile++) {
            u32 grid = ((M + wide[tile][0] - 1) / wide[tile][0]) * ((N + wide[tile][1] - 1) / wide[tile][1]);
            std::string nm = "fwide" + std::to_string(tile);
            run(nm.c_str(), [&] { gc_gemm_wide_f32<<<grid, 256, 0, st>>>(c, x, w, b, M, N, K, K, K, N, GC_GEMM_TRANS_B, 1.0f, 0.0f, tile); });
        }
        run("fmid0", [&] { gc_gemm_mid_f32<<<((M + 63) / 64) * ((N + 127) / 128), 256, 0, st>>>(c, x, w, b, M, N, K, K, K, N, GC_GEMM_TRANS_B, 1.0f, 0.0f, 0u); });
        for (u32 tile = 0; tile < 2; tile++) {
            u32 T = tile == 0 ? 128 : 64;
            u32 grid = ((M + T - 1) / T) * ((N + T - 1) / T);
            std::string nm = "tship" + std::to_string(tile);
            run(nm.c_str(), [&] { gc_gemm_tf32<<<grid, 256, 0, st>>>(c, x, w, b, M, N, K, K, K, N, 2u, 1.0f, 0.0f, tile); });
        }
        for (auto &v : vars) {
            u32 grid = ((M + v.bm - 1) / v.bm) * ((N + v.bn - 1) / v.bn);
            run(v.name, [&] { v.fn<<<grid, v.nt, 0, st>>>(c, x, w, b, M, N, K); });
        }
    }
    // Edge shapes: odd sizes, check only.
    const int E[][3] = {{257, 33, 65}, {300, 1001, 77}, {129, 13, 130}, {513, 1027, 259}};
    for (auto &s : E) {
        int M = s[0], K = s[1], N = s[2];
        ref64<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, st>>>(r, ac, x, w, b, M, N, K);
        auto check = [&]() {
            unsigned long long z = 0; CK(cudaMemcpyToSymbol(g_err, &z, 8));
            relerr<<<1024, 256, 0, st>>>(c, r, ac, (size_t)M * N); CK(cudaStreamSynchronize(st));
            CK(cudaMemcpyFromSymbol(&z, g_err, 8)); double e; memcpy(&e, &z, 8); return e;
        };
        for (auto &v : vars) {
            u32 grid = ((M + v.bm - 1) / v.bm) * ((N + v.bn - 1) / v.bn);
            CK(cudaMemset(c, 0xff, (size_t)M * N * 4));
            v.fn<<<grid, v.nt, 0, st>>>(c, x, w, b, M, N, K); CK(cudaStreamSynchronize(st));
            printf("EDGE %d %d %d %s %.3g\n", M, K, N, v.name, check());
        }
        for (u32 tile = 0; tile < 2; tile++) {
            u32 T = tile == 0 ? 128 : 64;
            u32 grid = ((M + T - 1) / T) * ((N + T - 1) / T);
            CK(cudaMemset(c, 0xff, (size_t)M * N * 4));
            gc_gemm_tf32<<<grid, 256, 0, st>>>(c, x, w, b, M, N, K, K, K, N, 2u, 1.0f, 0.0f, tile); CK(cudaStreamSynchronize(st));
            printf("EDGE %d %d %d tship%u %.3g\n", M, K, N, tile, check());
        }
    }
    CK(cudaDeviceSynchronize());
    return 0;
}
