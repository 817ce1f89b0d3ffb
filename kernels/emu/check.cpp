// check.cpp: checks every built-in kernel on the CPU through emu.hpp against a
// float64 reference (or bit for bit where the kernel's contract says so), over
// awkward sizes, misaligned pointers and every launch variant the kernels
// accept. Build and run with `python3 kernels/emu/run.py` (needs g++ >= 11).
#include "emu.hpp"

#include "../elementwise.cu"
#include "../linear.cu"
#include "../reduce.cu"

#include <cstdio>
#include <random>
#include <string>

static int failures = 0;
static int checks = 0;
static std::mt19937_64 rng(12345);

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        ++checks;                                                                                                      \
        if (!(cond)) {                                                                                                 \
            if (++failures <= 40) {                                                                                    \
                std::printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                        \
                std::printf(__VA_ARGS__);                                                                              \
                std::printf("\n");                                                                                     \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

static float rnd(float lo = -1.0f, float hi = 1.0f) {
    return std::uniform_real_distribution<float>(lo, hi)(rng);
}

// A buffer whose data starts `offset` floats after a 256-byte boundary.
struct Buf {
    std::vector<float> store;
    float *p;
    size_t n;
    Buf(size_t n_, unsigned offset = 0, float poison = NAN) : store(n_ + 64 + offset + 8, poison), n(n_) {
        auto base = reinterpret_cast<uintptr_t>(store.data());
        base = (base + 255) & ~uintptr_t(255);
        p = reinterpret_cast<float *>(base) + offset;
    }
    void random(float lo = -1.0f, float hi = 1.0f) {
        for (size_t i = 0; i < n; ++i) p[i] = rnd(lo, hi);
    }
    float &operator[](size_t i) { return p[i]; }
};

static bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

static uint3 g1(unsigned x) { return uint3{x, 1, 1}; }

// ---------------------------------------------------------------------------
// Elementwise kernels: exact (one IEEE operation per element).
static void check_elementwise() {
    const size_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 31, 257, 1000, 4099, (1u << 20) + 3};
    for (size_t n : sizes) {
        for (unsigned off : {0u, 1u}) {
            const unsigned grid = n > 100000 ? 64 : (n % 3) + 1;
            Buf x(n, off), y(n, off), z(n, off), o(n, off);
            x.random(-2, 2);
            y.random(-2, 2);
            // Some exact zeros, negative zeros for relu.
            x[0] = 0.0f;
            if (n > 1) x[1] = -0.0f;
            const float a = rnd(-3, 3), c = rnd(-3, 3);
            auto expect = [&](const char *name, auto f) {
                bool ok = true;
                size_t bad = 0;
                for (size_t i = 0; i < n && ok; ++i)
                    if (!same_bits(o[i], f(i))) ok = false, bad = i;
                CHECK(ok, "%s n=%zu off=%u at %zu: got %g want %g", name, n, off, bad, o[bad], f(bad));
                // Nothing written past the end.
                CHECK(std::isnan(o.p[n]), "%s n=%zu off=%u wrote past the end", name, n, off);
            };
            emu::launch(gc_fill_f32, g1(grid), g1(256), o.p, (u64)n, a);
            expect("fill", [&](size_t) { return a; });
            emu::launch(gc_copy_f32, g1(grid), g1(256), o.p, (const float *)x.p, (u64)n);
            expect("copy", [&](size_t i) { return x[i]; });
            emu::launch(gc_scale_f32, g1(grid), g1(256), o.p, (const float *)x.p, (u64)n, a);
            expect("scale", [&](size_t i) { return x[i] * a; });
            emu::launch(gc_add_scalar_f32, g1(grid), g1(256), o.p, (const float *)x.p, (u64)n, c);
            expect("add_scalar", [&](size_t i) { return x[i] + c; });
            for (size_t i = 0; i < n; ++i) o[i] = y[i];
            emu::launch(gc_axpy_f32, g1(grid), g1(256), o.p, (const float *)x.p, (u64)n, a);
            expect("axpy", [&](size_t i) { return std::fmaf(a, x[i], y[i]); });
            emu::launch(gc_add_f32, g1(grid), g1(256), o.p, (const float *)x.p, (const float *)y.p, (u64)n);
            expect("add", [&](size_t i) { return x[i] + y[i]; });
            emu::launch(gc_mul_f32, g1(grid), g1(256), o.p, (const float *)x.p, (const float *)y.p, (u64)n);
            expect("mul", [&](size_t i) { return x[i] * y[i]; });
            emu::launch(gc_relu_f32, g1(grid), g1(256), o.p, (const float *)x.p, (u64)n);
            expect("relu", [&](size_t i) { return x[i] > 0.0f ? x[i] : 0.0f; });
            emu::launch(gc_relu_backward_f32, g1(grid), g1(256), o.p, (const float *)y.p, (const float *)x.p,
                        (u64)n);
            expect("relu_backward", [&](size_t i) { return x[i] > 0.0f ? y[i] : 0.0f; });
            for (size_t i = 0; i < n; ++i) o[i] = y[i];
            emu::launch(gc_sgd_f32, g1(grid), g1(256), o.p, (const float *)x.p, (u64)n, a);
            expect("sgd", [&](size_t i) { return std::fmaf(-a, x[i], y[i]); });
            // In place.
            for (size_t i = 0; i < n; ++i) o[i] = x[i];
            emu::launch(gc_scale_f32, g1(grid), g1(256), o.p, (const float *)o.p, (u64)n, a);
            expect("scale in place", [&](size_t i) { return x[i] * a; });
            for (size_t i = 0; i < n; ++i) o[i] = x[i];
            emu::launch(gc_mul_f32, g1(grid), g1(256), o.p, (const float *)o.p, (const float *)o.p, (u64)n);
            expect("mul in place", [&](size_t i) { return x[i] * x[i]; });
            // x misaligned relative to y (one aligned, one not).
            if (off == 0 && n > 1) {
                emu::launch(gc_add_scalar_f32, g1(grid), g1(256), o.p, (const float *)(x.p + 1), (u64)(n - 1), c);
                bool ok = true;
                for (size_t i = 0; i + 1 < n; ++i) ok &= same_bits(o[i], x[i + 1] + c);
                CHECK(ok, "add_scalar mixed alignment n=%zu", n);
            }
        }
    }
    // NaN handling of relu (propagates) and relu_backward.
    Buf x(4), o(4);
    x[0] = NAN, x[1] = -0.0f, x[2] = -1.0f, x[3] = 2.0f;
    emu::launch(gc_relu_f32, g1(1), g1(256), o.p, (const float *)x.p, (u64)4);
    CHECK(std::isnan(o[0]) && same_bits(o[1], 0.0f) && same_bits(o[2], 0.0f) && o[3] == 2.0f, "relu specials");
}

// bias_add over shapes, aligned and not.
static void check_bias_add() {
    const unsigned shapes[][2] = {{1, 1}, {1, 7}, {3, 4}, {5, 12}, {17, 3}, {64, 1024}, {33, 1001}, {2, 260}};
    for (auto &s : shapes)
        for (unsigned off : {0u, 1u})
            for (unsigned grid : {1u, 3u, 16u}) {
                const unsigned rows = s[0], cols = s[1];
                Buf x(rows * cols, off), y(rows * cols, off), b(cols, off);
                x.random();
                b.random();
                emu::launch(gc_bias_add_f32, g1(grid), g1(256), y.p, (const float *)x.p, (const float *)b.p, rows, cols);
                bool ok = true;
                for (unsigned r = 0; r < rows; ++r)
                    for (unsigned c = 0; c < cols; ++c) ok &= same_bits(y[r * cols + c], x[r * cols + c] + b[c]);
                CHECK(ok && std::isnan(y.p[rows * cols]), "bias_add %ux%u off=%u grid=%u", rows, cols, off, grid);
            }
}

// ---------------------------------------------------------------------------
// Every map op declared in kernels/src/table.rs (map_ops.inc, generated from the
// declarations), bitwise: the float4 path equals the scalar path (aligned and
// misaligned buffers), in place equals out of place, the chain kernel's opcode
// equals the standalone kernel, and nothing is written past the end. Values
// against float64 are the GPU test's part (kernels::map_ops_match_float64).
struct MapCase {
    const char *name;
    u32 opcode;  // 0: a copy
    void (*launch)(uint3, uint3, float *, const float *, u64, float);
};
#define GC_MAP_OP(name, opcode, ...) MapCase{name, opcode, __VA_ARGS__},
#define GC_ZIP_OP(...)
static const MapCase MAP_CASES[] = {
#include "map_ops.inc"
};
#undef GC_MAP_OP
#undef GC_ZIP_OP

// The zip ops (z = f(x, y), map_ops.inc too), bitwise: float4 path == scalar
// path, z == x and z == y in place == out of place, nothing past the end.
struct ZipCase {
    const char *name;
    void (*launch)(uint3, uint3, float *, const float *, const float *, u64);
};
#define GC_MAP_OP(...)
#define GC_ZIP_OP(name, ...) ZipCase{name, __VA_ARGS__},
static const ZipCase ZIP_CASES[] = {
#include "map_ops.inc"
};
#undef GC_MAP_OP
#undef GC_ZIP_OP

static void check_zips() {
    for (const ZipCase &z : ZIP_CASES) {
        for (size_t n : {1ul, 3ul, 4ul, 5ul, 257ul, 4099ul}) {
            Buf x(n), y(n), xs(n, 1), ys(n, 1), a(n), b(n, 1), ix(n), iy(n);
            x.random(-3, 3);
            y.random(-3, 3);
            x[0] = -0.0f;
            if (n > 2) y[2] = NAN;
            for (size_t i = 0; i < n; ++i) xs[i] = x[i], ys[i] = y[i], ix[i] = x[i], iy[i] = y[i];
            z.launch(g1(2), g1(256), a.p, x.p, y.p, (u64)n);     // float4 path (n >= 4)
            z.launch(g1(2), g1(256), b.p, xs.p, ys.p, (u64)n);   // scalar path
            z.launch(g1(3), g1(256), ix.p, ix.p, y.p, (u64)n);   // z == x
            z.launch(g1(1), g1(256), iy.p, x.p, iy.p, (u64)n);   // z == y
            bool ok = std::isnan(a.p[n]) && std::isnan(b.p[n]);
            size_t bad = 0;
            for (size_t i = 0; i < n && ok; ++i)
                if (!same_bits(a[i], b[i]) || !same_bits(a[i], ix[i]) || !same_bits(a[i], iy[i])) ok = false, bad = i;
            CHECK(ok, "zip %s n=%zu at %zu: float4 %g, scalar %g, z == x %g, z == y %g", z.name, n, bad, a[bad], b[bad],
                  ix[bad], iy[bad]);
        }
    }
}

static void check_maps() {
    for (const MapCase &m : MAP_CASES) {
        for (size_t n : {1ul, 3ul, 4ul, 5ul, 257ul, 4099ul}) {
            const float c = rnd(-3, 3);
            Buf x(n), xs(n, 1), a(n), b(n, 1), ip(n), ch(n);
            x.random(-6, 6);
            x[0] = -0.0f;
            if (n > 2) x[2] = NAN;
            if (n > 3) x[3] = 0.0f;
            for (size_t i = 0; i < n; ++i) xs[i] = x[i];
            m.launch(g1(2), g1(256), a.p, x.p, (u64)n, c);   // float4 path (n >= 4)
            m.launch(g1(2), g1(256), b.p, xs.p, (u64)n, c);  // scalar path
            for (size_t i = 0; i < n; ++i) ip[i] = x[i];
            m.launch(g1(3), g1(256), ip.p, ip.p, (u64)n, c);
            const u32 count = m.opcode ? 1u : 0u;
            emu::launch(gc_chain_f32, g1(1), g1(256), ch.p, (const float *)x.p, (u64)n, m.opcode, count, c, 0.f, 0.f,
                        0.f, 0.f, 0.f, 0.f, 0.f);
            bool ok = std::isnan(a.p[n]) && std::isnan(b.p[n]);
            size_t bad = 0;
            for (size_t i = 0; i < n && ok; ++i)
                if (!same_bits(a[i], b[i]) || !same_bits(a[i], ip[i]) || !same_bits(a[i], ch[i])) ok = false, bad = i;
            CHECK(ok, "map %s n=%zu at %zu (x %g): float4 %g, scalar %g, in place %g, chain %g", m.name, n, bad, x[bad],
                  a[bad], b[bad], ip[bad], ch[bad]);
        }
    }
}

// ---------------------------------------------------------------------------
// Chains: bitwise equal to the standalone kernels run one after another.
static void check_chain() {
    const u32 FILL = 1, MUL = 2, ADD = 3, RELU = 4, MAX = 5, MIN = 6;
    for (int trial = 0; trial < 60; ++trial) {
        const size_t n = (trial % 5 == 0) ? 1 : 1 + rng() % 3000;
        const unsigned off = trial % 2, grid = 1 + trial % 4;
        const u32 count = trial % 9;
        u32 ops = 0;
        float c[8] = {};
        for (u32 i = 0; i < count; ++i) {
            u32 op = 2 + rng() % 5;  // MUL..MIN
            if (i == 0 && trial % 7 == 3) op = FILL;
            ops |= op << (4 * i);
            c[i] = rnd(-2, 2);
        }
        Buf x(n, off), y(n, off), s(n, off), t(n, off);
        x.random(-3, 3);
        x[0] = -0.0f;
        if (n > 2) x[2] = NAN;
        emu::launch(gc_chain_f32, g1(grid), g1(256), y.p, (const float *)x.p, (u64)n, ops, count, c[0], c[1], c[2],
                    c[3], c[4], c[5], c[6], c[7]);
        // Reference: standalone kernels, ping-ponging between s and t.
        float *cur = x.p;
        for (size_t i = 0; i < n; ++i) s[i] = x[i];
        cur = s.p;
        for (u32 i = 0; i < count; ++i) {
            const u32 op = (ops >> (4 * i)) & 15;
            float *dst = (cur == s.p) ? t.p : s.p;
            switch (op) {
            case FILL: emu::launch(gc_fill_f32, g1(3), g1(256), dst, (u64)n, c[i]); break;
            case MUL: emu::launch(gc_scale_f32, g1(2), g1(256), dst, (const float *)cur, (u64)n, c[i]); break;
            case ADD: emu::launch(gc_add_scalar_f32, g1(2), g1(256), dst, (const float *)cur, (u64)n, c[i]); break;
            case RELU: emu::launch(gc_relu_f32, g1(2), g1(256), dst, (const float *)cur, (u64)n); break;
            case MAX:
                for (size_t e = 0; e < n; ++e) dst[e] = (cur[e] <= c[i]) ? c[i] : cur[e];
                break;
            case MIN:
                for (size_t e = 0; e < n; ++e) dst[e] = (cur[e] >= c[i]) ? c[i] : cur[e];
                break;
            }
            cur = dst;
        }
        bool ok = true;
        size_t bad = 0;
        for (size_t i = 0; i < n && ok; ++i)
            if (!same_bits(y[i], cur[i])) ok = false, bad = i;
        CHECK(ok && std::isnan(y.p[n]), "chain trial %d n=%zu ops=%x count=%u at %zu: %g vs %g", trial, n, ops, count,
              bad, y[bad], cur[bad]);
    }
    // FILL first: x is not read (null).
    Buf y(10);
    emu::launch(gc_chain_f32, g1(1), g1(256), y.p, (const float *)nullptr, (u64)10, (1u | (3u << 4)), 2u, 1.5f, 2.0f,
                0.f, 0.f, 0.f, 0.f, 0.f, 0.f);
    bool ok = true;
    for (int i = 0; i < 10; ++i) ok &= y[i] == 3.5f;
    CHECK(ok, "chain FILL then ADD with null x");
}

// ---------------------------------------------------------------------------
// Column sums and MSE.
static void check_bias_grad() {
    const unsigned shapes[][2] = {{1, 1}, {1, 40}, {7, 3}, {64, 1024}, {100, 33}, {513, 70}, {3, 1}};
    for (auto &s : shapes)
        for (unsigned ty : {1u, 3u, 8u, 32u})
            for (unsigned off : {0u, 1u}) {
                const unsigned rows = s[0], cols = s[1];
                Buf dy(rows * cols, off), db(cols, off), b(cols, off), b2(cols, off);
                dy.random();
                b.random();
                for (unsigned c = 0; c < cols; ++c) b2[c] = b[c];
                const uint3 grid = g1((cols + 31) / 32), block{32, ty, 1};
                emu::launch(gc_bias_grad_f32, grid, block, db.p, (const float *)dy.p, rows, cols);
                bool ok = true;
                for (unsigned c = 0; c < cols; ++c) {
                    double ref = 0, mag = 0;
                    for (unsigned r = 0; r < rows; ++r) ref += dy[r * cols + c], mag += std::fabs(dy[r * cols + c]);
                    ok &= std::fabs(db[c] - ref) <= 1e-6 * mag + 1e-30;
                }
                CHECK(ok && std::isnan(db.p[cols]), "bias_grad %ux%u ty=%u", rows, cols, ty);
                const float lr = 0.05f;
                emu::launch(gc_bias_sgd_f32, grid, block, b.p, (const float *)dy.p, rows, cols, lr);
                emu::launch(gc_sgd_f32, g1(1), g1(256), b2.p, (const float *)db.p, (u64)cols, lr);
                ok = true;
                for (unsigned c = 0; c < cols; ++c) ok &= same_bits(b[c], b2[c]);
                CHECK(ok, "bias_sgd == bias_grad + sgd bitwise %ux%u ty=%u", rows, cols, ty);
            }
}

static void check_mse() {
    const size_t sizes[] = {1, 2, 5, 255, 256, 1023, 4097, 100003, (1u << 20) + 3};
    for (size_t n : sizes)
        for (unsigned off : {0u, 1u})
            for (unsigned grid : {1u, 2u, 7u}) {
                if (n > 200000 && grid != 7) continue;
                Buf p(n, off), t(n, off), g(n, off), loss(1), ws(4 + grid, 0, 0.0f);
                p.random(-2, 2);
                t.random(-2, 2);
                const float gs = 0.5f;
                std::memset(ws.p, 0, 4);
                emu::launch(gc_mse_f32, g1(grid), g1(256), loss.p, g.p, (const float *)p.p, (const float *)t.p, (u64)n,
                            gs, (void *)ws.p);
                double ref = 0, mag = 0;
                bool gok = true;
                for (size_t i = 0; i < n; ++i) {
                    const float d = p[i] - t[i];
                    ref += (double)d * d;
                    mag += (double)d * d;
                    gok &= same_bits(g[i], d * (2.0f * gs));
                }
                CHECK(std::fabs(loss[0] - ref) <= 2e-6 * mag * std::log2(n + 2.0) + 1e-30,
                      "mse loss n=%zu off=%u grid=%u: %.9g vs %.9g", n, off, grid, loss[0], ref);
                CHECK(gok && std::isnan(g.p[n]), "mse grad n=%zu off=%u grid=%u", n, off, grid);
                unsigned counter;
                std::memcpy(&counter, ws.p, 4);
                CHECK(counter == 0, "mse counter not reset");
                // Replay: same bits; and without grad.
                const float first = loss[0];
                emu::launch(gc_mse_f32, g1(grid), g1(256), loss.p, (float *)nullptr, (const float *)p.p,
                            (const float *)t.p, (u64)n, gs, (void *)ws.p);
                CHECK(same_bits(first, loss[0]), "mse replay differs n=%zu", n);
                // The mean (gc_mse_scaled_f32, loss_scale = grad_scale = 1.0f / n): the
                // same sum times the float reciprocal, bitwise, and the gradient 2 / n.
                const float s = 1.0f / (float)n;
                emu::launch(gc_mse_scaled_f32, g1(grid), g1(256), loss.p, g.p, (const float *)p.p,
                            (const float *)t.p, (u64)n, s, s, (void *)ws.p);
                CHECK(same_bits(loss[0], first * s), "mse mean n=%zu: %.9g vs %.9g", n, loss[0], first * s);
                CHECK(std::fabs(loss[0] - ref / n) <= 2e-6 * mag / n * std::log2(n + 2.0) + 1e-30,
                      "mse mean n=%zu vs float64: %.9g vs %.9g", n, loss[0], ref / n);
                bool mok = true;
                for (size_t i = 0; i < n; ++i) mok &= same_bits(g[i], (p[i] - t[i]) * (2.0f * s));
                CHECK(mok, "mse mean grad n=%zu", n);
                std::memcpy(&counter, ws.p, 4);
                CHECK(counter == 0, "mse mean counter not reset");
            }
}

// ---------------------------------------------------------------------------
// Linear layers and GEMM against float64.
struct Mat {
    unsigned rows, cols, ld;
    Buf buf;
    Mat(unsigned r, unsigned c, unsigned ld_, unsigned off) : rows(r), cols(c), ld(ld_), buf(size_t(r) * ld_, off) {
        buf.random();
    }
    float &at(unsigned r, unsigned c) { return buf[size_t(r) * ld + c]; }
};

static bool close(float got, double ref, double mag, double tol) {
    return std::fabs(got - ref) <= tol * mag + 1e-30;
}

// A gc_linear_small_f32 config: thread tile 2^lr x 2^lc, 2^lgr x 2^lgc groups.
struct SmallCfg {
    unsigned lr, lc, lgr, lgc;
    u32 packed() const { return lr | lc << 2 | lgr << 4 | lgc << 6; }
    unsigned bm() const { return (1u << lr) << lgr; }
    unsigned bn() const { return (1u << lc) << lgc; }
};

static void check_linear_small() {
    const unsigned ms[] = {1, 2, 3, 8, 9, 16, 17, 31, 33, 64};
    const unsigned ns[] = {1, 3, 8, 13, 40};
    const unsigned ks[] = {1, 3, 4, 7, 64, 129, 260};
    int trial = 0;
    for (unsigned m : ms)
        for (unsigned n : ns)
            for (unsigned k : ks) {
                ++trial;
                const bool kn = trial % 2;
                const unsigned off = (trial / 2) % 3 == 2;
                // The supported thread tiles (log2 rows, log2 columns) of each layout.
                static const unsigned nk_tiles[][2] = {{0, 0}, {2, 0}, {2, 2}, {3, 2}};
                static const unsigned kn_tiles[][2] = {{0, 2}, {2, 2}, {3, 2}};
                const unsigned *tile = kn ? kn_tiles[rng() % 3] : nk_tiles[rng() % 4];
                SmallCfg cfg;
                cfg.lr = tile[0];
                cfg.lc = tile[1];
                cfg.lgr = rng() % 4;
                cfg.lgc = rng() % (4 - cfg.lgr);
                const bool relu = trial % 4 == 1, bias = trial % 5 != 0;
                Buf x(m * k, off), w(n * k, off), b(n, off), y(m * n, off);
                x.random();
                w.random();
                b.random();
                const u32 flags = (relu ? 1u : 0u) | (kn ? 2u : 0u);
                emu::launch(gc_linear_small_f32, uint3{(n + cfg.bn() - 1) / cfg.bn(), (m + cfg.bm() - 1) / cfg.bm(), 1},
                            g1(256), y.p, (const float *)x.p, (const float *)w.p, (const float *)(bias ? b.p : nullptr), m,
                            n, k, flags, cfg.packed());
                bool ok = true;
                unsigned bi = 0, bj = 0;
                double want = 0;
                for (unsigned i = 0; i < m; ++i)
                    for (unsigned j = 0; j < n; ++j) {
                        double ref = bias ? b[j] : 0.0, mag = bias ? std::fabs(b[j]) : 0.0;
                        for (unsigned r = 0; r < k; ++r) {
                            const double wv = kn ? w[size_t(r) * n + j] : w[size_t(j) * k + r];
                            ref += (double)x[size_t(i) * k + r] * wv;
                            mag += std::fabs((double)x[size_t(i) * k + r] * wv);
                        }
                        if (relu && ref < 0) ref = 0;
                        if (ok && !close(y[size_t(i) * n + j], ref, mag, 1e-6)) ok = false, bi = i, bj = j, want = ref;
                    }
                CHECK(ok && std::isnan(y.p[m * n]),
                      "linear_small m=%u n=%u k=%u kn=%d off=%u cfg=%u/%u/%u/%u relu=%d bias=%d at (%u,%u): %g vs %g", m, n,
                      k, kn, off, cfg.lr, cfg.lc, cfg.lgr, cfg.lgc, relu, bias, bi, bj, ok ? 0.f : y[bi * n + bj], want);
                if (kn) continue;
                // gc_linear_small_rows_f32: the row count read from memory. Launched for a
                // bucket of max_m >= m rows with *rows = m and x, y of exactly m rows: y
                // bitwise the m-row launch's, nothing stored past row m - 1; then *rows
                // above max_m = m is clamped to m.
                for (unsigned extra : {0u, 1u + trial % 40u}) {
                    const unsigned max_m = m + extra;
                    Buf y2(m * n, off);
                    u32 rows = m;
                    emu::launch(gc_linear_small_rows_f32,
                                uint3{(n + cfg.bn() - 1) / cfg.bn(), (max_m + cfg.bm() - 1) / cfg.bm(), 1}, g1(256),
                                y2.p, (const float *)x.p, (const float *)w.p, (const float *)(bias ? b.p : nullptr),
                                (const u32 *)&rows, max_m, n, k, flags, cfg.packed());
                    bool same = std::isnan(y2.p[m * n]);
                    for (size_t i = 0; i < size_t(m) * n; ++i) same &= same_bits(y2[i], y[i]);
                    CHECK(same, "linear_small_rows m=%u max_m=%u n=%u k=%u cfg=%u/%u/%u/%u", m, max_m, n, k, cfg.lr,
                          cfg.lc, cfg.lgr, cfg.lgc);
                }
                Buf y3(m * n, off);
                const u32 too_many = m + 1000;
                emu::launch(gc_linear_small_rows_f32, uint3{(n + cfg.bn() - 1) / cfg.bn(), (m + cfg.bm() - 1) / cfg.bm(), 1},
                            g1(256), y3.p, (const float *)x.p, (const float *)w.p,
                            (const float *)(bias ? b.p : nullptr), &too_many, m, n, k, flags, cfg.packed());
                bool clamped = std::isnan(y3.p[m * n]);
                for (size_t i = 0; i < size_t(m) * n; ++i) clamped &= same_bits(y3[i], y[i]);
                CHECK(clamped, "linear_small_rows clamps *rows %u to max_m %u (n=%u k=%u)", too_many, m, n, k);
            }
}

static const unsigned GEMM_T[3] = {128, 64, 32};

// Runs gc_gemm_f32 and compares with float64.
static void gemm_case(unsigned m, unsigned n, unsigned k, bool ta, bool tb, unsigned tile, float alpha, float beta,
                      bool bias, bool relu, unsigned pad, unsigned off) {
    // op(A) is m x k; stored A is (ta ? k x m : m x k) with leading dim lda.
    const unsigned ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    Mat A(ar, ac, ac + pad, off), B(br, bc, bc + pad, off), C(m, n, n + pad, off), C0(m, n, n + pad, 0);
    Buf bv(n, off);
    bv.random();
    for (unsigned i = 0; i < m; ++i)
        for (unsigned j = 0; j < C.ld; ++j) C0.at(i, j) = C.at(i, j) = (beta == 0.0f && j < n) ? NAN : rnd();
    const unsigned tm = GEMM_T[tile];
    const unsigned blocks = ((m + tm - 1) / tm) * ((n + tm - 1) / tm);
    const u32 flags = (ta ? 1u : 0u) | (tb ? 2u : 0u) | (relu ? 4u : 0u);
    emu::launch(gc_gemm_f32, g1(blocks), g1(256), C.buf.p, (const float *)A.buf.p, (const float *)B.buf.p,
                (const float *)(bias ? bv.p : nullptr), m, n, k, A.ld, B.ld, C.ld, flags, alpha, beta, tile);
    bool ok = true;
    unsigned bi = 0, bj = 0;
    double want = 0;
    for (unsigned i = 0; i < m; ++i)
        for (unsigned j = 0; j < n; ++j) {
            double acc = 0, mag = 0;
            for (unsigned r = 0; r < k; ++r) {
                const double av = ta ? A.at(r, i) : A.at(i, r), bb = tb ? B.at(j, r) : B.at(r, j);
                acc += av * bb;
                mag += std::fabs(av * bb);
            }
            double ref = alpha * acc, rmag = std::fabs(alpha) * mag;
            if (beta != 0.0f) ref += beta * (double)C0.at(i, j), rmag += std::fabs(beta * (double)C0.at(i, j));
            if (bias) ref += bv[j], rmag += std::fabs(bv[j]);
            if (relu && ref < 0) ref = 0;
            if (ok && !close(C.at(i, j), ref, rmag, 1e-6)) ok = false, bi = i, bj = j, want = ref;
        }
    // Padding columns untouched.
    bool pad_ok = true;
    for (unsigned i = 0; i < m; ++i)
        for (unsigned j = n; j < C.ld; ++j) pad_ok &= same_bits(C.at(i, j), C0.at(i, j)) || (std::isnan(C.at(i, j)) && std::isnan(C0.at(i, j)));
    CHECK(ok && pad_ok, "gemm m=%u n=%u k=%u ta=%d tb=%d tile=%u alpha=%g beta=%g bias=%d relu=%d pad=%u off=%u at (%u,%u): %g vs %g",
          m, n, k, ta, tb, tile, alpha, beta, bias, relu, pad, off, bi, bj, ok ? 0.f : C.at(bi, bj), want);
}

static void check_gemm() {
    const unsigned dims[][3] = {{1, 1, 1}, {65, 7, 33}, {3, 70, 5}, {64, 64, 64}, {100, 37, 129}, {130, 66, 31}, {31, 97, 200}};
    int trial = 0;
    for (auto &d : dims)
        for (int t = 0; t < 4; ++t)
            for (unsigned tile : {0u, 1u, 2u}) {
                ++trial;
                const bool ta = t & 1, tb = t & 2;
                const float alpha = (trial % 3 == 0) ? -0.25f : 1.0f, beta = (trial % 4 == 1) ? 1.0f : (trial % 4 == 2 ? 0.5f : 0.0f);
                gemm_case(d[0], d[1], d[2], ta, tb, tile, alpha, beta, trial % 2 == 0, trial % 3 == 1, trial % 5 == 0 ? 3 : 0,
                          trial % 7 == 0);
            }
}

// The linear layout's tiles (gc_gemm_wide_f32, gc_gemm_mid_f32) give the
// bits of gc_gemm_f32's tile 0 (one-thread sums) or tile 2 (4 K slices) on
// the same inputs, epilogue variants, misaligned and padded operands
// included, and leave C's padding alone; other layouts do nothing.
static void check_gemm_linear_tiles() {
    struct Tile {
        void (*fn)(float *, const float *, const float *, const float *, u32, u32, u32, u32, u32, u32, u32, float,
                   float, u32);
        unsigned tile, tm, tn, ref;
    };
    const Tile tiles[] = {{gc_gemm_wide_f32, 0, 128, 256, 0}, {gc_gemm_wide_f32, 1, 128, 128, 0},
                          {gc_gemm_wide_f32, 2, 64, 64, 2}, {gc_gemm_mid_f32, 0, 64, 128, 0}};
    const unsigned dims[][3] = {{1, 1, 1}, {130, 260, 33}, {65, 129, 100}, {70, 7, 64}};
    int trial = 0;
    for (auto &d : dims)
        for (const Tile &t : tiles) {
            ++trial;
            const unsigned m = d[0], n = d[1], k = d[2], pad = trial % 2 ? 3 : 0, off = trial % 3 == 0;
            const float alpha = trial % 3 == 1 ? -0.25f : 1.0f, beta = trial % 4 == 1 ? 0.5f : 0.0f;
            const bool bias = trial % 2 == 0, relu = trial % 5 < 2;
            Mat A(m, k, k + pad, off), B(n, k, k + pad, off), C(m, n, n + pad, off);
            Buf bv(n, off);
            bv.random();
            Mat R = C;
            R.buf.p = R.buf.store.data() + (C.buf.p - C.buf.store.data());
            const u32 flags = 2u | (relu ? 4u : 0u);
            const float *bp = bias ? bv.p : nullptr;
            const unsigned rt = GEMM_T[t.ref], rb = ((m + rt - 1) / rt) * ((n + rt - 1) / rt);
            emu::launch(gc_gemm_f32, g1(rb), g1(256), R.buf.p, (const float *)A.buf.p, (const float *)B.buf.p, bp, m, n,
                        k, A.ld, B.ld, C.ld, flags, alpha, beta, t.ref);
            const unsigned blocks = ((m + t.tm - 1) / t.tm) * ((n + t.tn - 1) / t.tn);
            emu::launch(t.fn, g1(blocks), g1(256), C.buf.p, (const float *)A.buf.p, (const float *)B.buf.p, bp, m, n, k,
                        A.ld, B.ld, C.ld, flags, alpha, beta, t.tile);
            bool same = true;
            for (size_t i = 0; i < C.buf.store.size(); ++i) same &= same_bits(C.buf.store[i], R.buf.store[i]);
            CHECK(same, "linear tile %u/%ux%u m=%u n=%u k=%u: bits differ from gc_gemm_f32 tile %u", t.tile, t.tm, t.tn,
                  m, n, k, t.ref);
            // Any other layout: nothing written.
            std::vector<float> before(C.buf.store);
            emu::launch(t.fn, g1(blocks), g1(256), C.buf.p, (const float *)A.buf.p, (const float *)B.buf.p, bp, m, n, k,
                        A.ld, B.ld, C.ld, 4u, alpha, beta, t.tile);
            bool untouched = true;
            for (size_t i = 0; i < before.size(); ++i) untouched &= same_bits(before[i], C.buf.store[i]);
            CHECK(untouched, "linear tile %u/%ux%u wrote C for transpose bits 0", t.tile, t.tm, t.tn);
        }
}

// The fused weight update is bitwise equal to backward_weight + sgd.
static void check_weight_sgd_bitwise() {
    const unsigned m = 70, n = 45, k = 67;  // dW (n x k) = dY^T (n x m) . X (m x k)
    for (unsigned tile : {0u, 1u, 2u}) {
        Buf dy(m * n), x(m * k), w(n * k), w2(n * k), dw(n * k);
        dy.random();
        x.random();
        w.random();
        for (unsigned i = 0; i < n * k; ++i) w2[i] = w[i];
        const unsigned tm = GEMM_T[tile], blocks = ((n + tm - 1) / tm) * ((k + tm - 1) / tm);
        const float lr = 0.01f;
        emu::launch(gc_gemm_f32, g1(blocks), g1(256), dw.p, (const float *)dy.p, (const float *)x.p, (const float *)nullptr,
                    n, k, m, n, k, k, 1u, 1.0f, 0.0f, tile);
        emu::launch(gc_sgd_f32, g1(3), g1(256), w2.p, (const float *)dw.p, (u64)(n * k), lr);
        emu::launch(gc_gemm_f32, g1(blocks), g1(256), w.p, (const float *)dy.p, (const float *)x.p, (const float *)nullptr,
                    n, k, m, n, k, k, 1u, -lr, 1.0f, tile);
        bool ok = true;
        for (unsigned i = 0; i < n * k; ++i) ok &= same_bits(w[i], w2[i]);
        CHECK(ok, "fused weight sgd != backward_weight + sgd (tile %u)", tile);
    }
}

// The training-step kernels: gc_linear_mse_f32 is bitwise gc_linear_small_f32
// + gc_mse_f32's gradient (loss against float64); gc_linear_sgd_f32 is
// bitwise gc_bias_sgd_f32 + the fused weight-gradient GEMM (tile 3, the
// staged one, bitwise gc_gemm_f32's tile 1; shapes 64 x 40 x 36 and
// 37 x 200 x 100 take it where aligned).
static void check_train_step() {
    const unsigned shapes[][3] = {{64, 40, 36}, {3, 70, 5}, {33, 13, 64}, {1, 5, 7}, {17, 100, 31}, {37, 200, 100}};
    static const SmallCfg cfgs[] = {{3, 2, 1, 2}, {2, 2, 0, 3}, {2, 0, 2, 1}, {0, 0, 0, 3}, {3, 2, 0, 0}};
    int trial = 0;
    for (auto &sh : shapes)
        for (const SmallCfg &cfg : cfgs) {
            ++trial;
            const unsigned m = sh[0], n = sh[1], k = sh[2], off = trial % 3 == 2;
            const bool bias = trial % 4 != 1;
            Buf x(m * k, off), w(n * k, off), b(n, off), t(m * n, off), y(m * n, off), g(m * n, off), g2(m * n, off),
                pred(m * n, off), loss(1), loss2(1);
            x.random();
            w.random();
            b.random();
            t.random();
            const uint3 grid{(n + cfg.bn() - 1) / cfg.bn(), (m + cfg.bm() - 1) / cfg.bm(), 1};
            const unsigned blocks = grid.x * grid.y;
            Buf parts(blocks, 0, NAN), ws2(4 + 8, 0, 0.0f);
            const float gs = trial % 2 ? 1.0f : 0.25f;
            emu::launch(gc_linear_small_f32, grid, g1(256), y.p, (const float *)x.p, (const float *)w.p,
                        (const float *)(bias ? b.p : nullptr), m, n, k, 0u, cfg.packed());
            emu::launch(gc_mse_f32, g1(3), g1(256), loss2.p, g2.p, (const float *)y.p, (const float *)t.p, (u64)(m * n), gs,
                        (void *)ws2.p);
            emu::launch(gc_linear_mse_f32, grid, g1(256), g.p, pred.p, parts.p, (const float *)x.p, (const float *)w.p,
                        (const float *)(bias ? b.p : nullptr), (const float *)t.p, m, n, k, cfg.packed(), gs);
            bool same = true;
            double ref = 0, mag = 0;
            for (unsigned i = 0; i < m * n; ++i) {
                same &= same_bits(pred[i], y[i]) && same_bits(g[i], g2[i]);
                const double d = (double)y[i] - t[i];
                ref += d * d;
                mag += d * d;
            }
            CHECK(same && std::isnan(g.p[m * n]), "linear_mse %ux%ux%u trial %d: pred/grad differ from unfused", m, n, k,
                  trial);
            bool parts_ok = std::isnan(parts.p[blocks]);
            for (unsigned i = 0; i < blocks; ++i) parts_ok &= !std::isnan(parts[i]);
            CHECK(parts_ok, "linear_mse %ux%ux%u: one partial sum per block", m, n, k);

            // The update, for each tile and three bias shapes (roles in reverse with the last).
            for (unsigned tile : {0u, 1u, 2u, 3u})
                for (unsigned ty : {1u, 16u, 32u}) {
                    Buf w1(n * k, off), w2(n * k, off), b1(n, off), b2(n, off);
                    for (unsigned i = 0; i < n * k; ++i) w1[i] = w2[i] = w[i];
                    for (unsigned i = 0; i < n; ++i) b1[i] = b2[i] = b[i];
                    const float lr = 0.01f;
                    const unsigned gt = tile == 3 ? 1u : tile;  // tile 3: tile 1's bits
                    const unsigned tm = GEMM_T[gt], wb = ((n + tm - 1) / tm) * ((k + tm - 1) / tm);
                    emu::launch(gc_gemm_f32, g1(wb), g1(256), w2.p, (const float *)g.p, (const float *)x.p,
                                (const float *)nullptr, n, k, m, n, k, k, 1u, -lr, 1.0f, gt);
                    if (bias)
                        emu::launch(gc_bias_sgd_f32, g1((n + 31) / 32), uint3{32, ty, 1}, b2.p, (const float *)g.p, m, n,
                                    lr);
                    const unsigned bb = bias ? (n + 31) / 32 : 0;
                    const bool with_loss = ty != 1;
                    loss[0] = NAN;
                    emu::launch(gc_linear_sgd_f32, g1(with_loss + bb + wb), g1(256), w1.p, bias ? b1.p : (float *)nullptr,
                                (const float *)g.p, (const float *)x.p, m, n, k, lr, tile | (ty == 32 ? 4u : 0u), ty,
                                with_loss ? loss.p : (float *)nullptr, (const float *)parts.p, blocks);
                    if (with_loss) {
                        CHECK(std::fabs(loss[0] - ref) <= 2e-6 * mag * std::log2(m * n + 2.0) + 1e-30,
                              "linear step loss %ux%ux%u: %.9g vs %.9g", m, n, k, loss[0], ref);
                        static float first_loss;
                        if (tile == 0 && ty == 16) first_loss = loss[0];
                        else CHECK(same_bits(first_loss, loss[0]), "linear step loss differs between launches");
                    }
                    bool ok = true;
                    for (unsigned i = 0; i < n * k; ++i) ok &= same_bits(w1[i], w2[i]);
                    for (unsigned i = 0; i < n; ++i) ok &= same_bits(b1[i], b2[i]);
                    CHECK(ok && std::isnan(w1.p[n * k]), "linear_sgd %ux%ux%u tile %u ty %u bias %d differs from unfused",
                          m, n, k, tile, ty, bias);
                }
        }
}

// The 2-layer MLP step (one block: the grid barrier needs every block
// resident, which the emulator's sequential blocks are not) against float64.
static void check_mlp2_step() {
    const unsigned shapes[][4] = {{5, 12, 9, 6}, {17, 33, 20, 8}, {3, 8, 16, 4}};
    int trial = 0;
    for (auto &sh : shapes)
        for (unsigned tiles : {0u | 0u << 2 | 0u << 4, 2u | 1u << 2 | 1u << 4, 3u | 3u << 2 | 2u << 4, 1u | 2u << 2 | 0u << 4}) {
            ++trial;
            const unsigned m = sh[0], k0 = sh[1], k1 = sh[2], k2 = sh[3];
            Buf x(m * k0), w1(k1 * k0), b1(k1), w2(k2 * k1), b2(k2), t(m * k2), h(m * k1), dp(m * k2), dh(m * k1),
                parts(1), bar(4, 0, 0.0f), loss(1);
            x.random();
            w1.random(-0.5f, 0.5f);
            b1.random(-0.5f, 0.5f);
            w2.random(-0.5f, 0.5f);
            b2.random(-0.5f, 0.5f);
            t.random();
            std::vector<float> W1(w1.p, w1.p + k1 * k0), B1(b1.p, b1.p + k1), W2(w2.p, w2.p + k2 * k1), B2(b2.p, b2.p + k2);
            const float gs = 0.5f, lr = 0.01f;
            emu::launch(gc_mlp2_mse_f32, g1(1), g1(256), (const float *)x.p, (const float *)w1.p, (const float *)b1.p,
                        (const float *)w2.p, (const float *)b2.p, (const float *)t.p, h.p, dp.p, dh.p, parts.p,
                        (u32 *)bar.p, k0 | k1 << 16, k2 | m << 16, tiles, gs);
            const unsigned ty = 4;
            const u32 cfg = 1u | 2u << 2 | ty << 4 | (trial & 1u) << 10 | 1u << 16;
            // Layer 1: GEMM tile 1 (64 x 64), layer 2: tile 2 (32 x 32); loss block first
            // (last in odd trials: roles in reverse).
            const unsigned nb = 1 + (k2 + 31) / 32 + ((k2 + 31) / 32) * ((k1 + 31) / 32) + (k1 + 31) / 32 +
                                ((k1 + 63) / 64) * ((k0 + 63) / 64);
            emu::launch(gc_mlp2_sgd_f32, g1(nb), g1(256), w1.p, b1.p, w2.p, b2.p, (const float *)x.p, (const float *)h.p,
                        (const float *)dp.p, (const float *)dh.p, loss.p, (const float *)parts.p, k0 | k1 << 16,
                        k2 | m << 16, lr, cfg);
            // float64 reference
            std::vector<double> H(m * k1), DP(m * k2), DH(m * k1, 0.0);
            double L = 0;
            bool ok = true;
            for (unsigned i = 0; i < m; ++i)
                for (unsigned j = 0; j < k1; ++j) {
                    double v = B1[j];
                    for (unsigned r = 0; r < k0; ++r) v += (double)x[i * k0 + r] * W1[j * k0 + r];
                    H[i * k1 + j] = v > 0 ? v : 0;
                    ok &= std::fabs(h[i * k1 + j] - H[i * k1 + j]) <= 1e-5;
                }
            for (unsigned i = 0; i < m; ++i)
                for (unsigned j = 0; j < k2; ++j) {
                    double v = B2[j];
                    for (unsigned r = 0; r < k1; ++r) v += H[i * k1 + r] * W2[j * k1 + r];
                    const double d = v - t[i * k2 + j];
                    L += d * d;
                    DP[i * k2 + j] = 2.0 * gs * d;
                    ok &= std::fabs(dp[i * k2 + j] - DP[i * k2 + j]) <= 1e-5;
                }
            for (unsigned i = 0; i < m; ++i)
                for (unsigned r = 0; r < k1; ++r) {
                    double v = 0;
                    for (unsigned j = 0; j < k2; ++j) v += DP[i * k2 + j] * W2[j * k1 + r];
                    DH[i * k1 + r] = H[i * k1 + r] > 0 ? v : 0;
                    ok &= std::fabs(dh[i * k1 + r] - DH[i * k1 + r]) <= 1e-5;
                }
            CHECK(ok, "mlp2 step trial %d (%ux%ux%ux%u tiles %#x): h, dp or dh off", trial, m, k0, k1, k2, tiles);
            CHECK(std::fabs(loss[0] - L) <= 1e-5 * L + 1e-6, "mlp2 loss trial %d: %.9g vs %.9g", trial, loss[0], L);
            ok = true;
            for (unsigned j = 0; j < k2; ++j) {
                double gb = 0;
                for (unsigned i = 0; i < m; ++i) gb += DP[i * k2 + j];
                ok &= std::fabs(b2[j] - (B2[j] - lr * gb)) <= 1e-6;
                for (unsigned r = 0; r < k1; ++r) {
                    double g = 0;
                    for (unsigned i = 0; i < m; ++i) g += DP[i * k2 + j] * H[i * k1 + r];
                    ok &= std::fabs(w2[j * k1 + r] - (W2[j * k1 + r] - lr * g)) <= 1e-6;
                }
            }
            for (unsigned j = 0; j < k1; ++j) {
                double gb = 0;
                for (unsigned i = 0; i < m; ++i) gb += DH[i * k1 + j];
                ok &= std::fabs(b1[j] - (B1[j] - lr * gb)) <= 1e-6;
                for (unsigned r = 0; r < k0; ++r) {
                    double g = 0;
                    for (unsigned i = 0; i < m; ++i) g += DH[i * k1 + j] * x[i * k0 + r];
                    ok &= std::fabs(w1[j * k0 + r] - (W1[j * k0 + r] - lr * g)) <= 1e-6;
                }
            }
            unsigned counter;
            std::memcpy(&counter, bar.p, 4);
            CHECK(ok && counter == 0, "mlp2 update trial %d (%ux%ux%ux%u): parameters off (counter %u)", trial, m, k0, k1,
                  k2, counter);
        }
}

// The MLP checks' shapes: the small-batch kernel's tile configs (log2 rows,
// columns) and three 3-layer width chains.
static const unsigned MLP_TILES[4][2] = {{0, 0}, {2, 0}, {2, 2}, {3, 2}};
static const unsigned MLP_WIDTHS[3][4] = {{12, 9, 6, 5}, {16, 8, 12, 4}, {7, 33, 10, 3}};

// Random weights (wd[l + 1] x wd[l]) and biases (wd[l + 1]) of the L layers
// of widths wd, drawn layer by layer.
static void random_layers(const unsigned *wd, unsigned L, std::vector<Buf> &w, std::vector<Buf> &b) {
    for (unsigned l = 0; l < L; ++l) {
        w.emplace_back(wd[l + 1] * wd[l]);
        b.emplace_back(wd[l + 1]);
        w.back().random();
        b.back().random();
    }
}

// gc_mlp_f32 (one block) is bitwise the per-layer gc_linear_small_f32
// launches with its warp tiles and 8 one-warp groups per block.
static void check_mlp_fused() {
    int trial = 0;
    for (auto &wd : MLP_WIDTHS)
        for (unsigned rows : {1u, 5u, 9u}) {
            ++trial;
            const unsigned L = 3;
            Buf x(rows * wd[0]), y(rows * wd[3]), bar(4, 0, 0.0f), act(4 * 64 * ((rows * 33 + 63) / 64));
            x.random();
            std::vector<Buf> w, b;
            random_layers(wd, L, w, b);
            u32 flags = L << 4 | 1u | 2u;  // ReLU after layers 0 and 1
            unsigned code[3];
            for (unsigned l = 0; l < L; ++l) {
                code[l] = (trial + l) % 4;
                flags |= code[l] << (8 + 2 * l);
            }
            // Twice: the second launch must wait for its own tags, not take the first one's slots.
            for (int launch = 0; launch < 2; ++launch)
                emu::launch(gc_mlp_f32, g1(1), g1(256), y.p, (const float *)x.p, (u32 *)bar.p, act.p,
                            (const float *)w[0].p, (const float *)b[0].p, (const float *)w[1].p, (const float *)b[1].p,
                            (const float *)w[2].p, (const float *)b[2].p, (const float *)nullptr,
                            (const float *)nullptr, wd[0] | wd[1] << 16, wd[2] | wd[3] << 16, 0u | rows << 16, flags);
            // Per layer.
            Buf h1(rows * wd[1]), h2(rows * wd[2]), y2(rows * wd[3]);
            float *outs[3] = {h1.p, h2.p, y2.p};
            const float *in = x.p;
            for (unsigned l = 0; l < L; ++l) {
                SmallCfg cfg{MLP_TILES[code[l]][0], MLP_TILES[code[l]][1], 0, 3};
                const unsigned n = wd[l + 1];
                emu::launch(gc_linear_small_f32, uint3{(n + cfg.bn() - 1) / cfg.bn(), (rows + cfg.bm() - 1) / cfg.bm(), 1},
                            g1(256), outs[l], in, (const float *)w[l].p, (const float *)b[l].p, rows, n, wd[l], l < 2 ? 1u : 0u,
                            cfg.packed());
                in = outs[l];
            }
            bool same = true;
            for (unsigned i = 0; i < rows * wd[3]; ++i) same &= same_bits(y[i], y2[i]);
            unsigned counter, epoch;
            std::memcpy(&counter, bar.p, 4);
            std::memcpy(&epoch, bar.p + 1, 4);
            CHECK(same && counter == 0 && epoch == 2, "mlp fused != per layer: widths %u-%u-%u-%u rows %u codes %u %u %u", wd[0], wd[1],
                  wd[2], wd[3], rows, code[0], code[1], code[2]);
        }
}

// gc_op_mlp_rows: one gc_linear_small_rows_f32 launch per layer, each reading the row count
// m from memory, launched for a bucket of max_m rows. Against the per-layer
// gc_linear_small_f32 chain of max_m rows (the same configs, x's first m rows the
// same): every layer's first m rows bitwise that chain's, nothing stored past row
// m - 1 of y or of the intermediates, and a count above max_m clamped to max_m.
static void check_mlp_rows() {
    int trial = 0;
    for (auto &wd : MLP_WIDTHS)
        for (unsigned max_m : {1u, 5u, 9u, 17u}) {
            ++trial;
            const unsigned L = 3;
            std::vector<Buf> w, b;
            random_layers(wd, L, w, b);
            SmallCfg cfg[3];
            for (unsigned l = 0; l < L; ++l) {
                const unsigned code = (trial + l) % 4;
                cfg[l] = SmallCfg{MLP_TILES[code][0], MLP_TILES[code][1], unsigned(rng() % 3), 0};
                cfg[l].lgc = rng() % (4 - cfg[l].lgr);
            }
            // The reference: max_m rows through the per-layer chain.
            Buf x(max_m * wd[0]);
            x.random();
            Buf r1(max_m * wd[1]), r2(max_m * wd[2]), ry(max_m * wd[3]);
            {
                float *outs[3] = {r1.p, r2.p, ry.p};
                const float *in = x.p;
                for (unsigned l = 0; l < L; ++l) {
                    const unsigned n = wd[l + 1];
                    emu::launch(gc_linear_small_f32,
                                uint3{(n + cfg[l].bn() - 1) / cfg[l].bn(), (max_m + cfg[l].bm() - 1) / cfg[l].bm(), 1},
                                g1(256), outs[l], in, (const float *)w[l].p, (const float *)b[l].p, max_m, n, wd[l],
                                l < 2 ? 1u : 0u, cfg[l].packed());
                    in = outs[l];
                }
            }
            for (unsigned m = 1; m <= max_m + 1; ++m) {
                const bool clamp = m > max_m;
                const unsigned rows = clamp ? max_m + 1000 : m, done = clamp ? max_m : m;
                // x and y of exactly `done` rows; the intermediates sized for the bucket.
                Buf xm(done * wd[0]), h1(max_m * wd[1]), h2(max_m * wd[2]), y(done * wd[3]);
                for (unsigned i = 0; i < done * wd[0]; ++i) xm[i] = x[i];
                float *outs[3] = {h1.p, h2.p, y.p};
                const float *in = xm.p;
                const u32 count = rows;
                for (unsigned l = 0; l < L; ++l) {
                    const unsigned n = wd[l + 1];
                    emu::launch(gc_linear_small_rows_f32,
                                uint3{(n + cfg[l].bn() - 1) / cfg[l].bn(), (max_m + cfg[l].bm() - 1) / cfg[l].bm(), 1},
                                g1(256), outs[l], in, (const float *)w[l].p, (const float *)b[l].p, &count, max_m, n,
                                wd[l], l < 2 ? 1u : 0u, cfg[l].packed());
                    in = outs[l];
                }
                bool same = std::isnan(y.p[done * wd[3]]);
                for (unsigned i = 0; i < done * wd[3]; ++i) same &= same_bits(y[i], ry[i]);
                for (unsigned i = 0; i < done * wd[1]; ++i) same &= same_bits(h1[i], r1[i]);
                for (unsigned i = done * wd[1]; i < max_m * wd[1]; ++i) same &= std::isnan(h1[i]);
                for (unsigned i = done * wd[2]; i < max_m * wd[2]; ++i) same &= std::isnan(h2[i]);
                CHECK(same, "mlp_rows widths %u-%u-%u-%u max_m %u *rows %u: not the bucket chain's first rows", wd[0],
                      wd[1], wd[2], wd[3], max_m, rows);
            }
        }
}

int main(int argc, char **argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    auto run = [&](const char *name, void (*f)()) {
        if (!only.empty() && only != name) return;
        const int before = failures;
        f();
        std::printf("%-20s %s\n", name, failures == before ? "ok" : "FAILED");
        std::fflush(stdout);
    };
    run("elementwise", check_elementwise);
    run("bias_add", check_bias_add);
    run("chain", check_chain);
    run("maps", check_maps);
    run("zips", check_zips);
    run("bias_grad", check_bias_grad);
    run("mse", check_mse);
    run("linear_small", check_linear_small);
    run("gemm", check_gemm);
    run("gemm_linear", check_gemm_linear_tiles);
    run("weight_sgd", check_weight_sgd_bitwise);
    run("train_step", check_train_step);
    run("mlp2_step", check_mlp2_step);
    run("mlp_fused", check_mlp_fused);
    run("mlp_rows", check_mlp_rows);
    std::printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
