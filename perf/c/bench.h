/* Shared by the C benchmarks in perf/c: a clock, medians, error checks,
 * the context (with a clear message where there is no driver or GPU), the
 * CUDA driver calls they make themselves (libcuda opened with dlopen, so
 * they build without the CUDA toolkit), and the JSON header every result
 * file starts with.
 *
 * Driver prototypes and structs are those of cuda.h (CUDA 12/13), under
 * the symbol names libcuda exports for them (the _v2 names where cuda.h
 * maps a call to one).
 *
 * Include it before any system header: it sets _POSIX_C_SOURCE. */
#ifndef GC_BENCH_H
#define GC_BENCH_H

#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "graphcore.h"

/* ---- clock and statistics ---- */

/* Monotonic time in nanoseconds. */
static inline double bench_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v); 0 for n == 0. */
static inline double bench_median(double *v, size_t n) {
    if (n == 0) return 0.0;
    qsort(v, n, sizeof *v, bench_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* ---- errors ---- */

/* Exits with the call and graphcore's message unless it succeeded. */
#define TRY(call)                                                                    \
    do {                                                                             \
        gc_status st_ = (call);                                                      \
        if (st_ != GC_SUCCESS) {                                                     \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,         \
                    gc_status_name(st_), gc_last_error());                           \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

/* Exits with the call and the CUresult's name unless it is CUDA_SUCCESS. */
#define CU(call) bench_cu_check((call), #call, __FILE__, __LINE__)

/* ---- the CUDA driver, by dlopen ---- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUfunc_st *CUfunction;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef void (*CUhostFn)(void *user_data);

/* CUmemorytype */
#define BENCH_CU_MEMORYTYPE_HOST 1
#define BENCH_CU_MEMORYTYPE_DEVICE 2
/* CUstreamCaptureMode: CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */
#define BENCH_CU_CAPTURE_THREAD_LOCAL 1
/* CUstream_flags: CU_STREAM_NON_BLOCKING (gc_stream_create's kind) */
#define BENCH_CU_STREAM_NON_BLOCKING 1
/* CUevent_flags: CU_EVENT_DISABLE_TIMING */
#define BENCH_CU_EVENT_DISABLE_TIMING 2

/* CUDA_KERNEL_NODE_PARAMS (_v2, the one cuGraphAddKernelNode_v2 takes). */
typedef struct {
    CUfunction func;
    unsigned gridDimX, gridDimY, gridDimZ;
    unsigned blockDimX, blockDimY, blockDimZ;
    unsigned sharedMemBytes;
    void **kernelParams;
    void **extra;
    void *kern; /* CUkernel: NULL when func is set */
    CUcontext ctx; /* NULL: the current context */
} bench_kernel_node_params;

/* CUDA_MEMCPY3D. */
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    int srcMemoryType; /* CUmemorytype */
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray; /* CUarray */
    void *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    int dstMemoryType; /* CUmemorytype */
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray; /* CUarray */
    void *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} bench_memcpy3d;

/* CUDA_MEMSET_NODE_PARAMS. */
typedef struct {
    CUdeviceptr dst;
    size_t pitch;
    unsigned value;
    unsigned elementSize; /* 1, 2 or 4 */
    size_t width; /* in elements */
    size_t height;
} bench_memset_node_params;

/* CUDA_HOST_NODE_PARAMS. */
typedef struct {
    CUhostFn fn;
    void *userData;
} bench_host_node_params;

/* CUgraphExecUpdateResultInfo. */
typedef struct {
    int result; /* CUgraphExecUpdateResult */
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
} bench_update_info;

/* The driver calls the benchmarks make directly. */
struct bench_cuda {
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
    CUresult (*LaunchHostFunc)(CUstream, CUhostFn, void *);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*GraphCreate)(CUgraph *, unsigned);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*GraphClone)(CUgraph *, CUgraph);
    CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const bench_kernel_node_params *);
    CUresult (*GraphAddMemcpyNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const bench_memcpy3d *, CUcontext);
    CUresult (*GraphAddMemsetNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const bench_memset_node_params *, CUcontext);
    CUresult (*GraphAddHostNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                 const bench_host_node_params *);
    CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphExecUpdate)(CUgraphExec, CUgraph, bench_update_info *);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
};

/* Filled in by bench_start. */
static struct bench_cuda cu;
static const char *bench_prog = "bench";

static inline void bench_cu_check(CUresult r, const char *call, const char *file, int line) {
    if (r == 0) return;
    const char *name = NULL;
    if (!cu.GetErrorName || cu.GetErrorName(r, &name) != 0 || !name) name = "unknown CUresult";
    fprintf(stderr, "%s:%d: %s: %s (%d)\n", file, line, call, name, r);
    exit(1);
}

