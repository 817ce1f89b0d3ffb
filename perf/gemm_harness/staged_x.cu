// A small-batch layer that lost (kept as the record; perf/TUNING.md,
// "Small batches: three layouts that lost"): one warp per output column for
// R rows, the block's x rows staged in shared memory once (R x 256 float4
// per trip), each W row read once, 8 float4 loads per lane in one batch.
// Timed against gc_linear_small_f32's fastest configs on the notes' layers
// (1024 -> 512 -> 256 -> 10) at 1-16 rows, alone and as the PDL chain.
// On the GPU machine, from the repository root:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -I perf/gemm_harness -o staged_x perf/gemm_harness/staged_x.cu && ./staged_x
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
__host__ __device__ inline void emu_yield() {}
#include "linear.cu"
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "common.cuh"

// grid (ceil(n / 8), ceil(m / R)), 256 threads, R * k * 4 bytes dynamic smem; k % 4 == 0, k <= 1024 * 8 / R
template <int R>
__global__ void __launch_bounds__(256, 2) xs_kernel(float *y, const float *x, const float *w, const float *b, u32 m,
                                                   u32 n, u32 k, u32 relu) {
    extern __shared__ float4 xs[];
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u32 j = blockIdx.x * 8 + warp, jc = min(j, n - 1);
    const u32 r0 = blockIdx.y * R;
    const u32 k4 = k >> 2;
    const float4 *w4 = reinterpret_cast<const float4 *>(w + (size_t)jc * k);
    const float bias = b ? __ldg(b + jc) : 0.0f;
    GC_PDL_WAIT();
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    for (u32 base = 0; base < k4; base += 256) {
        const u32 u = base + lane;
        float4 wv[8];
#pragma unroll
        for (int t = 0; t < 8; ++t)
            if (u + 32 * t < k4) wv[t] = __ldg(w4 + u + 32 * t);
        // stage x steps [base, base + 256) of each row
        const u32 cnt = min(256u, k4 - base);
        __syncthreads();
        for (u32 i = threadIdx.x; i < R * 256; i += 256) {
            const u32 r = i >> 8, s = i & 255;
            if (s < cnt) {
                const u32 row = min(r0 + r, m - 1);
                xs[i] = __ldg(reinterpret_cast<const float4 *>(x + (size_t)row * k) + base + s);
            }
        }
        __syncthreads();
#pragma unroll
        for (int t = 0; t < 8; ++t)
            if (u + 32 * t < k4) {
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const float4 xv = xs[r * 256 + lane + 32 * t];
                    acc[r] = fmaf(xv.x, wv[t].x, acc[r]);
                    acc[r] = fmaf(xv.y, wv[t].y, acc[r]);
                    acc[r] = fmaf(xv.z, wv[t].z, acc[r]);
                    acc[r] = fmaf(xv.w, wv[t].w, acc[r]);
                }
            }
    }
    GC_PDL_TRIGGER();
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int o = 16; o; o >>= 1) acc[r] = __fadd_rn(acc[r], __shfl_xor_sync(0xffffffffu, acc[r], o));
    if (lane < R && j < n) {
        float v = acc[0];
#pragma unroll
        for (int r = 1; r < R; ++r) if (lane == (u32)r) v = acc[r];
        const u32 row = r0 + lane;
        if (row < m) {
            v = __fadd_rn(v, bias);
            y[(size_t)row * n + j] = relu ? gc_relu(v) : v;
        }
    }
}

#include "small_common.cuh"

