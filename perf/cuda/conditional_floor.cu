// nvcc-flags: -rdc=true -lcudadevrt
// conditional_floor.cu: what conditional nodes cost in plain CUDA, the floors
// under graphcore's figures in gpu::control's measurements:
// - an IF whose condition is false: a chain of 50 IF nodes, each with a
//   one-thread kernel in its body that must not run, against a chain of 50
//   empty nodes;
// - one WHILE iteration: a WHILE whose body is only the one-thread kernel
//   that counts to 100 and sets the condition, against the same kernel in a
//   plain graph replayed 100 times (what a loop adds to a replayed step).
// 200 (IF) or 20 (WHILE) launches, best of 5 rounds, timed with events.
// Writes $OUT/conditional_floor.json (or ./conditional_floor.json).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t err_ = (x);                                                                \
        if (err_ != cudaSuccess) {                                                             \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));                \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

__global__ void set_flag(float *x) { *x = 1.f; }

// *counter += 1, and the WHILE goes on while it is below the limit.
__global__ void count_to(cudaGraphConditionalHandle h, unsigned *counter, unsigned limit) {
    const unsigned c = ++*counter;
    cudaGraphSetConditional(h, c < limit ? 1u : 0u);
}

// The same kernel's work without a condition to set.
__global__ void count(unsigned *counter) { ++*counter; }

// Best of 5 rounds of `launches` launches of `exec` (ms), setting the u32
// at `reset` to 0 ahead of each launch when it is given.
static float best_ms(cudaGraphExec_t exec, cudaStream_t s, int launches, unsigned *reset) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r < 5; ++r) {
        cudaEventRecord(a, s);
        for (int i = 0; i < launches; ++i) {
            if (reset) cudaMemsetAsync(reset, 0, 4, s);
            cudaGraphLaunch(exec, s);
        }
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (ms < best) best = ms;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return best;
}

// Per iteration of a WHILE of 100 iterations whose body is count_to, and per
// replay of count alone in a graph (us); *counter is checked.
static int while_floor(cudaStream_t s, double *iteration_us, double *replay_us) {
    unsigned *counter;
    CK(cudaMalloc(&counter, 4));
    cudaGraph_t g, one;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    CK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = cudaGraphCondTypeWhile;
    p.conditional.size = 1;
    cudaGraphNode_t node, k;
    CK(cudaGraphAddNode(&node, g, NULL, NULL, 0, &p));
    unsigned limit = 100;
    void *args[] = {&h, &counter, &limit};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)count_to;
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(1);
    kp.kernelParams = args;
    CK(cudaGraphAddKernelNode(&k, p.conditional.phGraph_out[0], NULL, 0, &kp));
    CK(cudaGraphCreate(&one, 0));
    void *args1[] = {&counter};
    kp.func = (void *)count;
    kp.kernelParams = args1;
    CK(cudaGraphAddKernelNode(&k, one, NULL, 0, &kp));
    cudaGraphExec_t loop, plain;
    CK(cudaGraphInstantiate(&loop, g, 0ull));
    CK(cudaGraphInstantiate(&plain, one, 0ull));
    const int launches = 20;
    const float loop_ms = best_ms(loop, s, launches, counter);
    unsigned c = 0;
    CK(cudaMemcpy(&c, counter, 4, cudaMemcpyDeviceToHost));
    if (c != limit) {
        printf("conditional_floor: the WHILE ran %u times, expected %u\n", c, limit);
        return 1;
    }
    const float plain_ms = best_ms(plain, s, launches * limit, NULL);
    *iteration_us = loop_ms * 1000.0 / (launches * limit);
    *replay_us = plain_ms * 1000.0 / (launches * limit);
    return 0;
}