/* The first of `names` (a NULL-terminated list) that libcuda exports. */
static inline void *bench_sym(void *lib, const char *const *names) {
    for (const char *const *n = names; *n; n++) {
        void *p = dlsym(lib, *n);
        if (p) return p;
    }
    fprintf(stderr, "%s: libcuda exports no %s\n", bench_prog, names[0]);
    exit(1);
}

/* Sets function pointer `field` of `cu` to the first symbol found. */
#define BENCH_LOAD(lib, field, ...)                                                  \
    do {                                                                             \
        static const char *const names_[] = {__VA_ARGS__, NULL};                     \
        /* POSIX's way to turn dlsym's result into a function pointer. */            \
        *(void **)&cu.field = bench_sym((lib), names_);                              \
    } while (0)

/* Creates the context on device 0 (a clear message and exit status 1 where
 * there is no driver or no GPU), then opens libcuda and loads `cu`. */
static inline gc_context *bench_start(const char *prog) {
    bench_prog = prog;
    gc_context *ctx = NULL;
    gc_status st = gc_context_create(0, &ctx);
    if (st == GC_ERROR_NO_DRIVER || st == GC_ERROR_NO_DEVICE) {
        fprintf(stderr, "%s: %s: %s\n%s: this benchmark needs an NVIDIA GPU and its driver (libcuda.so.1)\n",
                prog, gc_status_name(st), gc_last_error(), prog);
        exit(1);
    }
    if (st != GC_SUCCESS) {
        fprintf(stderr, "%s: gc_context_create: %s: %s\n", prog, gc_status_name(st), gc_last_error());
        exit(1);
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "%s: libcuda.so.1 not found: %s\n", prog, dlerror());
        exit(1);
    }
    BENCH_LOAD(lib, GetErrorName, "cuGetErrorName");
    BENCH_LOAD(lib, CtxGetCurrent, "cuCtxGetCurrent");
    BENCH_LOAD(lib, StreamCreate, "cuStreamCreate");
    BENCH_LOAD(lib, StreamDestroy, "cuStreamDestroy_v2");
    BENCH_LOAD(lib, StreamSynchronize, "cuStreamSynchronize");
    BENCH_LOAD(lib, StreamWaitEvent, "cuStreamWaitEvent");
    BENCH_LOAD(lib, StreamBeginCapture, "cuStreamBeginCapture_v2");
    BENCH_LOAD(lib, StreamEndCapture, "cuStreamEndCapture");
    BENCH_LOAD(lib, EventCreate, "cuEventCreate");
    BENCH_LOAD(lib, EventDestroy, "cuEventDestroy_v2");
    BENCH_LOAD(lib, EventRecord, "cuEventRecord");
    BENCH_LOAD(lib, EventSynchronize, "cuEventSynchronize");
    BENCH_LOAD(lib, EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
    BENCH_LOAD(lib, LaunchKernel, "cuLaunchKernel");
    BENCH_LOAD(lib, LaunchHostFunc, "cuLaunchHostFunc");
    BENCH_LOAD(lib, MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    BENCH_LOAD(lib, MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    BENCH_LOAD(lib, MemsetD32Async, "cuMemsetD32Async");
    BENCH_LOAD(lib, MemAllocAsync, "cuMemAllocAsync");
    BENCH_LOAD(lib, MemFreeAsync, "cuMemFreeAsync");
    BENCH_LOAD(lib, MemAlloc, "cuMemAlloc_v2");
    BENCH_LOAD(lib, MemFree, "cuMemFree_v2");
    BENCH_LOAD(lib, GraphCreate, "cuGraphCreate");
    BENCH_LOAD(lib, GraphDestroy, "cuGraphDestroy");
    BENCH_LOAD(lib, GraphClone, "cuGraphClone");
    BENCH_LOAD(lib, GraphAddKernelNode, "cuGraphAddKernelNode_v2");
    BENCH_LOAD(lib, GraphAddMemcpyNode, "cuGraphAddMemcpyNode");
    BENCH_LOAD(lib, GraphAddMemsetNode, "cuGraphAddMemsetNode");
    BENCH_LOAD(lib, GraphAddHostNode, "cuGraphAddHostNode");
    BENCH_LOAD(lib, GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    BENCH_LOAD(lib, GraphExecUpdate, "cuGraphExecUpdate_v2");
    BENCH_LOAD(lib, GraphExecDestroy, "cuGraphExecDestroy");
    BENCH_LOAD(lib, GraphLaunch, "cuGraphLaunch");
    return ctx;
}

/* ---- an empty kernel ---- */

/* A new stream of `ctx` and an empty kernel loaded there, `gc_bench_empty`
 * (one 32-bit argument, its "tag", which an update can change; PTX ISA 8.0
 * for sm_75 and later): the chains of the graph benchmarks. As graphcore
 * handles and as the raw ones under them (for the raw CUDA side). Returns
 * the module (the caller destroys it and the stream when done). */
static inline gc_module *bench_empty_kernel(gc_context *ctx, gc_stream **stream, gc_function **fn, CUstream *raw_stream,
                                      CUfunction *raw_fn) {
    static const char ptx[] = ".version 8.0\n"
                              ".target sm_75\n"
                              ".address_size 64\n"
                              ".visible .entry gc_bench_empty(.param .u32 gc_bench_empty_tag)\n"
                              "{\n"
                              "    ret;\n"
                              "}\n";
    gc_module *module;
    TRY(gc_stream_create(ctx, stream));
    TRY(gc_module_load(ctx, ptx, sizeof ptx - 1, &module));
    TRY(gc_module_function(module, "gc_bench_empty", fn));
    TRY(gc_stream_raw(*stream, (void **)raw_stream));
    TRY(gc_function_raw(*fn, (void **)raw_fn));
    return module;
}

/* A graph of `len` launches of `fn` (with `args`) in a chain, built with
 * the raw driver calls (the caller destroys it). */
static inline CUgraph bench_raw_chain(CUfunction fn, void **args, int len) {
    bench_kernel_node_params p = {fn, 1, 1, 1, 1, 1, 1, 0, args, NULL, NULL, NULL};
    CUgraph g;
    CUgraphNode prev = NULL, node;
    CU(cu.GraphCreate(&g, 0));
    for (int i = 0; i < len; i++) {
        CU(cu.GraphAddKernelNode(&node, g, i ? &prev : NULL, i ? 1 : 0, &p));
        prev = node;
    }
    return g;
}

/* A graph of `len` launches of `fn` (one thread, argument `tag`) captured
 * on `stream` (the caller destroys it). */
static inline gc_graph *bench_capture_chain(gc_stream *stream, gc_function *fn, int len, uint32_t tag) {
    void *args[] = {&tag};
    gc_dim3 one = {1, 1, 1};
    gc_graph *g;
    TRY(gc_capture_begin(stream, NULL, GC_CAPTURE_THREAD_LOCAL));
    for (int i = 0; i < len; i++) TRY(gc_launch(fn, stream, one, one, 0, args));
    TRY(gc_capture_end(stream, &g));
    return g;
}

/* A graph of `len` nodes launching `fn` (one thread, argument `tag`) in a
 * chain, built with graphcore's calls (the caller destroys it). */
static inline gc_graph *bench_build_chain(gc_context *ctx, gc_function *fn, int len, uint32_t tag) {
    void *args[] = {&tag};
    gc_dim3 one = {1, 1, 1};
    gc_graph *g;
    gc_node prev, node;
    TRY(gc_graph_create(ctx, &g));
    for (int i = 0; i < len; i++) {
        TRY(gc_graph_add_kernel(g, fn, one, one, 0, args, i ? &prev : NULL, i ? 1 : 0, &node));
        prev = node;
    }
    return g;
}

/* ---- results ---- */

/* The device (`info`, filled) and the date now (UTC, `date`) that a
 * result file records. */
static inline void bench_machine(gc_context *ctx, gc_device_info *info, char date[32]) {
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    TRY(gc_context_info(ctx, info));
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(date, 32, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

/* Opens $OUT/<name> (or ./<name>) and writes the opening brace and the
 * common fields: benchmark, gpu, cuda_driver_version, date (UTC), each
 * line ending with a comma. NULL (with a message) if it cannot be opened. */
static inline FILE *bench_json_open(gc_context *ctx, const char *name, const char *benchmark) {
    char path[4096];
    const char *out = getenv("OUT");
    snprintf(path, sizeof path, "%s/%s", out ? out : ".", name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s\n", bench_prog, path);
        return NULL;
    }
    gc_device_info info;
    char date[32];
    bench_machine(ctx, &info, date);
    fprintf(f, "{\n  \"benchmark\": \"%s\",\n  \"gpu\": \"%s\",\n  \"cuda_driver_version\": %d,\n"
               "  \"date\": \"%s\",\n",
            benchmark, info.name, info.driver_version, date);
    return f;
}

#endif /* GC_BENCH_H */