static void launch_xs(int R, float *y, const float *x, const float *w, const float *b, unsigned m, unsigned n, unsigned k,
                      bool relu, bool pdl) {
    cudaLaunchConfig_t lc = {};
    lc.gridDim = dim3((n + 7) / 8, (m + R - 1) / R, 1); lc.blockDim = dim3(256, 1, 1); lc.stream = st;
    lc.dynamicSmemBytes = R * 256 * 16;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    lc.attrs = at; lc.numAttrs = pdl ? 1 : 0;
    u32 rl = relu ? 1u : 0u;
    if (R == 1) CK(cudaLaunchKernelEx(&lc, xs_kernel<1>, y, x, w, b, m, n, k, rl));
    if (R == 2) CK(cudaLaunchKernelEx(&lc, xs_kernel<2>, y, x, w, b, m, n, k, rl));
    if (R == 4) CK(cudaLaunchKernelEx(&lc, xs_kernel<4>, y, x, w, b, m, n, k, rl));
    if (R == 8) CK(cudaLaunchKernelEx(&lc, xs_kernel<8>, y, x, w, b, m, n, k, rl));
}
int main() {
    CK(cudaStreamCreate(&st));
    CK(cudaFuncSetAttribute(xs_kernel<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 256 * 16));
    NotesMlp mlp;
    const unsigned *dims = mlp.dims;
    std::vector<float> *hw = mlp.hw, *hb = mlp.hb;
    float **dw = mlp.dw, **db = mlp.db, *dx = mlp.dx, **dh = mlp.dh;
    // shipped configs (launcher after stop 24's rule), per m and layer
    // the fastest configs of the shipped kernel alone (small.cu, this session)
    auto ship = [](unsigned m, int l) -> Cfg {
        if (m == 1) return Cfg{0, 0, 0, 3};
        if (m == 2) return l == 0 ? Cfg{0, 0, 1, 2} : Cfg{0, 0, 0, 3};
        if (m == 4) return Cfg{0, 0, 1, 2};
        if (m == 8) return l == 0 ? Cfg{2, 2, 1, 0} : l == 1 ? Cfg{2, 2, 0, 1} : Cfg{0, 0, 0, 3};
        return l == 2 ? Cfg{0, 0, 1, 2} : Cfg{2, 2, 1, 0};
    };
    for (unsigned m : {1u, 2u, 4u, 8u, 16u}) {
        for (int l = 0; l < 3; l++) {
            unsigned k = dims[l], n = dims[l + 1];
            bool relu = l < 2;
            const float *in = l == 0 ? dx : dh[l - 1];
            std::vector<float> hin((size_t)m * k);
            launch_small(ship(m, l), dh[l], in, dw[l], db[l], m, n, k, relu, false);
            CK(cudaStreamSynchronize(st));
            if (l > 0) CK(cudaMemcpy(hin.data(), in, hin.size() * 4, cudaMemcpyDeviceToHost));
            else CK(cudaMemcpy(hin.data(), dx, hin.size() * 4, cudaMemcpyDeviceToHost));
            double us = time_fn([&] { launch_small(ship(m, l), dh[l], in, dw[l], db[l], m, n, k, relu, false); });
            printf("LAYER m %u k %u n %u small us %.3f err %.1e\n", m, k, n, us, check(dh[l], hin, hw[l], hb[l], m, n, k, relu));
            for (int R : {1, 2, 4, 8}) {
                if (R > (int)m * 2 || (R == 8 && m < 8)) continue;
                launch_xs(R, dh[l], in, dw[l], db[l], m, n, k, relu, false);
                CK(cudaStreamSynchronize(st));
                double e = check(dh[l], hin, hw[l], hb[l], m, n, k, relu);
                double us2 = time_fn([&] { launch_xs(R, dh[l], in, dw[l], db[l], m, n, k, relu, false); });
                printf("LAYER m %u k %u n %u xs R %d us %.3f err %.1e\n", m, k, n, R, us2, e);
            }
            // leave the shipped output for the next layer
            launch_small(ship(m, l), dh[l], in, dw[l], db[l], m, n, k, relu, false);
            CK(cudaStreamSynchronize(st));
        }
        int Rm = m >= 8 ? 8 : m >= 4 ? 4 : m >= 2 ? 2 : 1;
        for (int which = 0; which < 4; which++) {
            auto chain = [&] {
                for (int l = 0; l < 3; l++) {
                    const float *in = l == 0 ? dx : dh[l - 1];
                    bool xs = which == 1 ? true : which == 2 ? l < 2 : which == 3 ? l == 0 : false;
                    if (xs) launch_xs(Rm, dh[l], in, dw[l], db[l], m, dims[l + 1], dims[l], l < 2, l > 0);
                    else launch_small(ship(m, l), dh[l], in, dw[l], db[l], m, dims[l + 1], dims[l], l < 2, l > 0);
                }
            };
            double us = 0;
            for (int rep = 0; rep < 3; rep++) us += time_fn(chain) / 3;
            const char *names[] = {"shipped", "xs all", "xs layers 1-2", "xs layer 1"};
            printf("CHAIN m %u %s R %d us %.3f\n", m, names[which], Rm, us);
        }
    }
    return 0;
}
