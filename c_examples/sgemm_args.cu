// Graph arguments with a foreign library: one cuBLAS SGEMM (C = A * B)
// captured on a borrowed stream, with A, B and C declared arguments
// (gc_capture_arg through graphcore.hpp's typed helpers). Each launch binds
// them to another set of buffers (gc_exec_launch_with); graphcore found the
// matrices' addresses in cuBLAS's kernel parameters by scanning them.
// Every result is checked: bitwise against the same SGEMM captured directly
// on that set's buffers, and against a float64 CPU reference.
//
// Built where nvcc exists (the GPU machine), by `make examples` or
// scripts/gpu-check: nvcc ... -lgraphcore -lcublas.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "graphcore.hpp"

namespace gc = graphcore;

#define M 192
#define N 160
#define K 224
#define SETS 4
#define LAUNCHES 64

#define CUDA(call)                                                                   \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));  \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

#define BLAS(call)                                                                   \
    do {                                                                             \
        if ((call) != CUBLAS_STATUS_SUCCESS) {                                       \
            std::fprintf(stderr, "%s failed\n", #call);                              \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

struct set {
    float *a, *b, *c;           // device: A is M x K, B is K x N, C is M x N (column-major)
    std::vector<float> ha, hb;  // host copies of A and B
};

static void sgemm(cublasHandle_t blas, const set &s) {
    const float one = 1.0f, zero = 0.0f;
    BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, s.a, M, s.b, K, &zero, s.c, M));
}

int main() {
    cudaStream_t raw;
    CUDA(cudaSetDevice(0));
    CUDA(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
    try {
        gc::context ctx(0);
        gc::stream stream = gc::stream::wrap(ctx, raw);
        cublasHandle_t blas;
        BLAS(cublasCreate(&blas));
        BLAS(cublasSetStream(blas, raw));
        BLAS(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST));

        std::vector<set> sets(SETS + 1);  // set 0: the one captured
        unsigned seed = 12345;
        auto rnd = [&seed]() {
            seed = seed * 1664525u + 1013904223u;
            return (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
        };
        for (auto &s : sets) {
            s.ha.resize((size_t)M * K);
            s.hb.resize((size_t)K * N);
            for (auto &v : s.ha) v = rnd();
            for (auto &v : s.hb) v = rnd();
            CUDA(cudaMalloc(&s.a, s.ha.size() * sizeof(float)));
            CUDA(cudaMalloc(&s.b, s.hb.size() * sizeof(float)));
            CUDA(cudaMalloc(&s.c, (size_t)M * N * sizeof(float)));
            CUDA(cudaMemcpy(s.a, s.ha.data(), s.ha.size() * sizeof(float), cudaMemcpyHostToDevice));
            CUDA(cudaMemcpy(s.b, s.hb.data(), s.hb.size() * sizeof(float), cudaMemcpyHostToDevice));
        }
        sgemm(blas, sets[0]);  // warm cuBLAS up outside a capture
        CUDA(cudaStreamSynchronize(raw));

        // Capture on set 0, declaring A, B and C.
        gc_graph *captured = nullptr;
        gc::arg<float> a, b, c;
        {
            gc::capture cap(stream);
            a = gc::capture_arg(stream, sets[0].a, (size_t)M * K);
            b = gc::capture_arg(stream, sets[0].b, (size_t)K * N);
            c = gc::capture_arg(stream, sets[0].c, (size_t)M * N);
            sgemm(blas, sets[0]);
            captured = cap.end().release();
        }
        gc::graph graph(captured);
        gc::exec exec(graph);
        std::size_t ua = gc::exec_arg_uses(exec, a.index), ub = gc::exec_arg_uses(exec, b.index),
                    uc = gc::exec_arg_uses(exec, c.index);
        std::printf("captured SGEMM %dx%dx%d: uses found in cuBLAS's parameters: A %zu, B %zu, C %zu\n",
                    M, N, K, ua, ub, uc);
        bool ok = ua > 0 && ub > 0 && uc > 0;

        // The same SGEMM captured directly on each set: what binding must give.
        std::vector<std::vector<float>> want(SETS + 1);
        for (int i = 1; i <= SETS; i++) {
            gc_graph *g = nullptr;
            {
                gc::capture cap(stream);
                sgemm(blas, sets[i]);
                g = cap.end().release();
            }
            gc::graph direct(g);
            gc::exec e(direct);
            CUDA(cudaMemset(sets[i].c, 0, (size_t)M * N * sizeof(float)));
            gc::check(gc_exec_launch(e, stream));
            want[i].resize((size_t)M * N);
            CUDA(cudaMemcpyAsync(want[i].data(), sets[i].c, (size_t)M * N * sizeof(float),
                                 cudaMemcpyDeviceToHost, raw));
            CUDA(cudaStreamSynchronize(raw));
        }
        // float64 references.
        double worst = 0;
        for (int i = 1; i <= SETS; i++) {
            for (int col = 0; col < N; col++)
                for (int row = 0; row < M; row++) {
                    double r = 0;
                    for (int k = 0; k < K; k++)
                        r += (double)sets[i].ha[(size_t)k * M + row] * sets[i].hb[(size_t)col * K + k];
                    worst = std::fmax(worst, std::fabs(r - want[i][(size_t)col * M + row]));
                }
        }
        ok &= worst < 1e-3;

        // Rebind A, B and C on every launch, cycling through the sets in an
        // order that changes one, two or all three each time.
        std::vector<float> got((size_t)M * N);
        int bitwise = 0;
        for (int l = 0; l < LAUNCHES; l++) {
            int i = 1 + (l * 3 + l / SETS) % SETS;
            const set &s = sets[i];
            CUDA(cudaMemsetAsync(s.c, 0xff, (size_t)M * N * sizeof(float), raw));
            gc::exec_launch_with(exec, stream, {a.to(s.a, (size_t)M * K), b.to(s.b), c.to(s.c)});
            CUDA(cudaMemcpyAsync(got.data(), s.c, got.size() * sizeof(float), cudaMemcpyDeviceToHost, raw));
            CUDA(cudaStreamSynchronize(raw));
            bool same = std::memcmp(got.data(), want[i].data(), got.size() * sizeof(float)) == 0;
            bitwise += same;
            ok &= same;
        }
        std::printf("%d launches, A, B and C rebound each time: %d of %d bitwise equal to a direct capture; "
                    "max abs err vs float64 %.2e\n",
                    LAUNCHES, bitwise, LAUNCHES, worst);

        cublasDestroy(blas);
        for (auto &s : sets) {
            CUDA(cudaFree(s.a));
            CUDA(cudaFree(s.b));
            CUDA(cudaFree(s.c));
        }
        CUDA(cudaStreamDestroy(raw));
        std::printf("sgemm_args.cu: %s\n", ok ? "all results correct" : "FAILED");
        return ok ? 0 : 1;
    } catch (const gc::error &e) {
        std::fprintf(stderr, "graphcore: %s\n", e.what());
        return 1;
    }
}
