// Which graph calls work on a thread with no context current? graphcore
// makes its context current (cuCtxGetCurrent, and cuCtxSetCurrent when
// another is) before the calls that need it; each such check costs a
// driver call, about 10% of a raw cuGraphAddKernelNode. This probe makes
// one call, named on the command line, on a new thread that never had a
// context current, on a graph (and exec) made on the main thread, and
// prints what CUDA returned and whether the thread was left without a
// context. A call that crashes takes its process with it, so the script
// around it runs each call in a process of its own:
//   nvcc -O2 context_free_probe.cu -lcuda -o probe
//   for c in $(./probe list); do ./probe $c; done
#include <cuda.h>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include "cu_name.cuh"

__global__ void noop(int tag) {
    if (tag == -1) __trap();
}

static CUcontext ctx;
static CUfunction fn;

static CUDA_KERNEL_NODE_PARAMS kernel(int *tag, void **args, CUcontext c) {
    args[0] = tag;
    CUDA_KERNEL_NODE_PARAMS p;
    std::memset(&p, 0, sizeof p);
    p.func = fn;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 32;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = args;
    p.ctx = c;
    return p;
}

int main(int argc, char **argv) {
    cuInit(0);
    CUdevice dev;
    cuDeviceGet(&dev, 0);
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuCtxSetCurrent(ctx);
    cudaFree(0);
    cudaFunction_t rf;
    cudaGetFuncBySymbol(&rf, reinterpret_cast<const void *>(noop));
    fn = reinterpret_cast<CUfunction>(rf);
    CUstream s;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    CUdeviceptr buf;
    cuMemAlloc(&buf, 4096);
    static int tag = 1, tag2 = 2;
    void *args[1], *args2[1];
    // A one-node graph, its exec, and a second graph of the same shape.
    CUgraph g, g2;
    CUgraphNode node, node2;
    CUgraphExec e;
    cuGraphCreate(&g, 0);
    CUDA_KERNEL_NODE_PARAMS p = kernel(&tag, args, nullptr);
    cuGraphAddKernelNode(&node, g, nullptr, 0, &p);
    cuGraphCreate(&g2, 0);
    CUDA_KERNEL_NODE_PARAMS p2 = kernel(&tag2, args2, nullptr);
    cuGraphAddKernelNode(&node2, g2, nullptr, 0, &p2);
    cuGraphInstantiateWithFlags(&e, g, 0);
    cuStreamSynchronize(s);

    std::map<std::string, std::function<CUresult()>> calls = {
        {"add_kernel_ctx_null",
         [&] {
             CUgraphNode n;
             CUDA_KERNEL_NODE_PARAMS q = kernel(&tag, args, nullptr);
             return cuGraphAddKernelNode(&n, g2, &node2, 1, &q);
         }},
        {"add_kernel_ctx_set",
         [&] {
             CUgraphNode n;
             CUDA_KERNEL_NODE_PARAMS q = kernel(&tag, args, ctx);
             return cuGraphAddKernelNode(&n, g2, &node2, 1, &q);
         }},
        {"kernel_set_params_ctx_set",
         [&] {
             CUDA_KERNEL_NODE_PARAMS q = kernel(&tag2, args2, ctx);
             return cuGraphKernelNodeSetParams(node2, &q);
         }},
        {"add_memset",
         [&] {
             CUgraphNode n;
             CUDA_MEMSET_NODE_PARAMS m;
             std::memset(&m, 0, sizeof m);
             m.dst = buf;
             m.elementSize = 4;
             m.width = 16;
             m.height = 1;
             return cuGraphAddMemsetNode(&n, g2, &node2, 1, &m, ctx);
         }},
        {"instantiate",
         [&] {
             CUgraphExec x;
             CUresult r = cuGraphInstantiateWithFlags(&x, g2, 0);
             if (r == CUDA_SUCCESS) r = cuGraphExecDestroy(x);
             return r;
         }},
        {"exec_update",
         [&] {
             CUgraphExecUpdateResultInfo info;
             return cuGraphExecUpdate(e, g2, &info);
         }},
        {"exec_kernel_set_params_ctx_set",
         [&] {
             CUDA_KERNEL_NODE_PARAMS q = kernel(&tag2, args2, ctx);
             return cuGraphExecKernelNodeSetParams(e, node, &q);
         }},
        {"graph_launch", [&] { return cuGraphLaunch(e, s); }},
        {"graph_destroy", [&] { return cuGraphDestroy(g2); }},
        {"exec_destroy", [&] { return cuGraphExecDestroy(e); }},
    };
    if (argc < 2 || std::string(argv[1]) == "list") {
        for (auto &c : calls) std::printf("%s\n", c.first.c_str());
        return 0;
    }
    auto it = calls.find(argv[1]);
    if (it == calls.end()) {
        std::fprintf(stderr, "unknown call %s\n", argv[1]);
        return 2;
    }
    CUresult r = CUDA_ERROR_UNKNOWN, sync = CUDA_ERROR_UNKNOWN;
    CUcontext before = reinterpret_cast<CUcontext>(1), after = reinterpret_cast<CUcontext>(1);
    std::thread t([&] {
        cuCtxGetCurrent(&before);
        r = it->second();
        cuCtxGetCurrent(&after);
    });
    t.join();
    sync = cuStreamSynchronize(s);
    std::printf("%-32s %-28s context before %s, after %s; stream after: %s\n", argv[1], cu_name(r).c_str(),
                before ? "SET" : "none", after ? "SET" : "none", cu_name(sync).c_str());
    return r == CUDA_SUCCESS ? 0 : 1;
}
