// Helpers of the small-batch harnesses (small.cu, staged_x.cu): a launch
// config of gc_linear_small_f32 and its grid, a launch of it (optionally as
// a programmatic dependent launch), and the float64 check of a layer's
// output, and the notes' MLP on the device. Include after linear.cu and
// common.cuh.
#pragma once
#include "../launch_ex.cuh"

struct Cfg { unsigned lr, lc, lgr, lgc; };
static unsigned packed(Cfg c) { return c.lr | c.lc << 2 | c.lgr << 4 | c.lgc << 6; }
static dim3 grid_of(Cfg c, unsigned m, unsigned n) {
    unsigned bm = 1u << (c.lr + c.lgr), bn = 1u << (c.lc + c.lgc);
    return dim3((n + bn - 1) / bn, (m + bm - 1) / bm, 1);
}

// Launches `kern` on st with 256 threads a block, as a programmatic
// dependent launch when `pdl`.
template <class... P, class... A>
static void launch_pdl(void (*kern)(P...), dim3 grid, bool pdl, A... args) {
    CK(launch_ex(kern, grid, 256, 0, st, 1, pdl, args...));
}

static void launch_small(Cfg c, float *y, const float *x, const float *w, const float *b, unsigned m, unsigned n, unsigned k,
                         bool relu, bool pdl) {
    launch_pdl(gc_linear_small_f32, grid_of(c, m, n), pdl, y, x, w, b, (u32)m, (u32)n, (u32)k,
               (u32)(relu ? GC_LIN_RELU : 0u), (u32)packed(c));
}

// kernels/src/ops.rs small_config, n x k layout.
static Cfg launcher(unsigned m, unsigned n, unsigned k, unsigned sms) {
    if (m == 1) {
        unsigned p = 1, l = 0;
        while (p < n) { p <<= 1; l++; }
        return {0, 0, 0, std::min(l, 3u)};
    }
    unsigned lr, lc;
    if (n < 64) { lr = 2; lc = 0; } else if (m > 32) { lr = 3; lc = 2; } else { lr = 2; lc = 2; }
    auto np2 = [](unsigned long long v) { unsigned long long p = 1; while (p < v) p <<= 1; return p; };
    unsigned long long rows = std::max(np2(m), 1ull << lr), cols = std::max(np2(n), 1ull << lc);
    unsigned long long steps = std::max((k + 3ull) / 4, 32ull);
    struct S { Cfg c; bool fit; unsigned long long blocks; };
    std::vector<S> shapes;
    for (unsigned lgr = 0; lgr <= 3; lgr++)
        for (unsigned lgc = 0; lgc <= 3 - lgr; lgc++) {
            Cfg c{lr, lc, lgr, lgc};
            unsigned long long bm = 1ull << (lr + lgr), bn = 1ull << (lc + lgc);
            if (bm > rows || bn > cols) continue;
            unsigned long long lanes = 32ull << (3 - lgr - lgc);
            unsigned long long blocks = ((m + bm - 1) / bm) * ((n + bn - 1) / bn);
            shapes.push_back({c, lanes <= steps, blocks});
        }
    if (std::any_of(shapes.begin(), shapes.end(), [](const S &s) { return s.fit; }))
        shapes.erase(std::remove_if(shapes.begin(), shapes.end(), [](const S &s) { return !s.fit; }), shapes.end());
    bool full = std::any_of(shapes.begin(), shapes.end(), [&](const S &s) { return s.blocks >= sms; });
    auto key = [&](const S &s) {
        unsigned long long b = full ? (s.blocks >= sms ? s.blocks : ~0ull) : ~0ull - s.blocks;
        return std::make_pair(b, 3 - s.c.lgr);
    };
    return std::min_element(shapes.begin(), shapes.end(), [&](const S &a, const S &b) { return key(a) < key(b); })->c;
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

// The notes' MLP (1024 -> 512 -> 256 -> 10) on the device: random weights
// and biases (host copies hw, hb for the checks), a 64 x 1024 input dx, and
// each layer's output buffer dh (64 rows).
struct NotesMlp {
    unsigned dims[4] = {1024, 512, 256, 10};
    std::vector<float> hw[3], hb[3];
    float *dw[3], *db[3], *dx, *dh[3];
    NotesMlp() {
        srand(7);
        auto rnd = [](size_t n, float s) {
            std::vector<float> v(n);
            for (auto &e : v) e = s * (2.0f * rand() / RAND_MAX - 1.0f);
            return v;
        };
        for (int l = 0; l < 3; l++) {
            hw[l] = rnd((size_t)dims[l + 1] * dims[l], 1.0f / sqrtf((float)dims[l]));
            hb[l] = rnd(dims[l + 1], 0.1f);
            CK(cudaMalloc(&dw[l], hw[l].size() * 4));
            CK(cudaMalloc(&db[l], hb[l].size() * 4));
            CK(cudaMemcpy(dw[l], hw[l].data(), hw[l].size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(db[l], hb[l].data(), hb[l].size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMalloc(&dh[l], (size_t)64 * dims[l + 1] * 4));
        }
        std::vector<float> hx = rnd((size_t)64 * 1024, 1.0f);
        CK(cudaMalloc(&dx, hx.size() * 4));
        CK(cudaMemcpy(dx, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
    }
};
