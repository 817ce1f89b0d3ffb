/* A no-op libcuda.so.1: every driver call graphcore (and perf/c/bench.h)
 * makes returns success at once, with plausible outputs (one device, handles
 * that are distinct pointers, a stream that counts the launches it captures
 * so a captured graph has its node count). Over it, a benchmark measures
 * graphcore's own CPU cost per call, without a GPU and without the driver's
 * time; nothing runs and no data moves (only timings mean anything).
 *
 *   cc -O2 -shared -fPIC -o libcuda.so.1 noop_cuda.c
 *   LD_LIBRARY_PATH=$PWD:stage/lib stage/bin/graph_calls     (or any bench)
 *
 * Compare two libraries under it with instruction counts
 * (valgrind --tool=callgrind) where the machine is too noisy for time.
 * Calls whose outputs nobody reads are defined without parameters (Z):
 * the caller's arguments are ignored, as the x86-64 and AArch64 calling
 * conventions allow in practice. Not part of the build or the tests. */
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
typedef int CUresult;
struct stream { int capturing; size_t n; };
struct graph { size_t n; };
static __thread void *current;
static size_t counter = 0x1000;
static void *fresh(void) { return (void *)(++counter * 64); }
#define Z(name) CUresult name(void) { return 0; }
/* With -DNOOP_EVICT, the calls that do real work in a real driver first run
 * 40 KB of code and sweep 48 KB of data, so that the caller's code and data
 * leave a 32 KB L1i and a 48 KB L1d as they do after such a call: under
 * cachegrind (--I1=32768,8,64 --D1=49152,12,64), graphcore's L1 misses per
 * call then count the distinct cache lines its code and data touch. */
#ifdef NOOP_EVICT
static char sweep[48 << 10];
static void evict(void) {
  __asm__ volatile(".rept 5120\n .byte 0x0f,0x1f,0x84,0x00,0x00,0x00,0x00,0x00\n .endr" ::: "memory");
  for (size_t i = 0; i < sizeof sweep; i += 64) ((volatile char *)sweep)[i]++;
}
#else
static void evict(void) {}
#endif
CUresult cuInit(unsigned f) { (void)f; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int o) { *d = o; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) { (void)d; *v = attr == 75 ? 9 : attr == 76 ? 0 : 1; return 0; }
CUresult cuDeviceGetName(char *s, int n, int d) { (void)d; strncpy(s, "Fake GPU", n); return 0; }
CUresult cuDeviceTotalMem_v2(size_t *b, int d) { (void)d; *b = 80ull << 30; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)0x5000; return 0; }
Z(cuDevicePrimaryCtxRelease_v2)
CUresult cuCtxGetCurrent(void **c) { *c = current; return 0; }
CUresult cuCtxSetCurrent(void *c) { current = c; return 0; }
Z(cuCtxSynchronize)
CUresult cuGetErrorName(int c, const char **s) { (void)c; *s = "CUDA_ERROR_FAKE"; return 0; }
CUresult cuGetErrorString(int c, const char **s) { (void)c; *s = "fake"; return 0; }
CUresult cuGetProcAddress_v2(const char *n, void **p, int v, unsigned long long f, int *st) { (void)n; (void)v; (void)f; *p = 0; if (st) *st = 1; return 500; }
CUresult cuStreamCreateWithPriority(void **s, unsigned f, int p) { (void)f; (void)p; *s = calloc(1, sizeof(struct stream)); return 0; }
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) { *least = 0; *greatest = -5; return 0; }
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
Z(cuStreamSynchronize) Z(cuStreamWaitEvent)
CUresult cuStreamBeginCapture_v2(struct stream *s, int m) { (void)m; evict(); if (s->capturing) return 900; s->capturing = 1; s->n = 0; return 0; }
CUresult cuStreamEndCapture(struct stream *s, struct graph **g) { evict(); struct graph *x = malloc(sizeof *x); x->n = s->n; s->capturing = 0; *g = x; return 0; }
CUresult cuStreamIsCapturing(struct stream *s, int *st) { *st = s && s->capturing; return 0; }
CUresult cuThreadExchangeStreamCaptureMode(int *m) { (void)m; return 0; }
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = fresh(); return 0; }
Z(cuEventDestroy_v2) Z(cuEventRecord) Z(cuEventRecordWithFlags) Z(cuEventSynchronize) Z(cuEventQuery)
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0.001f; return 0; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { return cuEventElapsedTime(ms, a, b); }
CUresult cuLaunchKernel(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g, unsigned sh, struct stream *s, void **p, void **x) {
  (void)f;(void)a;(void)b;(void)c;(void)d;(void)e;(void)g;(void)sh;(void)p;(void)x; evict(); if (s && s->capturing) s->n++; return 0; }
/* CUlaunchConfig's head (graphcore's built-in launches on sm_90 go through cuLaunchKernelEx). */
struct launch_config { unsigned dims[6], shared; struct stream *s; };
CUresult cuLaunchKernelEx(const struct launch_config *c, void *f, void **p, void **x) {
  (void)f;(void)p;(void)x; evict(); if (c->s && c->s->capturing) c->s->n++; return 0; }
