// control.cu: setters of conditional-node handles (CUDA 12.3 conditional
// nodes). Each runs as one thread (grid 1, block 1) right before the node it
// steers (in the same graph, or at the end of a WHILE body), and sets the
// handle's value with cudaGraphSetConditional.
//
// cudaGraphSetConditional is a device-runtime function: the PTX calls it as
// an extern function, resolved by linking with libcudadevrt (core links this
// module with the driver's JIT linker). That is why this module is not one
// of the built-in modules loaded into every context: it is loaded only when
// a graph adds a setter, on a driver with conditional nodes (CUDA 12.3).
// The declaration is cuda_device_runtime_api.h's (12.3+), spelled here so
// NVRTC 12.0 compiles it without the toolkit headers.
// The handle is a cudaGraphConditionalHandle (unsigned long long).
#include "common.cuh"

extern "C" __device__ __location__(cudart_builtin) void cudaGraphSetConditional(unsigned long long handle, unsigned int value);

// Comparison codes of gc_cond_set_f32 (the header's GC_COND_*).
#define GC_CMP_LT 0u
#define GC_CMP_LE 1u
#define GC_CMP_GT 2u
#define GC_CMP_GE 3u

// value = *v (0 is false; for SWITCH, the case index).
extern "C" __global__ void gc_cond_set_u32(unsigned long long handle, const unsigned int *value) {
    GC_PDL_WAIT();
    cudaGraphSetConditional(handle, *value);
}

// *counter += 1; value = (*counter < limit). Before a WHILE, with *counter
// = 0 and limit = N, the body runs at most N times.
extern "C" __global__ void gc_cond_count(unsigned long long handle, unsigned int *counter, unsigned int limit) {
    GC_PDL_WAIT();
    const unsigned int c = *counter + 1u;
    *counter = c;
    cudaGraphSetConditional(handle, c < limit ? 1u : 0u);
}

// value = (*x cmp threshold), cmp one of GC_CMP_*; with a counter (non-NULL)
// also *counter += 1 and value &= (*counter < limit). A NaN compares false.
extern "C" __global__ void gc_cond_set_f32(unsigned long long handle, const float *x, float threshold,
                                           unsigned int cmp, unsigned int *counter, unsigned int limit) {
    GC_PDL_WAIT();
    const float v = *x;
    bool on = cmp == GC_CMP_LT ? v < threshold
            : cmp == GC_CMP_LE ? v <= threshold
            : cmp == GC_CMP_GT ? v > threshold
            : v >= threshold;
    if (counter != 0) {
        const unsigned int c = *counter + 1u;
        *counter = c;
        on = on && c < limit;
    }
    cudaGraphSetConditional(handle, on ? 1u : 0u);
}

// The SWITCH case of a bucketed batch: value = the first i < count with
// sizes[i] >= *rows (sizes ascending, as a runner's buckets), or count when
// none fits (a SWITCH of `count` cases then runs no body).
extern "C" __global__ void gc_cond_set_bucket(unsigned long long handle, const unsigned int *rows,
                                              const unsigned int *sizes, unsigned int count) {
    GC_PDL_WAIT();
    const unsigned int r = *rows;
    unsigned int i = 0;
    while (i < count && sizes[i] < r) i++;
    cudaGraphSetConditional(handle, i);
}
