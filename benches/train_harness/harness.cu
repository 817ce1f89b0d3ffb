// The linear layer's training step (issue 14: Linear 1024 x 1024, batch 64,
// summed squared error, SGD) as kernels: the shipped two-launch step
// (gc_linear_mse_f32 + gc_linear_sgd_f32, with gc_gemm_f32's tile 1 and with
// the staged tile 3) beside an experiment that did not pay: a split-K
// forward (gc_linear_step_fwd below: 64 x 64 column tiles times K slices,
// the last slice's blocks adding the slices and finishing dY, the loss's
// tile sums and the bias) with a weight update of staged tiles
// (gc_wsgd_staged variants). Each is checked against a float64 step on the
// host (and on odd shapes), run twice for bitwise determinism, and timed
// with CUDA events as graph replays: each kernel alone and the step in a
// graph of 20 steps, and the step as a one-step graph replayed back to
// back. Prints `RES` lines. On the GPU machine, from the repository root:
//   bash benches/train_harness/run.sh   (kernels/TUNING.md has the results)
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
// linear.cu's CPU-emulation hook (kernels/emu), unused in a GPU build.
__host__ __device__ inline void emu_yield() {}
#include "linear.cu"

// ---------------------------------------------------------------------------
// The split-K forward (not shipped: kernels/TUNING.md, "Training step, run 4").
// G = T S blocks for T = ceil(n / BN) column tiles and S = ceil(k / kc) K
// slices; a block takes a ticket (bar's low 16 bits; TICKET false: its
// blockIdx) and writes tile t % T of slice t / T's products into part; the
// last slice's blocks wait until the other blocks are done (bar's high 16
// bits), add the slices in order, and write p = b + sum, grad = 2 gs (p -
// target), sums[tile] (the tile's sum of (p - target)^2) and b -= lr colsum
// grad. bar: zero before the launch, left zero. m <= 64, n, k, kc % 4 == 0.
#define GC_STEP_ROWS 64
#define GC_STEP_DONE (1u << 16)

