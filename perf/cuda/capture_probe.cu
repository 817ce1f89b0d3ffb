// Which CUDA driver calls made on one thread invalidate a thread-local
// stream capture open on another thread of the same device? graphcore must
// not make such calls behind the user's back while a capture is open.
// Thread A begins a capture (thread-local mode) and waits; thread B makes
// one call; A then launches a kernel into the capture and ends it.
// Built and run on the GPU machine: nvcc -O2 capture_probe.cu -lcuda
#include <cuda.h>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include "cu_name.cuh"
#include <vector>

__global__ void noop(float *p) {
    if (p) p[threadIdx.x] += 1.0f;
}

static CUcontext ctx;
static CUdevice dev;

// Runs `other` on a second thread while this thread captures.
static void probe(const char *what, std::function<CUresult()> other) {
    cuCtxSetCurrent(ctx);
    CUstream s;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    float *buf;
    cudaMalloc(&buf, 1024);
    cudaStreamSynchronize(0);
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    noop<<<1, 32, 0, (cudaStream_t)s>>>(buf);
    CUresult other_result = CUDA_SUCCESS;
    std::thread t([&] {
        cuCtxSetCurrent(ctx);
        other_result = other();
    });
    t.join();
    noop<<<1, 32, 0, (cudaStream_t)s>>>(buf);
    CUgraph g = nullptr;
    CUresult end = cuStreamEndCapture(s, &g);
    std::printf("%-34s other: %-36s capture: %s\n", what, cu_name(other_result).c_str(),
                end == CUDA_SUCCESS ? "ok" : ("INVALIDATED (" + cu_name(end) + ")").c_str());
    if (g) cuGraphDestroy(g);
    cuStreamDestroy(s);
    cudaFree(buf);
}

int main() {
    cuInit(0);
    cuDeviceGet(&dev, 0);
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuCtxSetCurrent(ctx);
    cudaFree(0);
    CUmemAllocationProp prop;
    std::memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CUdeviceptr va;
    cuMemAddressReserve(&va, 64 * gran, 0, 0, 0);
    CUmemGenericAllocationHandle h;
    cuMemCreate(&h, gran, &prop, 0);
    CUmemAccessDesc access;
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUstream other_stream;
    cuStreamCreate(&other_stream, CU_STREAM_NON_BLOCKING);
    void *pinned;
    cuMemHostAlloc(&pinned, 4096, CU_MEMHOSTALLOC_PORTABLE);
    const char *ptx = ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";

    probe("nothing", [] { return CUDA_SUCCESS; });
    probe("cuCtxSynchronize", [] { return cuCtxSynchronize(); });
    probe("cuStreamSynchronize(other)", [&] { return cuStreamSynchronize(other_stream); });
    probe("cuStreamCreate+Destroy", [] {
        CUstream x;
        CUresult r = cuStreamCreate(&x, CU_STREAM_NON_BLOCKING);
        cuStreamDestroy(x);
        return r;
    });
    probe("cuEventCreate+Destroy", [] {
        CUevent e;
        CUresult r = cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
        cuEventDestroy(e);
        return r;
    });
    probe("cuMemAddressReserve+Free", [&] {
        CUdeviceptr p;
        CUresult r = cuMemAddressReserve(&p, 1 << 30, 0, 0, 0);
        cuMemAddressFree(p, 1 << 30);
        return r;
    });
    probe("cuMemCreate+Release", [&] {
        CUmemGenericAllocationHandle x;
        CUresult r = cuMemCreate(&x, gran, &prop, 0);
        cuMemRelease(x);
        return r;
    });
    probe("cuMemMap+SetAccess", [&] {
        CUresult r = cuMemMap(va, gran, 0, h, 0);
        if (r == CUDA_SUCCESS) r = cuMemSetAccess(va, gran, &access, 1);
        return r;
    });
    probe("cuMemUnmap", [&] { return cuMemUnmap(va, gran); });
    probe("cuMemHostAlloc", [] {
        void *p;
        return cuMemHostAlloc(&p, 4096, CU_MEMHOSTALLOC_PORTABLE);
    });
    probe("cuMemFreeHost", [&] { return cuMemFreeHost(pinned); });
    probe("cuModuleLoadData", [&] {
        CUmodule m;
        return cuModuleLoadData(&m, ptx);
    });
    probe("cuModuleLoadData+Unload", [&] {
        CUmodule m;
        CUresult r = cuModuleLoadData(&m, ptx);
        if (r == CUDA_SUCCESS) r = cuModuleUnload(m);
        return r;
    });
    probe("cuMemAlloc+Free", [] {
        CUdeviceptr p;
        CUresult r = cuMemAlloc(&p, 4096);
        if (r == CUDA_SUCCESS) r = cuMemFree(p);
        return r;
    });
    probe("cuGraphCreate+Destroy", [] {
        CUgraph g;
        CUresult r = cuGraphCreate(&g, 0);
        cuGraphDestroy(g);
        return r;
    });
    probe("cuMemcpyHtoD (sync, pageable)", [&] {
        static char host[64];
        CUdeviceptr p;
        cuMemAlloc(&p, 4096);
        return cuMemcpyHtoD(p, host, sizeof host);
    });
    return 0;
}
