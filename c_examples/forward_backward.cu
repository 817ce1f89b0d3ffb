// The CUDA C++ forward/backward sample with its own __global__ kernels,
// handed to graphcore: cudaGetFuncBySymbol + gc_function_wrap for explicit
// kernel nodes, and a borrowed cudaStream_t (gc_stream_wrap) on which
// graphcore captures the sample's <<<>>> launches and a cuBLAS call.
//
// Built where nvcc exists (the GPU machine), by `make examples` or
// scripts/gpu-check: nvcc ... -lgraphcore -lcublas.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "graphcore.h"

#define N 1024

__global__ void kernel_forward(float *data) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    data[idx] = data[idx] * 2.0f;
}

__global__ void kernel_backward(float *data) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    data[idx] = data[idx] / 2.0f;
}

#define TRY(call)                                                                    \
    do {                                                                             \
        gc_status st_ = (call);                                                      \
        if (st_ != GC_SUCCESS) {                                                     \
            std::fprintf(stderr, "%s failed: %s\n  %s\n", #call,                     \
                         gc_status_name((int)st_), gc_last_error());                 \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

#define CUDA(call)                                                                   \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));  \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

static bool same(const float *a, const float *b) { return std::memcmp(a, b, N * sizeof(float)) == 0; }

int main() {
    // The runtime creates the primary context graphcore shares.
    cudaStream_t raw;
    CUDA(cudaSetDevice(0));
    CUDA(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));

    gc_context *ctx;
    gc_stream *stream;
    TRY(gc_context_create(0, &ctx));
    TRY(gc_stream_wrap(ctx, raw, &stream));

    // The sample's kernels as graphcore functions.
    cudaFunction_t fwd_raw, bwd_raw;
    CUDA(cudaGetFuncBySymbol(&fwd_raw, (const void *)kernel_forward));
    CUDA(cudaGetFuncBySymbol(&bwd_raw, (const void *)kernel_backward));
    gc_function *fwd, *bwd;
    TRY(gc_function_wrap(ctx, (void *)fwd_raw, "kernel_forward", &fwd));
    TRY(gc_function_wrap(ctx, (void *)bwd_raw, "kernel_backward", &bwd));

    float *h_in, *h_out, *d_data;
    TRY(gc_host_alloc(ctx, N * sizeof(float), (void **)&h_in));
    TRY(gc_host_alloc(ctx, N * sizeof(float), (void **)&h_out));
    CUDA(cudaMalloc(&d_data, N * sizeof(float)));  // runtime memory works too
    for (int i = 0; i < N; i++) h_in[i] = (float)(i % 89) * 0.25f - 7.0f;
    int ok = 1;

    // 1. Explicit nodes with the sample's kernels (instantiated, this time).
    void *args[] = {&d_data};
    gc_dim3 grid = {1, 1, 1}, block = {N, 1, 1};
    gc_graph *graph;
    gc_node in, f, b, out;
    TRY(gc_graph_create(ctx, &graph));
    TRY(gc_graph_add_memcpy(graph, d_data, h_in, N * sizeof(float), NULL, 0, &in));
    TRY(gc_graph_add_kernel(graph, fwd, grid, block, 0, args, &in, 1, &f));
    TRY(gc_graph_add_kernel(graph, bwd, grid, block, 0, args, &f, 1, &b));
    TRY(gc_graph_add_memcpy(graph, h_out, d_data, N * sizeof(float), &b, 1, &out));
    gc_exec *exec;
    TRY(gc_graph_instantiate(graph, GC_INSTANTIATE_UPLOAD, &exec));
    TRY(gc_exec_launch(exec, stream));
    TRY(gc_stream_synchronize(stream));
    std::printf("built (sample kernels):       data %s\n", same(h_in, h_out) ? "comes back equal" : "DIFFERS");
    ok &= same(h_in, h_out);

    // 2. Capture the sample's own <<<>>> launches and a cuBLAS call on the
    //    borrowed stream: y = 2*x (forward), cuBLAS saxpy y += -1*x,
    //    then y = 2*y and y = y/2 ... checked against the host.
    cublasHandle_t blas;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) { std::fprintf(stderr, "cublasCreate failed\n"); return 1; }
    cublasSetStream(blas, raw);
    float *d_x;
    CUDA(cudaMalloc(&d_x, N * sizeof(float)));
    CUDA(cudaMemcpy(d_x, h_in, N * sizeof(float), cudaMemcpyHostToDevice));
    const float minus_one = -1.0f;
    cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST);
    // Warm cuBLAS up outside the capture (it allocates on first use).
    cublasSaxpy(blas, N, &minus_one, d_x, 1, d_data, 1);
    CUDA(cudaStreamSynchronize(raw));

    TRY(gc_capture_begin(stream, NULL, GC_CAPTURE_THREAD_LOCAL));
    TRY(gc_memcpy_async(stream, d_data, h_in, N * sizeof(float)));
    kernel_forward<<<1, N, 0, raw>>>(d_data);                 // y = 2x
    cublasSaxpy(blas, N, &minus_one, d_x, 1, d_data, 1);      // y = 2x - x = x
    kernel_forward<<<1, N, 0, raw>>>(d_data);                 // y = 2x
    kernel_backward<<<1, N, 0, raw>>>(d_data);                // y = x
    TRY(gc_memcpy_async(stream, h_out, d_data, N * sizeof(float)));
    gc_graph *captured;
    TRY(gc_capture_end(stream, &captured));
    size_t nodes = 0;
    TRY(gc_graph_node_count(captured, &nodes));
    gc_exec *cexec;
    TRY(gc_graph_instantiate(captured, 0, &cexec));
    std::memset(h_out, 0, N * sizeof(float));
    TRY(gc_exec_launch(cexec, stream));
    TRY(gc_stream_synchronize(stream));
    std::printf("captured (<<<>>> + cuBLAS):   data %s (%zu nodes)\n",
                same(h_in, h_out) ? "comes back equal" : "DIFFERS", nodes);
    ok &= same(h_in, h_out);
    TRY(gc_graph_write_dot(captured, "forward_backward_cu.dot"));

    cublasDestroy(blas);
    TRY(gc_exec_destroy(cexec));
    TRY(gc_graph_destroy(captured));
    TRY(gc_exec_destroy(exec));
    TRY(gc_graph_destroy(graph));
    TRY(gc_function_destroy(fwd));
    TRY(gc_function_destroy(bwd));
    TRY(gc_host_free(ctx, h_in));
    TRY(gc_host_free(ctx, h_out));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
    CUDA(cudaFree(d_data));
    CUDA(cudaFree(d_x));
    CUDA(cudaStreamDestroy(raw));
    std::printf("forward_backward.cu: %s\n", ok ? "all runs correct" : "FAILED");
    return ok ? 0 : 1;
}