template <int BN, int TM, int TN, int BK, int KS, bool TICKET = true>
__device__ __forceinline__ void gc_linear_step_fwd(float *grad, float *part, float *sums, u32 *bar, const float *x,
                                                   const float *w, float *b, const float *target, u32 m, u32 n,
                                                   u32 k, u32 kc, float grad_scale, float lr, float *smem) {
    constexpr int BM = GC_STEP_ROWS;
    constexpr int Q = BM * BN / 4 / GC_GEMM_THREADS;  // float4 groups of the tile per thread
    static_assert(Q >= 1, "whole groups");
    __shared__ u32 ticket;
    const u32 tid = threadIdx.x;
    const u32 T = (n + BN - 1) / BN, S = (k + kc - 1) / kc, G = T * S;
    if (TICKET) {
        if (tid == 0) ticket = atomicAdd(bar, 1u) & (GC_STEP_DONE - 1);
        __syncthreads();
    }
    const u32 t = TICKET ? ticket : blockIdx.x;
    if (t >= G) return;  // bar was not zero at the start: the finishers trap
    const u32 tile = t % T, slice = t / T, k0 = slice * kc;
    const bool finisher = slice == S - 1;
    const u32 j0 = tile * BN;

    // The finishers' bias and targets, loaded before the products.
    float4 tv[Q];
    float bv[Q][4];
    if (finisher) {
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            const u32 g = tid + GC_GEMM_THREADS * q, row = g / (BN / 4), col = j0 + 4 * (g % (BN / 4));
            const bool in = row < m && col < n;
            tv[q] = in ? __ldg(reinterpret_cast<const float4 *>(target + row * n + col)) : make_float4(0, 0, 0, 0);
#pragma unroll
            for (int e = 0; e < 4; ++e) bv[q][e] = (b != nullptr && col < n) ? b[col + e] : 0.0f;
        }
    }

    gc_gemm_reg<BM, BN, TM, TN, BK, GC_GEMM_THREADS, GC_GEMM_TRANS_B, KS>(
        part + slice * m * n, x + k0, w + k0, nullptr, m, n, min(kc, k - k0), k, k, n, GC_GEMM_TRANS_B, 1.0f, 0.0f,
        smem, tile);
    __syncthreads();  // every partial store of the block is issued
    if (!finisher) {
        if (tid == 0) gc_atom_add_acq_rel(bar, GC_STEP_DONE);
        return;
    }
    if (tid == 0) {
        const u32 need = (G - T) * GC_STEP_DONE;
        for (u32 tries = 0; gc_ld_acquire(bar) < need; ++tries) gc_poll_check(tries);
    }
    __syncthreads();

    // p = b + the slices' sums in slice order, then the loss terms and dY.
    float4 acc[Q];
    const u32 mn = m * n;
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        const u32 g = tid + GC_GEMM_THREADS * q, row = g / (BN / 4), col = j0 + 4 * (g % (BN / 4));
        acc[q] = make_float4(0, 0, 0, 0);
        if (row < m && col < n) acc[q] = __ldcg(reinterpret_cast<const float4 *>(part + row * n + col));
    }
    for (u32 s = 1; s < S; s += 4) {
        float4 v[4][Q];
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int q = 0; q < Q; ++q) {
                const u32 g = tid + GC_GEMM_THREADS * q, row = g / (BN / 4), col = j0 + 4 * (g % (BN / 4));
                if (s + u < S && row < m && col < n)
                    v[u][q] = __ldcg(reinterpret_cast<const float4 *>(part + (s + u) * mn + row * n + col));
            }
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int q = 0; q < Q; ++q)
                if (s + u < S) {
                    acc[q].x = __fadd_rn(acc[q].x, v[u][q].x);
                    acc[q].y = __fadd_rn(acc[q].y, v[u][q].y);
                    acc[q].z = __fadd_rn(acc[q].z, v[u][q].z);
                    acc[q].w = __fadd_rn(acc[q].w, v[u][q].w);
                }
    }
    const float g2 = 2.0f * grad_scale;
    float lsum = 0.0f;
    float(*dys)[BN + 4] = reinterpret_cast<float(*)[BN + 4]>(smem);  // dY tile, for the bias sums
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        const u32 g = tid + GC_GEMM_THREADS * q, row = g / (BN / 4), c = 4 * (g % (BN / 4)), col = j0 + c;
        if (row >= m || col >= n) continue;
        const float p[4] = {__fadd_rn(bv[q][0], acc[q].x), __fadd_rn(bv[q][1], acc[q].y),
                            __fadd_rn(bv[q][2], acc[q].z), __fadd_rn(bv[q][3], acc[q].w)};
        const float tt[4] = {tv[q].x, tv[q].y, tv[q].z, tv[q].w};
        float dy[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float d = __fsub_rn(p[e], tt[e]);
            lsum = fmaf(d, d, lsum);
            dy[e] = __fmul_rn(d, g2);
        }
        const float4 o = make_float4(dy[0], dy[1], dy[2], dy[3]);
        *reinterpret_cast<float4 *>(grad + row * n + col) = o;
        gc_sts4(&dys[row][c], o);
    }
    const float total = gc_block_sum(lsum);  // its barriers also order dys
    if (tid == 0) sums[tile] = total;
    if (b != nullptr && tid < BN && j0 + tid < n) {
        float s = 0.0f;
        for (u32 i = 0; i < m; ++i) s = __fadd_rn(s, dys[i][tid]);
        b[j0 + tid] = fmaf(-lr, s, b[j0 + tid]);
    }
    __syncthreads();  // every store of the finisher is issued
    if (tid == 0 && gc_atom_add_acq_rel(bar, GC_STEP_DONE) == (G - 1) * GC_STEP_DONE + (TICKET ? G : 0u))
        gc_st_release(bar, 0u);
}


#define CK(x) do { cudaError_t ck_ = (x); if (ck_ != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(ck_)); exit(1); } } while (0)

