// A kernel launch with the attributes the benches' CUDA harnesses
// (train_harness, gemm_harness) use: cudaLaunchKernelEx with a cluster
// shape along x (cluster > 1) and programmatic stream serialization (pdl).
// Include after the CUDA runtime header.
#pragma once

// Launches `kern` with `block` threads a block and `smem` bytes of dynamic
// shared memory on stream s; returns the launch's error.
template <class... P, class... A>
static cudaError_t launch_ex(void (*kern)(P...), dim3 grid, unsigned block, size_t smem, cudaStream_t s,
                             unsigned cluster, bool pdl, A... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute at[2];
    unsigned na = 0;
    if (cluster > 1) {
        at[na].id = cudaLaunchAttributeClusterDimension;
        at[na].val.clusterDim.x = cluster;
        at[na].val.clusterDim.y = 1;
        at[na].val.clusterDim.z = 1;
        ++na;
    }
    if (pdl) {
        at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[na].val.programmaticStreamSerializationAllowed = 1;
        ++na;
    }
    cfg.attrs = at;
    cfg.numAttrs = na;
    return cudaLaunchKernelEx(&cfg, kern, args...);
}