Z(cuLaunchHostFunc) Z(cuMemcpyAsync) Z(cuMemsetD8Async) Z(cuMemsetD16Async) Z(cuMemsetD32Async)
Z(cuMemcpyHtoDAsync_v2) Z(cuMemcpyDtoHAsync_v2)
CUresult cuMemAllocAsync(unsigned long long *d, size_t b, void *s) { (void)b; (void)s; *d = 0x9000000; return 0; }
Z(cuMemFreeAsync)
CUresult cuMemAlloc_v2(unsigned long long *d, size_t b) { (void)b; *d = 0x9000000; return 0; }
Z(cuMemFree_v2)
CUresult cuModuleLoadData(void **m, const void *i) { (void)i; *m = fresh(); return 0; }
CUresult cuModuleLoadDataEx(void **m, const void *i, unsigned n, void *o, void **v) { (void)i; (void)n; (void)o; (void)v; *m = fresh(); return 0; }
Z(cuModuleUnload)
CUresult cuModuleGetFunction(void **f, void *m, const char *n) { (void)m; (void)n; *f = fresh(); return 0; }
CUresult cuKernelGetFunction(void **f, void *k) { (void)k; *f = fresh(); return 0; }
CUresult cuFuncGetAttribute(int *v, int a, void *f) { (void)a; (void)f; *v = 1024; return 0; }
CUresult cuGraphCreate(struct graph **g, unsigned f) { (void)f; evict(); *g = calloc(1, sizeof **g); return 0; }
CUresult cuGraphDestroy(struct graph *g) { free(g); return 0; }
CUresult cuGraphClone(struct graph **o, struct graph *g) { *o = malloc(sizeof **o); **o = *g; return 0; }
CUresult cuGraphAddKernelNode_v2(void **n, struct graph *g, void *d, size_t nd, void *p) { (void)d; (void)nd; (void)p; evict(); g->n++; *n = fresh(); return 0; }
CUresult cuGraphAddMemcpyNode(void **n, struct graph *g) { g->n++; *n = fresh(); return 0; }
CUresult cuGraphAddMemsetNode(void **n, struct graph *g) { g->n++; *n = fresh(); return 0; }
CUresult cuGraphAddHostNode(void **n, struct graph *g) { g->n++; *n = fresh(); return 0; }
CUresult cuGraphAddEmptyNode(void **n, struct graph *g) { g->n++; *n = fresh(); return 0; }
CUresult cuGraphAddChildGraphNode(void **n, struct graph *g) { g->n++; *n = fresh(); return 0; }
CUresult cuGraphGetNodes(struct graph *g, void **nodes, size_t *n) { if (!nodes) { *n = g->n; return 0; } size_t k = *n < g->n ? *n : g->n; for (size_t i = 0; i < *n; i++) nodes[i] = i < k ? (void *)((i + 1) * 64) : NULL; *n = k; return 0; }
CUresult cuGraphGetEdges(struct graph *g, void **a, void **b, size_t *n) { (void)g; (void)a; (void)b; *n = 0; return 0; }
CUresult cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) { (void)g; (void)f; evict(); *e = fresh(); return 0; }
CUresult cuGraphInstantiateWithParams(void **e, void *g, void *p) { (void)g; (void)p; evict(); *e = fresh(); return 0; }
Z(cuGraphExecDestroy) Z(cuGraphUpload)
CUresult cuGraphLaunch(void) { evict(); return 0; }
CUresult cuGraphExecUpdate_v2(void) { evict(); return 0; }
Z(cuGraphDestroyNode) Z(cuGraphAddDependencies)
Z(cuGraphKernelNodeGetParams_v2) Z(cuGraphKernelNodeSetParams_v2) Z(cuGraphExecKernelNodeSetParams_v2) Z(cuGraphNodeGetType)
Z(cuGraphNodeFindInClone) Z(cuGraphChildGraphNodeGetGraph) Z(cuGraphExecChildGraphNodeSetParams) Z(cuGraphExecHostNodeSetParams)
Z(cuGraphExecMemcpyNodeSetParams) Z(cuGraphExecMemsetNodeSetParams) Z(cuGraphHostNodeGetParams) Z(cuGraphMemcpyNodeGetParams)
Z(cuGraphMemcpyNodeSetParams) Z(cuGraphMemsetNodeGetParams) Z(cuGraphMemsetNodeSetParams)
Z(cuLinkAddData_v2) Z(cuLinkAddFile_v2) Z(cuLinkComplete) Z(cuLinkCreate_v2) Z(cuLinkDestroy)
static unsigned long long va = 0x7f0000000000ull;
CUresult cuMemAddressReserve(unsigned long long *p, size_t s, size_t a, unsigned long long addr, unsigned long long f) { (void)a; (void)addr; (void)f; *p = va; va += (s + (1ull<<30)) & ~((1ull<<21)-1); return 0; }
Z(cuMemAddressFree)
CUresult cuMemCreate(unsigned long long *h, size_t s, void *p, unsigned long long f) { (void)s; (void)p; (void)f; *h = (unsigned long long)fresh(); return 0; }
Z(cuMemMap) Z(cuMemUnmap) Z(cuMemRelease) Z(cuMemSetAccess)
CUresult cuMemGetAllocationGranularity(size_t *g, void *p, int o) { (void)p; (void)o; *g = 2u << 20; return 0; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = 70ull << 30; *t = 80ull << 30; return 0; }
CUresult cuMemHostAlloc(void **p, size_t s, unsigned f) { (void)f; *p = malloc(s); return 0; }
CUresult cuMemFreeHost(void *p) { free(p); return 0; }
CUresult cuPointerGetAttribute(void *d, int a, unsigned long long p) { (void)a; (void)p; memset(d, 0, 4); *(int*)d = 2; return 0; }
Z(cuPointerGetAttributes)
/* What perf/c/bench.h loads for the raw side. */
CUresult cuStreamCreate(void **s, unsigned f) { return cuStreamCreateWithPriority(s, f, 0); }
