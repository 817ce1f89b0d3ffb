// synccheck_conditional.cu: shows that compute-sanitizer's synccheck reports
// "Barrier error detected. Divergent thread(s) in warp" for correct kernels
// when they run inside a WHILE conditional node's body, and reports nothing
// for the same kernels in a plain graph. graphcore's own kernels show the same
// report inside bodies (gc_mse_f32 in gpu::control and train_until), which is
// why stage/run.sh leaves conditional bodies out of synccheck; memcheck covers
// them. Plain CUDA runtime calls only, no graphcore.
//
//   nvcc -O2 -arch=sm_90 -rdc=true synccheck_conditional.cu -lcudadevrt
//   ./a.out plain | while      runs the kernels (3 WHILE iterations)
//
// stage/run.sh runs both modes under synccheck: "plain" must be clean, and
// "while" must still be reported (or, as seen on driver 580, fault under the
// tool though it runs clean without it); if it runs clean under the tool, the
// tool was fixed and the exclusion in stage/run.sh should go.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t err_ = (x);                                                                \
        if (err_ != cudaSuccess) {                                                             \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));                \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

// Only a uniform __syncthreads: every thread of the block reaches it.
__global__ void uniform_barrier(float *out) {
    __shared__ float s[256];
    s[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s[255];
}

// A divergent loop, then full-mask shuffles and barriers reached by all.
__global__ void block_sum(float *out, const float *in, int n) {
    __shared__ float ws[8];
    float v = 0.f;
    for (int b = threadIdx.x; b < n; b += blockDim.x) v += in[b];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int w = 0; w < 8; ++w) t += ws[w];
        out[blockIdx.x] = t;
    }
}

// Keeps the WHILE running until the counter reaches the limit.
__global__ void count_to(cudaGraphConditionalHandle h, unsigned *counter, unsigned limit) {
    const unsigned c = ++*counter;
    cudaGraphSetConditional(h, c < limit ? 1u : 0u);
}

int main(int argc, char **argv) {
    const bool in_while = argc > 1 && !strcmp(argv[1], "while");
    float *out, *in;
    unsigned *counter;
    CK(cudaMalloc(&out, 4096));
    CK(cudaMalloc(&in, 4096 * 4));
    CK(cudaMalloc(&counter, 4));
    CK(cudaMemset(in, 0, 4096 * 4));
    CK(cudaMemset(counter, 0, 4));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaGraph_t g, body, captured;
    CK(cudaGraphCreate(&g, 0));
    body = g;
    cudaGraphConditionalHandle h = 0;
    if (in_while) {
        CK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
        cudaGraphNodeParams p = {};
        p.type = cudaGraphNodeTypeConditional;
        p.conditional.handle = h;
        p.conditional.type = cudaGraphCondTypeWhile;
        p.conditional.size = 1;
        cudaGraphNode_t node;
        CK(cudaGraphAddNode(&node, g, NULL, NULL, 0, &p));
        body = p.conditional.phGraph_out[0];
    }
    CK(cudaStreamBeginCaptureToGraph(s, body, NULL, NULL, 0, cudaStreamCaptureModeGlobal));
    uniform_barrier<<<8, 256, 0, s>>>(out);
    block_sum<<<8, 256, 0, s>>>(out, in, 300);
    if (in_while) count_to<<<1, 1, 0, s>>>(h, counter, 3);
    CK(cudaStreamEndCapture(s, &captured));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, g, 0ull));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    unsigned c = 0;
    CK(cudaMemcpy(&c, counter, 4, cudaMemcpyDeviceToHost));
    if (c != (in_while ? 3u : 0u)) {
        printf("%s: the WHILE ran %u times, expected 3\n", argv[0], c);
        return 1;
    }
    printf("%s: ran (%s)\n", argv[0], in_while ? "3 WHILE iterations" : "plain graph");
    return 0;
}