template <int BN, int TM, int TN, int BK, int KS, int MINB, bool TICKET>
__global__ void __launch_bounds__(256, MINB) fwd_var(float *grad, float *part, float *sums, u32 *bar, const float *x,
                                                     const float *w, float *b, const float *target, u32 m, u32 n,
                                                     u32 k, u32 kc, float gs, float lr) {
    constexpr int A = 2 * BK * (64 + 4) + 2 * BK * (BN + 4), R = 64 * (BN + 4);
    __shared__ __align__(16) float smem[A > R ? A : R];
    gc_linear_step_fwd<BN, TM, TN, BK, KS, TICKET>(grad, part, sums, bar, x, w, b, target, m, n, k, kc, gs, lr, smem);
}
template <int BJ, int BR, int TJ, int TR, int NT, int MINB>
__global__ void __launch_bounds__(NT, MINB) upd_var(float *w, const float *dy, const float *x, u32 m, u32 n, u32 k,
                                                    float lr, float *loss, const float *sums, u32 parts) {
    __shared__ __align__(16) float smem[64 * (BJ + 4 + BR + 4)];
    u32 blk = blockIdx.x;
    if (blk == 0) {
        if (threadIdx.x < 256 && NT == 256) gc_loss_block(loss, sums, parts);
        else if (NT != 256) {  // gc_block_sum needs 256 threads: a plain ordered sum
            if (threadIdx.x == 0) { float s = 0; for (u32 i = 0; i < parts; ++i) s += sums[i]; loss[0] = s; }
        }
        return;
    }
    gc_wsgd_staged<BJ, BR, TJ, TR, NT>(w, dy, x, m, n, k, lr, smem, blk - 1);
}

struct Fwd { const char *name; void (*k)(float *, float *, float *, u32 *, const float *, const float *, float *, const float *, u32, u32, u32, u32, float, float); int bn; int kc; };
struct Upd { const char *name; void (*k)(float *, const float *, const float *, u32, u32, u32, float, float *, const float *, u32); int bj, br, nt; };

static u64 rng = 88172645463325252ull;
static float frand() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f; }

struct Prob {
    int m, n, k;
    std::vector<float> x, w0, b0, t;
    std::vector<double> wr, br; double lr_loss;
    float *dx, *dw, *db, *dt, *dw0, *db0, *dloss; char *ws; size_t ws_bytes;
    float lr = 1e-3f;
    Prob(int m_, int n_, int k_) : m(m_), n(n_), k(k_) {
        x.resize((size_t)m * k); w0.resize((size_t)n * k); b0.resize(n); t.resize((size_t)m * n);
        float s = 1.0f / sqrtf((float)k);
        for (auto &v : w0) v = frand() * s;
        for (auto &v : b0) v = frand() * s;
        for (auto &v : x) v = frand() * 0.1f;
        for (auto &v : t) v = frand();
        // float64 step
        std::vector<double> dy((size_t)m * n); double loss = 0;
        for (int i = 0; i < m; i++) for (int j = 0; j < n; j++) {
            double p = b0[j]; for (int r = 0; r < k; r++) p += (double)x[(size_t)i * k + r] * w0[(size_t)j * k + r];
            double d = p - t[(size_t)i * n + j]; loss += d * d; dy[(size_t)i * n + j] = 2 * d;
        }
        lr_loss = loss; wr.resize((size_t)n * k); br.resize(n);
        for (int j = 0; j < n; j++) {
            double sb = 0; for (int i = 0; i < m; i++) sb += dy[(size_t)i * n + j];
            br[j] = b0[j] - (double)lr * sb;
            for (int r = 0; r < k; r++) { double g = 0; for (int i = 0; i < m; i++) g += dy[(size_t)i * n + j] * x[(size_t)i * k + r]; wr[(size_t)j * k + r] = w0[(size_t)j * k + r] - (double)lr * g; }
        }
        auto up = [](const std::vector<float> &v) { float *d; CK(cudaMalloc(&d, v.size() * 4)); CK(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice)); return d; };
        dx = up(x); dw0 = up(w0); db0 = up(b0); dt = up(t); dw = up(w0); db = up(b0);
        CK(cudaMalloc(&dloss, 4));
        ws_bytes = 4096 + (size_t)m * n * 4 * 20;
        CK(cudaMalloc(&ws, ws_bytes)); CK(cudaMemset(ws, 0, ws_bytes));
    }
    void reset() { CK(cudaMemcpy(dw, dw0, w0.size() * 4, cudaMemcpyDeviceToDevice)); CK(cudaMemcpy(db, db0, n * 4, cudaMemcpyDeviceToDevice)); CK(cudaMemset(dloss, 0xff, 4)); }
    u32 *bar() { return (u32 *)ws; }
    float *sums() { return (float *)(ws + 256); }
    float *grad() { return (float *)(ws + 2048); }
    float *part() { return (float *)(ws + 2048 + (size_t)m * n * 4 + 256); }
};

using Launch = std::function<void(cudaStream_t)>;

