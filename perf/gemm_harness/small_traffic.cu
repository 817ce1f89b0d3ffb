// Is gc_linear_small_f32 bound by its x traffic at 8-64 rows? The harness
// times the launcher's config of the shipped kernel on the notes' layer
// shapes, built four ways from one source (small_traffic.sh patches a copy
// of kernels/linear.cu): as shipped; with every x row read from row 0 (the
// block's x reads then hit L1: what the kernel would cost if x came for
// free); with every W column read from column 0 (W for free); with both.
// Beside each, the same grid of empty blocks. The outputs
// of the patched builds are wrong by design and not checked. Prints
// `TRAFFIC variant m k n blocks ... us U empty E` lines (GPU time per call in a graph of
// many, the mean of 3 medians).
#include <cuda_runtime.h>
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

// The same grid doing nothing: what a launch costs in a graph of many.
__global__ void __launch_bounds__(256, 2) empty_kernel() {}

#ifndef VARIANT
#define VARIANT "shipped"
#endif

int main() {
    CK(cudaStreamCreate(&st));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const unsigned shapes[][2] = {{1024, 512}, {512, 256}, {1024, 1024}};
    const unsigned rows[] = {8, 16, 32, 64};
    float *x, *w, *b, *y;
    CK(cudaMalloc(&x, 64 * 1024 * 4));
    CK(cudaMalloc(&w, 1024 * 1024 * 4));
    CK(cudaMalloc(&b, 1024 * 4));
    CK(cudaMalloc(&y, 64 * 1024 * 4));
    CK(cudaMemset(x, 0, 64 * 1024 * 4));
    CK(cudaMemset(w, 0, 1024 * 1024 * 4));
    CK(cudaMemset(b, 0, 1024 * 4));
    for (auto &s : shapes)
        for (unsigned m : rows) {
            unsigned k = s[0], n = s[1];
            Cfg c = launcher(m, n, k, (unsigned)sms);
            double us = 0;
            for (int rep = 0; rep < 3; rep++)
                us += time_fn([&] { launch_small(c, y, x, w, b, m, n, k, true, false); }) / 3;
            dim3 g = grid_of(c, m, n);
            double empty = 0;
            for (int rep = 0; rep < 3; rep++) empty += time_fn([&] { empty_kernel<<<g, 256, 0, st>>>(); }) / 3;
            printf("TRAFFIC %s %u %u %u blocks %u tile %ux%u groups %ux%u us %.3f empty %.3f\n", VARIANT, m, k, n,
                   g.x * g.y, 1u << c.lr, 1u << c.lc, 1u << c.lgr, 1u << c.lgc, us, empty);
        }
    return 0;
}
