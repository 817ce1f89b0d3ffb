// Helpers of the small-batch harnesses (small.cu, staged_x.cu): a launch
// config of gc_linear_small_f32 and its grid, a launch of it (optionally as
// a programmatic dependent launch), and the float64 check of a layer's
// output. Include after linear.cu and common.cuh.
#pragma once

struct Cfg { unsigned lr, lc, lgr, lgc; };
static unsigned packed(Cfg c) { return c.lr | c.lc << 2 | c.lgr << 4 | c.lgc << 6; }
static dim3 grid_of(Cfg c, unsigned m, unsigned n) {
    unsigned bm = 1u << (c.lr + c.lgr), bn = 1u << (c.lc + c.lgc);
    return dim3((n + bn - 1) / bn, (m + bm - 1) / bm, 1);
}

static void launch_small(Cfg c, float *y, const float *x, const float *w, const float *b, unsigned m, unsigned n, unsigned k,
                         bool relu, bool pdl) {
    cudaLaunchConfig_t lc = {};
    lc.gridDim = grid_of(c, m, n);
    lc.blockDim = dim3(256, 1, 1);
    lc.stream = st;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    lc.attrs = at;
    lc.numAttrs = pdl ? 1 : 0;
    CK(cudaLaunchKernelEx(&lc, gc_linear_small_f32, y, x, w, b, m, n, k, (u32)(relu ? GC_LIN_RELU : 0u), (u32)packed(c)));
}

static double check(const float *dy, const std::vector<float> &x, const std::vector<float> &w,
                    const std::vector<float> &b, unsigned m, unsigned n, unsigned k, bool relu) {
    std::vector<float> y((size_t)m * n);
    CK(cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (unsigned i = 0; i < m; i++)
        for (unsigned j = 0; j < n; j++) {
            double s = b[j], a = fabs(b[j]);
            for (unsigned r = 0; r < k; r++) {
                double p = (double)x[(size_t)i * k + r] * w[(size_t)j * k + r];
                s += p;
                a += fabs(p);
            }
            if (relu && s < 0) s = 0;
            worst = std::max(worst, fabs(y[(size_t)i * n + j] - s) / (a + 1e-30));
        }
    return worst;
}