static double time_graph(cudaStream_t s, const Launch &body, int per_graph, int reps = 5, int iters = 50) {
    cudaGraph_t g; cudaGraphExec_t e;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < per_graph; i++) body(s);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&e, g, 0));
    for (int i = 0; i < 5; i++) CK(cudaGraphLaunch(e, s));
    CK(cudaStreamSynchronize(s));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<double> ts;
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < iters; i++) CK(cudaGraphLaunch(e, s));
        CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms * 1e3 / iters / per_graph);
    }
    CK(cudaGetLastError());
    std::sort(ts.begin(), ts.end());
    CK(cudaGraphExecDestroy(e)); CK(cudaGraphDestroy(g)); CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
    return ts[ts.size() / 2];
}

struct Check { double werr, berr, lerr; bool det; };
static double uerr(const std::vector<float> &got, const std::vector<double> &want, const std::vector<float> &base) {
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); i++) { double d = got[i] - want[i]; num += d * d; double u = want[i] - base[i]; den += u * u; }
    double e = sqrt(num / std::max(den, 1e-300));
    return std::isfinite(e) ? e : 1e30;
}
static Check check(Prob &p, cudaStream_t s, const Launch &step) {
    std::vector<float> w1(p.w0.size()), b1(p.n), w2(p.w0.size()), b2(p.n); float l1, l2;
    p.reset(); step(s); CK(cudaStreamSynchronize(s)); CK(cudaGetLastError());
    CK(cudaMemcpy(w1.data(), p.dw, w1.size() * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(b1.data(), p.db, p.n * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(&l1, p.dloss, 4, cudaMemcpyDeviceToHost));
    p.reset(); step(s); CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(w2.data(), p.dw, w2.size() * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(b2.data(), p.db, p.n * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(&l2, p.dloss, 4, cudaMemcpyDeviceToHost));
    u32 barv; CK(cudaMemcpy(&barv, p.bar(), 4, cudaMemcpyDeviceToHost));
    Check c;
    c.werr = uerr(w1, p.wr, p.w0); c.berr = uerr(b1, p.br, p.b0);
    c.lerr = fabs((l1 - p.lr_loss) / p.lr_loss); if (!std::isfinite(c.lerr)) c.lerr = 1e30;
    c.det = !memcmp(w1.data(), w2.data(), w1.size() * 4) && !memcmp(b1.data(), b2.data(), p.n * 4) && !memcmp(&l1, &l2, 4) && barv == 0;
    return c;
}

int main() {
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
    printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    std::vector<Fwd> fwds = {
        {"F64x64ks4_S8", fwd_var<64, 8, 8, 32, 4, 1, true>, 64, 128},
        {"F64x64ks4_S8_blockidx", fwd_var<64, 8, 8, 32, 4, 1, false>, 64, 128},
        {"F64x64ks4_S4", fwd_var<64, 8, 8, 32, 4, 1, true>, 64, 256},
        {"F64x64ks4_S16", fwd_var<64, 8, 8, 32, 4, 1, true>, 64, 64},
        {"F64x32ks4_S4", fwd_var<32, 8, 4, 32, 4, 1, true>, 32, 256},
        {"F64x32ks4_S8", fwd_var<32, 8, 4, 32, 4, 2, true>, 32, 128},
        {"F64x64t44_S8", fwd_var<64, 4, 4, 16, 1, 2, true>, 64, 128},
        {"F64x64t44_S16", fwd_var<64, 4, 4, 16, 1, 2, true>, 64, 64},
        {"F64x32ks2_S8", fwd_var<32, 4, 4, 32, 2, 2, true>, 32, 128},
        {"F64x128ks2_S16", fwd_var<128, 8, 8, 16, 2, 1, true>, 128, 64},
    };
    std::vector<Upd> upds = {
        {"U64x64t44", upd_var<64, 64, 4, 4, 256, 2>, 64, 64, 256},
        {"U64x64t84", upd_var<64, 64, 8, 4, 128, 4>, 64, 64, 128},
        {"U64x32t44", upd_var<64, 32, 4, 4, 128, 4>, 64, 32, 128},
        {"U64x64t88", upd_var<64, 64, 8, 8, 64, 4>, 64, 64, 64},
        {"U32x64t44", upd_var<32, 64, 4, 4, 128, 4>, 32, 64, 128},
    };
    auto fwd_launch = [](Prob &p, const Fwd &f) -> Launch {
        u32 T = (p.n + f.bn - 1) / f.bn, S = (p.k + f.kc - 1) / f.kc;
        return [&p, f, T, S](cudaStream_t s) {
            f.k<<<T * S, 256, 0, s>>>(p.grad(), p.part(), p.sums(), p.bar(), p.dx, p.dw, p.db, p.dt, p.m, p.n, p.k, f.kc, 1.0f, p.lr);
        };
    };
    auto upd_launch = [](Prob &p, const Upd &u, u32 parts) -> Launch {
        u32 blocks = 1 + ((p.n + u.bj - 1) / u.bj) * ((p.k + u.br - 1) / u.br);
        return [&p, u, blocks, parts](cudaStream_t s) {
            u.k<<<blocks, u.nt, 0, s>>>(p.dw, p.grad(), p.dx, p.m, p.n, p.k, p.lr, p.dloss, p.sums(), parts);
        };
    };

    Prob big(64, 1024, 1024), odd(37, 200, 100), small(8, 512, 256);
    // The shipped step (gc_linear_mse_f32 config 0x3b + gc_linear_sgd_f32 tile 1, bias_ty 16), 64 x 1024 x 1024 only.
    {
        Prob &p = big;
        float *partials = p.sums();
        Launch step = [&](cudaStream_t s) {
            gc_linear_mse_f32<<<dim3(256, 1), 256, 0, s>>>(p.grad(), nullptr, partials, p.dx, p.dw, p.db, p.dt, 64, 1024, 1024, 0x3b, 1.0f);
            gc_linear_sgd_f32<<<1 + 32 + 256, 256, 0, s>>>(p.dw, p.db, p.grad(), p.dx, 64, 1024, 1024, p.lr, 1, 16, p.dloss, partials, 256);
        };
        Check c = check(p, s, step);
        Launch f1 = [&](cudaStream_t s) { gc_linear_mse_f32<<<dim3(256, 1), 256, 0, s>>>(p.grad(), nullptr, partials, p.dx, p.dw, p.db, p.dt, 64, 1024, 1024, 0x3b, 1.0f); };
        Launch u1 = [&](cudaStream_t s) { gc_linear_sgd_f32<<<1 + 32 + 256, 256, 0, s>>>(p.dw, p.db, p.grad(), p.dx, 64, 1024, 1024, p.lr, 1, 16, p.dloss, partials, 256); };
        double tf = time_graph(s, f1, 20), tu = time_graph(s, u1, 20), ts = time_graph(s, step, 20), t1 = time_graph(s, step, 1, 7, 200);
        printf("RES shipped shipped fwd %.2f upd %.2f step20 %.2f replay %.2f werr %.1e berr %.1e lerr %.1e det %d\n", tf, tu, ts, t1, c.werr, c.berr, c.lerr, c.det);
    }
    // Each forward with the first update, each update with the first forward; then every pair's step.
    std::vector<std::string> lines;
    for (size_t fi = 0; fi < fwds.size(); fi++) {
        for (size_t ui = 0; ui < upds.size(); ui++) {
            bool ok = true; double worst = 0; bool det = true;
            for (Prob *pp : {&odd, &small, &big}) {
                Prob &p = *pp;
                u32 T = (p.n + fwds[fi].bn - 1) / fwds[fi].bn;
                Launch f = fwd_launch(p, fwds[fi]), u = upd_launch(p, upds[ui], T);
                Launch step = [f, u](cudaStream_t s) { f(s); u(s); };
                Check c = check(p, s, step);
                worst = std::max({worst, c.werr, c.berr, c.lerr * 100});
                det &= c.det;
                if (!(c.werr < 1e-3 && c.berr < 1e-3 && c.lerr < 1e-5 && c.det)) {
                    ok = false;
                    printf("FAIL %s %s m=%d n=%d k=%d werr %.1e berr %.1e lerr %.1e det %d\n", fwds[fi].name, upds[ui].name, p.m, p.n, p.k, c.werr, c.berr, c.lerr, c.det);
                }
            }
            Prob &p = big;
            u32 T = (p.n + fwds[fi].bn - 1) / fwds[fi].bn;
            Launch f = fwd_launch(p, fwds[fi]), u = upd_launch(p, upds[ui], T);
            Launch step = [f, u](cudaStream_t s) { f(s); u(s); };
            double tf = -1, tu = -1;
            if (ui == 0) tf = time_graph(s, f, 20);
            if (fi == 0) tu = time_graph(s, u, 20);
            double ts = time_graph(s, step, 20), t1 = time_graph(s, step, 1, 7, 200);
            printf("RES %s %s fwd %.2f upd %.2f step20 %.2f replay %.2f worst %.1e det %d ok %d\n", fwds[fi].name, upds[ui].name, tf, tu, ts, t1, worst, det, ok);
            fflush(stdout);
        }
    }
    // The shipped update with the staged tile (gc_linear_sgd_f32 tile 3) after the shipped forward,
    // from this build and from the shipped PTX (NVRTC 12.0, compute_75), JIT-compiled by the driver.
    {
        Prob &p = big;
        float *partials = p.sums();
        Launch step = [&](cudaStream_t s) {
            gc_linear_mse_f32<<<dim3(256, 1), 256, 0, s>>>(p.grad(), nullptr, partials, p.dx, p.dw, p.db, p.dt, 64, 1024, 1024, 0x3b, 1.0f);
            gc_linear_sgd_f32<<<1 + 32 + 256, 256, 0, s>>>(p.dw, p.db, p.grad(), p.dx, 64, 1024, 1024, p.lr, 3, 16, p.dloss, partials, 256);
        };
        Launch u3 = [&](cudaStream_t s) { gc_linear_sgd_f32<<<1 + 32 + 256, 256, 0, s>>>(p.dw, p.db, p.grad(), p.dx, 64, 1024, 1024, p.lr, 3, 16, p.dloss, partials, 256); };
        Check c = check(p, s, step);
        double tu = time_graph(s, u3, 20), ts = time_graph(s, step, 20), t1 = time_graph(s, step, 1, 7, 200);
        printf("RES shipped tile3 fwd -1 upd %.2f step20 %.2f replay %.2f werr %.1e berr %.1e lerr %.1e det %d\n", tu, ts, t1, c.werr, c.berr, c.lerr, c.det);
    }
    {
        FILE *f = fopen(getenv("GC_PTX") ? getenv("GC_PTX") : "kernels/ptx/linear.ptx", "rb");
        if (!f) { printf("no PTX\n"); return 0; }
        std::string ptx; char buf[65536]; size_t r;
        while ((r = fread(buf, 1, sizeof buf, f)) > 0) ptx.append(buf, r);
        fclose(f);
        CUmodule mod; CUfunction ff, fu;
        if (cuModuleLoadData(&mod, ptx.c_str()) != CUDA_SUCCESS) { printf("PTX load failed\n"); return 0; }
        if (cuModuleGetFunction(&ff, mod, "gc_linear_mse_f32") != CUDA_SUCCESS || cuModuleGetFunction(&fu, mod, "gc_linear_sgd_f32") != CUDA_SUCCESS) { printf("PTX kernels missing\n"); return 0; }
        Prob &p = big;
        float *grad = p.grad(), *sums = p.sums(), *pred = nullptr;
        for (u32 tile : {1u, 3u}) {
            Launch step = [&](cudaStream_t s) {
                u32 m = 64, n = 1024, k = 1024, cfg = 0x3b, ty = 16, parts = 256; float gs = 1.0f, lr = p.lr;
                void *a1[] = {&grad, &pred, &sums, &p.dx, &p.dw, &p.db, &p.dt, &m, &n, &k, &cfg, &gs};
                if (cuLaunchKernel(ff, 256, 1, 1, 256, 1, 1, 0, s, a1, nullptr) != CUDA_SUCCESS) printf("launch failed\n");
                void *a2[] = {&p.dw, &p.db, &grad, &p.dx, &m, &n, &k, &lr, &tile, &ty, &p.dloss, &sums, &parts};
                if (cuLaunchKernel(fu, 1 + 32 + 256, 1, 1, 256, 1, 1, 0, s, a2, nullptr) != CUDA_SUCCESS) printf("launch failed\n");
            };
            Check c = check(p, s, step);
            double ts = time_graph(s, step, 20), t1 = time_graph(s, step, 1, 7, 200);
            printf("RES ptx_jit tile%u fwd -1 upd -1 step20 %.2f replay %.2f werr %.1e berr %.1e lerr %.1e det %d\n", tile, ts, t1, c.werr, c.berr, c.lerr, c.det);
        }
    }
    return 0;
}
