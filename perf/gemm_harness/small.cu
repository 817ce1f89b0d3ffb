// The small-batch linear kernel (gc_linear_small_f32) on the notes' MLP
// layer shapes (1024 -> 512 -> 256 -> 10) at small batches: every legal
// launch config of the shipped kernel timed alone (graph replays), and the
// whole 3-layer forward as a chain of programmatic launches (as the library
// runs it on an H100) with the launcher's configs and with the fastest
// alone. Each config is checked against a float64 reference. Prints
// `CFG m k n tile groups blocks us err` and `CHAIN m which us` lines.
// On the GPU machine, from the repository root:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -o small perf/gemm_harness/small.cu && ./small
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
// linear.cu's CPU-emulation hook (kernels/emu), unused in a GPU build.
__host__ __device__ inline void emu_yield() {}
#include "linear.cu"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "common.cuh"

#include "small_common.cuh"

int main() {
    CK(cudaStreamCreate(&st));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    NotesMlp mlp;
    const unsigned *dims = mlp.dims;
    std::vector<float> *hw = mlp.hw, *hb = mlp.hb;
    float **dw = mlp.dw, **db = mlp.db, *dx = mlp.dx, **dh = mlp.dh;
    const unsigned batches[] = {1, 2, 4, 8, 16, 32};
    // Each layer's input on the host, for the references: x, then ReLU(h) of
    // a reference-free pass (the device's, checked layer by layer).
    const Cfg tiles[] = {{0, 0, 0, 0}, {2, 0, 0, 0}, {2, 2, 0, 0}, {3, 2, 0, 0}};
    for (unsigned m : batches) {
        Cfg best[3];
        for (int l = 0; l < 3; l++) {
            unsigned k = dims[l], n = dims[l + 1];
            bool relu = l < 2;
            const float *in = l == 0 ? dx : dh[l - 1];
            std::vector<float> hin((size_t)m * k);
            CK(cudaMemcpy(hin.data(), in, hin.size() * 4, cudaMemcpyDeviceToHost));
            Cfg ship = launcher(m, n, k, (unsigned)sms);
            double best_us = 1e30;
            for (Cfg t : tiles)
                for (unsigned lgr = 0; lgr <= 3; lgr++)
                    for (unsigned lgc = 0; lgc + lgr <= 3; lgc++) {
                        Cfg c{t.lr, t.lc, lgr, lgc};
                        if ((1u << (c.lr + c.lgr)) > std::max(4u, m) * 2 && lgr > 0) continue;
                        CK(cudaMemset(dh[l], 0xff, (size_t)m * n * 4));
                        launch_small(c, dh[l], in, dw[l], db[l], m, n, k, relu, false);
                        CK(cudaStreamSynchronize(st));
                        double err = check(dh[l], hin, hw[l], hb[l], m, n, k, relu);
                        double us = time_fn([&] { launch_small(c, dh[l], in, dw[l], db[l], m, n, k, relu, false); });
                        dim3 g = grid_of(c, m, n);
                        bool is_ship = packed(c) == packed(ship);
                        printf("CFG %u %u %u tile %ux%u groups %ux%u blocks %u us %.3f err %.1e%s\n", m, k, n, 1u << c.lr,
                               1u << c.lc, 1u << c.lgr, 1u << c.lgc, g.x * g.y, us, err, is_ship ? " SHIPPED" : "");
                        if (err < 1e-5 && us < best_us) { best_us = us; best[l] = c; }
                    }
            // Leave the shipped config's output for the next layer.
            launch_small(ship, dh[l], in, dw[l], db[l], m, n, k, relu, false);
            CK(cudaStreamSynchronize(st));
        }
        for (int which = 0; which < 2; which++) {
            Cfg cs[3];
            for (int l = 0; l < 3; l++) cs[l] = which ? best[l] : launcher(m, dims[l + 1], dims[l], (unsigned)sms);
            auto chain = [&] {
                for (int l = 0; l < 3; l++)
                    launch_small(cs[l], dh[l], l == 0 ? dx : dh[l - 1], dw[l], db[l], m, dims[l + 1], dims[l], l < 2, l > 0);
            };
            double us = 0;
            for (int rep = 0; rep < 3; rep++) us += time_fn(chain) / 3;
            printf("CHAIN %u %s us %.3f  (", m, which ? "best-alone" : "launcher", us);
            for (int l = 0; l < 3; l++) printf(" %ux%u/%ux%u", 1u << cs[l].lr, 1u << cs[l].lc, 1u << cs[l].lgr, 1u << cs[l].lgc);
            printf(" )\n");
        }
    }
    return 0;
}