static int chain(cudaGraphExec_t *exec, bool with_if, float *flag) {
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t last;
    CK(cudaGraphAddEmptyNode(&last, g, NULL, 0));
    for (int i = 0; i < 50; ++i) {
        cudaGraphNode_t n;
        if (with_if) {
            cudaGraphConditionalHandle h;  // default 0 at every launch: false
            CK(cudaGraphConditionalHandleCreate(&h, g, 0, cudaGraphCondAssignDefault));
            cudaGraphNodeParams p = {};
            p.type = cudaGraphNodeTypeConditional;
            p.conditional.handle = h;
            p.conditional.type = cudaGraphCondTypeIf;
            p.conditional.size = 1;
            CK(cudaGraphAddNode(&n, g, &last, NULL, 1, &p));
            cudaKernelNodeParams kp = {};
            void *args[] = {&flag};
            kp.func = (void *)set_flag;
            kp.gridDim = dim3(1);
            kp.blockDim = dim3(1);
            kp.kernelParams = args;
            cudaGraphNode_t k;
            CK(cudaGraphAddKernelNode(&k, p.conditional.phGraph_out[0], NULL, 0, &kp));
        } else {
            CK(cudaGraphAddEmptyNode(&n, g, &last, 1));
        }
        last = n;
    }
    CK(cudaGraphInstantiate(exec, g, 0ull));
    CK(cudaGraphDestroy(g));
    return 0;
}

int main() {
    float *flag;
    CK(cudaMalloc(&flag, 4));
    CK(cudaMemset(flag, 0, 4));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaGraphExec_t ex[2];
    if (chain(&ex[0], false, flag) || chain(&ex[1], true, flag)) return 1;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    const int launches = 200, rounds = 5;
    float best[2] = {1e30f, 1e30f};
    for (int r = 0; r < rounds; ++r)
        for (int k = 0; k < 2; ++k) {
            CK(cudaEventRecord(a, s));
            for (int i = 0; i < launches; ++i) CK(cudaGraphLaunch(ex[k], s));
            CK(cudaEventRecord(b, s));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            if (ms < best[k]) best[k] = ms;
        }
    double iteration_us, replay_us;
    if (while_floor(s, &iteration_us, &replay_us)) return 1;
    float f;
    CK(cudaMemcpy(&f, flag, 4, cudaMemcpyDeviceToHost));
    if (f != 0.f) {
        printf("conditional_floor: an IF body ran with a false condition\n");
        return 1;
    }
    const double per_if = (best[1] - best[0]) * 1000.0 / (launches * 50);
    const double chain_if = best[1] * 1000.0 / launches, chain_empty = best[0] * 1000.0 / launches;
    int driver = 0;
    CK(cudaDriverGetVersion(&driver));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("raw CUDA, an IF whose condition is false: %.3f us per node "
           "(50-IF chain %.1f us, 50-empty chain %.1f us per launch)\n",
           per_if, chain_if, chain_empty);
    printf("raw CUDA, one WHILE iteration (body: a one-thread setter): %.3f us; the same kernel replayed alone "
           "in a graph: %.3f us\n",
           iteration_us, replay_us);
    const char *dir = getenv("OUT");
    char path[4096];
    snprintf(path, sizeof path, "%s/conditional_floor.json", dir ? dir : ".");
    FILE *out = fopen(path, "w");
    if (!out) return 1;
    fprintf(out,
            "{\"benchmark\": \"conditional_floor\", \"gpu\": \"%s\", \"cuda_driver_version\": %d,\n"
            " \"method\": \"raw CUDA runtime: a chain of 50 IF nodes (condition false, a one-thread kernel in each body) "
            "vs 50 empty nodes, %d launches, best of %d, events; a WHILE of 100 iterations whose body is a one-thread setter vs that kernel replayed alone\",\n"
            " \"if_false_us\": %.4f, \"chain_if_us\": %.3f, \"chain_empty_us\": %.3f,\n"
            " \"while_iteration_us\": %.4f, \"same_kernel_replayed_us\": %.4f}\n",
            prop.name, driver, launches, rounds, per_if, chain_if, chain_empty, iteration_us, replay_us);
    fclose(out);
    return 0;
}
