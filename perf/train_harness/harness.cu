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
//   bash perf/train_harness/run.sh   (perf/TUNING.md has the results)
// Run 5 (`run.sh run5`; RES5 / CHK5 lines; `prof5` and `san5` for ncu and
// compute-sanitizer): a forward split over K across a thread-block cluster
// (fwd_cl, bitwise the shipped forward) and an update that loads W and x
// before griddepcontrol.wait (upd_pre), with programmatic launches.
// Run 6 (`run.sh run6`; RES6 / CHK6 lines; `prof6` for ncu, `san6` for
// compute-sanitizer): the whole step in one launch (step1), clusters owning
// 16 output columns each.
// Run 7 (`run.sh run7`; RES7 / CHK7 / CUT7 lines; `san7` for
// compute-sanitizer): the forward and the update on the tensor cores in
// 3xTF32 (fwd_tc, fwd_tma, upd_tc).
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
// The split-K forward (not shipped: perf/TUNING.md, "Training step, run 4").
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


// ---------------------------------------------------------------------------
// Run 5 (perf/TUNING.md): a forward split over K across a thread-block
// CLUSTER (sm_90), bitwise gc_linear_mse_f32 with config 0x3b, and an update
// that loads its W tile and x before griddepcontrol.wait.
//
// Why the cluster forward is bitwise the small-batch forward: with one warp
// per tile group (config 0x3b), lane l of a warp sums the float4 steps u = l,
// l + 32, l + 64, ... of each output in order (an fmaf chain from 0: k / 128
// steps of 4 products), and the halving exchange then adds the 32 lane sums
// as a butterfly over the lane bits 4, 3, 2, 1, 0 (in that order). Block s
// (cluster rank, 0 <= s < CS) of a cluster takes the lanes l = s + CS t
// (t < NC = 32 / CS): their chains in its threads (chain t in threads t PT ..
// (t + 1) PT - 1, 8 x 8 outputs a thread), then adds the NC chains over t's
// bits from the highest down (lane bits 4 .. log2 CS), and the cluster adds
// the CS block sums over s's bits from the highest down (lane bits log2 CS -
// 1 .. 0), reading the other blocks' sums from distributed shared memory.
// So every output is the same tree of the same products. The epilogue
// (bias, d = p - target, dY = d * 2 gs, the loss's per-block sums) is done
// by rank s for tile columns 8 s .. 8 s + 7, each 4 columns as one block of
// the small kernel (warp g, lane L: row 8 g + L / 4, column 4 * (..) + L % 4;
// fmaf(d, d, 0), gc_block_sum): partials[column / 4] bitwise the same.
// Needs m <= 64, n % (8 CS) == 0, k % 128 == 0, 16-byte aligned x, w.
// Grid: n / (8 CS) clusters of CS blocks (1-D), 256 threads, dynamic smem
// gc_cl_smem<CS>(k) bytes. ST = 2: the slice is loaded in two cp.async
// groups (the first half's products start before the second half lands).
__device__ __forceinline__ void gc_cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void gc_cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// p (this block's shared memory) in the block of cluster rank `rank`.
__device__ __forceinline__ float gc_ld_dsmem(const float *p, u32 rank) {
    const u32 a = (u32)__cvta_generic_to_shared(p);
    u32 ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}
// Stores v at p (an address of this block's shared memory) in the block of rank `rank`.
__device__ __forceinline__ void gc_st_dsmem(float *p, u32 rank, float v) {
    const u32 a = (u32)__cvta_generic_to_shared(p);
    u32 ra;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(ra), "f"(v) : "memory");
}
#include "../cp_async.cuh"
#include "../launch_ex.cuh"

// v[0] = the sum of v[0 .. N) as a butterfly from the highest index bit
// down: pairs (c, c + N / 2) first, then (c, c + N / 4), ... (N a power of 2).
template <int N>
__device__ __forceinline__ void gc_tree_sum(float (&v)[N]) {
#pragma unroll
    for (int l = 1; l < N; l *= 2)
#pragma unroll
        for (int c = 0; c < N / 2; ++c)
            if (c < N / (2 * l)) v[c] = __fadd_rn(v[c], v[c + N / (2 * l)]);
}

// Shared memory (floats) of the cluster forward: the slice's x and W rows
// (row stride k / CS + 4) or the chains' sums, then the block's sums.
template <int CS>
__host__ __device__ constexpr u32 gc_cl_floats(u32 k) {
    return ((64 + 8 * CS) * (k / CS + 4) > (32 / CS) * (64 * 9 * CS + 16) ? (64 + 8 * CS) * (k / CS + 4)
                                                                             : (32 / CS) * (64 * 9 * CS + 16)) +
           64 * (8 * CS + 4);
}

// PUSH: each block stores its sums into the shared memory of the rank that
// finishes those columns (st.shared::cluster; one cluster barrier, local
// reads) instead of the finishing ranks reading them (ld.shared::cluster).
// CUT (time decomposition only, wrong results): 1 stops after the products
// (stores a sum per thread to grad), 2 also skips the slice's loads.
template <int CS, int ST, int MINB, bool PUSH = false, int CUT = 0>
__global__ void __launch_bounds__(256, MINB)
    fwd_cl(float *grad, float *pred, float *partials, const float *x, const float *w, const float *b,
           const float *target, u32 m, u32 n, u32 k, float grad_scale) {
    constexpr int NC = 32 / CS, PT = 256 / NC, BN = 8 * CS, LD = BN + CS, LDP = BN + 4;
    constexpr u32 CSTR = 64 * LD + 16;  // floats between two chains' sums
    extern __shared__ __align__(16) float sm[];
    const u32 tid = threadIdx.x, s = gc_cluster_rank(), tile = blockIdx.x / CS;
    // PUSH stores into the other blocks' shared memory: only once they run.
    if (PUSH && CUT == 0) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    const u32 LDK = k / CS + 4, J = k / 128, j0 = tile * BN;
    float *xs = sm, *ws = sm + 64 * LDK, *accs = sm;
    float *ps = sm + ((64 + BN) * LDK > NC * CSTR ? (64 + BN) * LDK : NC * CSTR);
    GC_PDL_WAIT();

    // The epilogue's targets and bias (outputs (erow, ecol[p]), p = 0, 1).
    const u32 lane = tid & 31u, erow = 8 * (tid >> 5) + lane / 4;
    float tv[2], bv[2];
    u32 ecol[2];
#pragma unroll
    for (int p = 0; p < 2; ++p) {
        ecol[p] = j0 + 8 * s + 4 * p + lane % 4;
        tv[p] = erow < m ? __ldg(target + erow * n + ecol[p]) : 0.0f;
        bv[p] = b != nullptr ? __ldg(b + ecol[p]) : 0.0f;
    }

    // The slice: float4 step j of chain t of row `row` = x[row, 128 j + 4 (s + CS t) ..] at xs[row][4 (j NC + t)].
    auto issue = [&](u32 ja, u32 jb) {
        const u32 nj = jb - ja, units = (64 + BN) * nj * NC;
        for (u32 e = tid; e < units; e += 256) {
            const u32 t = e % NC, rest = e / NC, j = ja + rest % nj, row = rest / nj;
            const u32 off = 128 * j + 4 * (s + CS * t), so = 4 * (j * NC + t);
            if (row < 64) {
                const bool in = row < m;
                gc_cp_async16(xs + row * LDK + so, x + (in ? row : 0) * k + off, in);
            } else {
                gc_cp_async16(ws + (row - 64) * LDK + so, w + (j0 + row - 64) * k + off, true);
            }
        }
        gc_cp_commit();
    };
    const u32 JH = ST == 2 ? J / 2 : J;
    if (CUT < 2) {
        issue(0, JH);
        if (ST == 2) issue(JH, J);
    }

    const u32 t = tid / PT, ts = tid % PT, ty = ts / CS, tx = ts % CS;
    float acc[8][8];
#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[a][c] = 0.0f;
    auto products = [&](u32 ja, u32 jb) {
        for (u32 j = ja; j < jb; ++j) {
            const u32 o = 4 * (j * NC + t);
            float4 wv[8];
#pragma unroll
            for (int c = 0; c < 8; ++c) wv[c] = gc_lds4(ws + (tx + CS * c) * LDK + o);
#pragma unroll
            for (int a = 0; a < 8; ++a) {
                const float4 xa = gc_lds4(xs + (ty + 8 * a) * LDK + o);
#pragma unroll
                for (int c = 0; c < 8; ++c) {
                    acc[a][c] = fmaf(xa.x, wv[c].x, acc[a][c]);
                    acc[a][c] = fmaf(xa.y, wv[c].y, acc[a][c]);
                    acc[a][c] = fmaf(xa.z, wv[c].z, acc[a][c]);
                    acc[a][c] = fmaf(xa.w, wv[c].w, acc[a][c]);
                }
            }
        }
    };
    if (ST == 2) {
        gc_cp_wait<1>();
        __syncthreads();
        products(0, JH);
    }
    gc_cp_wait<0>();
    __syncthreads();
    products(ST == 2 ? JH : 0, J);
    GC_PDL_TRIGGER();
    if (CUT > 0) {
        float sum = 0.0f;
#pragma unroll
        for (int a = 0; a < 8; ++a)
#pragma unroll
            for (int c = 0; c < 8; ++c) sum += acc[a][c];
        grad[blockIdx.x * 256 + tid] = sum;
        return;
    }

    // The chains' sums, added over t's bits from the highest: the block's sums.
    __syncthreads();  // the slice is no longer read: accs overlays it
#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int c = 0; c < 8; ++c) accs[t * CSTR + (ty + 8 * a) * LD + tx + CS * c] = acc[a][c];
    __syncthreads();
    if (PUSH) gc_cluster_wait();  // every block of the cluster runs
#pragma unroll
    for (int u = 0; u < 2 * CS; ++u) {
        const u32 o = tid + 256 * u, row = o / BN, col = o % BN;
        float v[NC];
#pragma unroll
        for (int c = 0; c < NC; ++c) v[c] = accs[c * CSTR + row * LD + col];
        gc_tree_sum<NC>(v);
        if (PUSH)  // to rank col / 8, as its slice s's (row, col % 8)
            gc_st_dsmem(ps + (s * 64 + row) * 8 + col % 8, col / 8, v[0]);
        else
            ps[row * LDP + col] = v[0];
    }
    gc_cluster_arrive();
    gc_cluster_wait();  // every block's sums are in place

    float vals[2][CS];
#pragma unroll
    for (int p = 0; p < 2; ++p)
#pragma unroll
        for (int r = 0; r < CS; ++r)
            vals[p][r] = PUSH ? ps[(r * 64 + erow) * 8 + 4 * p + lane % 4]
                              : gc_ld_dsmem(ps + erow * LDP + (ecol[p] - j0), r);
    if (!PUSH) gc_cluster_arrive();  // this block is done reading the others' shared memory
    const float g2 = 2.0f * grad_scale;
#pragma unroll
    for (int p = 0; p < 2; ++p) {
        gc_tree_sum<CS>(vals[p]);
        float sq = 0.0f;
        if (erow < m) {
            float v = vals[p][0];
            if (b != nullptr) v = __fadd_rn(v, bv[p]);
            const float d = __fsub_rn(v, tv[p]);
            sq = fmaf(d, d, 0.0f);
            grad[erow * n + ecol[p]] = __fmul_rn(d, g2);
            if (pred != nullptr) pred[erow * n + ecol[p]] = v;
        }
        const float total = gc_block_sum(sq);
        if (tid == 0) partials[(j0 + 8 * s + 4 * p) / 4] = total;
    }
    if (!PUSH) gc_cluster_wait();  // no block leaves while another may still read its shared memory
}

// An empty kernel: the launch cost of a cluster grid.
__global__ void empty_k(float *) {}

// gc_linear_sgd_f32 with tile 3 (gc_wsgd_staged<64, 64, 4, 4, 256>), its weight
// tiles loading W and x before griddepcontrol.wait when PRE (dy after it);
// bitwise gc_linear_sgd_f32. Needs gc_wsgd_staged_ok.
template <bool PRE>
__global__ void __launch_bounds__(256, 2)
    upd_pre(float *w, float *b, const float *dy, const float *x, u32 m, u32 n, u32 k, float lr, u32 bias_ty,
            float *loss, const float *partials, u32 parts) {
    constexpr int BJ = 64, BR = 64, TJ = 4, TR = 4, NT = 256;
    __shared__ __align__(16) float smem[GC_SGD_SMEM];
    u32 blk = blockIdx.x;
    const u32 bias_blocks = b != nullptr ? (n + 31) / 32 : 0;
    if (blk == 0) {
        GC_PDL_WAIT();
        gc_loss_block(loss, partials, parts);
        return;
    }
    --blk;
    if (blk < bias_blocks) {
        GC_PDL_WAIT();
        const u32 c = blk * 32 + (threadIdx.x & 31u);
        bool owner;
        const float s = gc_column_sum(dy, m, n, c, threadIdx.x & 31u, threadIdx.x >> 5, 8, bias_ty,
                                      reinterpret_cast<float (*)[33]>(smem), owner);
        if (owner) b[c] = fmaf(-lr, s, b[c]);
        return;
    }
    blk -= bias_blocks;
    if (!PRE) GC_PDL_WAIT();
    constexpr int LA = BJ + 4, LB = BR + 4, TX = BR / TR, SJ = 4 * BJ / TJ, SR = 4 * BR / TR;
    constexpr int GA = GC_WSGD_ROWS * BJ / 4 / NT, GB = GC_WSGD_ROWS * BR / 4 / NT;
    float *As = smem, *Bs = smem + GC_WSGD_ROWS * LA;
    const u32 tid = threadIdx.x, tiles_r = (k + BR - 1) / BR;
    const u32 j0 = (blk / tiles_r) * BJ, r0 = (blk % tiles_r) * BR;
    const u32 ty = tid / TX, tx = tid % TX;
    auto jrow = [&](int a) { return 4 * ty + (a & 3) + (a >> 2) * SJ; };
    float4 wv[TJ][TR / 4];
#pragma unroll
    for (int a = 0; a < TJ; ++a)
#pragma unroll
        for (int h = 0; h < TR / 4; ++h) {
            const u32 j = j0 + jrow(a), r = r0 + 4 * tx + h * SR;
            wv[a][h] = j < n && r < k ? *reinterpret_cast<const float4 *>(w + j * k + r) : make_float4(0, 0, 0, 0);
        }
    float4 ra[GA], rb[GB];
#pragma unroll
    for (int q = 0; q < GB; ++q) {
        const u32 g = tid + NT * q, i = g / (BR / 4), r = r0 + 4 * (g % (BR / 4));
        rb[q] = i < m && r < k ? __ldg(reinterpret_cast<const float4 *>(x + i * k + r)) : make_float4(0, 0, 0, 0);
    }
    if (PRE) GC_PDL_WAIT();
#pragma unroll
    for (int q = 0; q < GA; ++q) {
        const u32 g = tid + NT * q, i = g / (BJ / 4), j = j0 + 4 * (g % (BJ / 4));
        ra[q] = i < m && j < n ? __ldg(reinterpret_cast<const float4 *>(dy + i * n + j)) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int q = 0; q < GB; ++q) {
        const u32 g = tid + NT * q;
        gc_sts4(Bs + (g / (BR / 4)) * LB + 4 * (g % (BR / 4)), rb[q]);
    }
#pragma unroll
    for (int q = 0; q < GA; ++q) {
        const u32 g = tid + NT * q;
        gc_sts4(As + (g / (BJ / 4)) * LA + 4 * (g % (BJ / 4)), ra[q]);
    }
    __syncthreads();
    float acc[TJ][TR];
#pragma unroll
    for (int a = 0; a < TJ; ++a)
#pragma unroll
        for (int c = 0; c < TR; ++c) acc[a][c] = 0.0f;
#pragma unroll 4
    for (u32 i = 0; i < m; ++i) {
        float av[TJ], bv[TR];
#pragma unroll
        for (int h = 0; h < TJ / 4; ++h) {
            const float4 v = gc_lds4(As + i * LA + 4 * ty + h * SJ);
            av[4 * h] = v.x;
            av[4 * h + 1] = v.y;
            av[4 * h + 2] = v.z;
            av[4 * h + 3] = v.w;
        }
#pragma unroll
        for (int h = 0; h < TR / 4; ++h) {
            const float4 v = gc_lds4(Bs + i * LB + 4 * tx + h * SR);
            bv[4 * h] = v.x;
            bv[4 * h + 1] = v.y;
            bv[4 * h + 2] = v.z;
            bv[4 * h + 3] = v.w;
        }
#pragma unroll
        for (int a = 0; a < TJ; ++a)
#pragma unroll
            for (int c = 0; c < TR; ++c) acc[a][c] = fmaf(av[a], bv[c], acc[a][c]);
    }
    GC_PDL_TRIGGER();
#pragma unroll
    for (int a = 0; a < TJ; ++a)
#pragma unroll
        for (int h = 0; h < TR / 4; ++h) {
            const u32 j = j0 + jrow(a), r = r0 + 4 * tx + h * SR;
            if (j >= n || r >= k) continue;
            const float4 o = wv[a][h];
            *reinterpret_cast<float4 *>(w + j * k + r) =
                make_float4(fmaf(-lr, acc[a][4 * h], o.x), fmaf(-lr, acc[a][4 * h + 1], o.y),
                            fmaf(-lr, acc[a][4 * h + 2], o.z), fmaf(-lr, acc[a][4 * h + 3], o.w));
        }
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
    void reset() { CK(cudaMemcpy(dw, dw0, w0.size() * 4, cudaMemcpyDeviceToDevice)); CK(cudaMemcpy(db, db0, n * 4, cudaMemcpyDeviceToDevice)); CK(cudaMemset(dloss, 0xff, 4)); CK(cudaDeviceSynchronize()); }
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

// ---------------------------------------------------------------------------
// Run 5's host side: `train_harness run5`.
using FwdCl = void (*)(float *, float *, float *, const float *, const float *, const float *, const float *, u32, u32,
                       u32, float);
// lc: the cluster size launched (1: no cluster; the CUT kernels only);
// full: a complete forward (checked).
struct ClVar { const char *name; FwdCl k; u32 cs; u32 (*floats)(u32); bool ok; u32 lc; bool full; };


static u32 bias_ty_of(u32 m) { u32 t = 1; while (t < (m + 3) / 4) t *= 2; return t < 32 ? t : 32; }

// One step's W, b and loss from the initial state.
struct StepOut { std::vector<float> w, b; float loss; };
static StepOut step_out(Prob &p, cudaStream_t s, const Launch &step) {
    StepOut o{std::vector<float>(p.w0.size()), std::vector<float>(p.n), 0.0f};
    p.reset();
    step(s);
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    CK(cudaMemcpy(o.w.data(), p.dw, o.w.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o.b.data(), p.db, o.b.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&o.loss, p.dloss, 4, cudaMemcpyDeviceToHost));
    return o;
}
static bool same(const StepOut &a, const StepOut &b) {
    return !memcmp(a.w.data(), b.w.data(), a.w.size() * 4) && !memcmp(a.b.data(), b.b.data(), a.b.size() * 4) &&
           !memcmp(&a.loss, &b.loss, 4);
}

static int run5(cudaStream_t s, bool prof, bool san) {
    std::vector<ClVar> vars = {
        {"C8_st1", fwd_cl<8, 1, 1>, 8, gc_cl_floats<8>, true, 8, true},
        {"C8_st2_b2", fwd_cl<8, 2, 2>, 8, gc_cl_floats<8>, true, 8, true},
        {"C8_st2_b2_push", fwd_cl<8, 2, 2, true>, 8, gc_cl_floats<8>, true, 8, true},
        {"C4_st2_b2", fwd_cl<4, 2, 2>, 4, gc_cl_floats<4>, true, 4, true},
        {"C4_st2_b2_push", fwd_cl<4, 2, 2, true>, 4, gc_cl_floats<4>, true, 4, true},
        {"C2_st2", fwd_cl<2, 2, 1>, 2, gc_cl_floats<2>, true, 2, true},
        {"C2_st2_push", fwd_cl<2, 2, 1, true>, 2, gc_cl_floats<2>, true, 2, true},
        {"C8b2_cut1", fwd_cl<8, 2, 2, false, 1>, 8, gc_cl_floats<8>, true, 8, false},
        {"C8b2_cut1_nocl", fwd_cl<8, 2, 2, false, 1>, 8, gc_cl_floats<8>, true, 1, false},
        {"C8b2_cut2", fwd_cl<8, 2, 2, false, 2>, 8, gc_cl_floats<8>, true, 8, false},
        {"C8b2_cut2_nocl", fwd_cl<8, 2, 2, false, 2>, 8, gc_cl_floats<8>, true, 1, false},
    };
    Prob big(64, 1024, 1024), mid(37, 256, 384), small(8, 512, 256);
    for (auto &v : vars) {
        cudaError_t e = cudaFuncSetAttribute(v.k, cudaFuncAttributeMaxDynamicSharedMemorySize, v.floats(1024) * 4);
        if (e == cudaSuccess && v.cs > 8) e = cudaFuncSetAttribute(v.k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute at;
        at.id = cudaLaunchAttributeClusterDimension;
        at.val.clusterDim.x = v.cs; at.val.clusterDim.y = 1; at.val.clusterDim.z = 1;
        cfg.gridDim = dim3(1024 / 8); cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = v.floats(1024) * 4;
        cfg.attrs = &at; cfg.numAttrs = 1;
        int clusters = -1;
        if (e == cudaSuccess) e = cudaOccupancyMaxActiveClusters(&clusters, v.k, &cfg);
        printf("VAR %s cs %u smem %u B max_active_clusters %d %s\n", v.name, v.cs, v.floats(1024) * 4, clusters,
               e == cudaSuccess ? "" : cudaGetErrorString(e));
        if (e != cudaSuccess) { v.ok = false; cudaGetLastError(); }
    }
    auto fwd_ship = [](Prob &p, bool pdl) -> Launch {
        return [&p, pdl](cudaStream_t s) {
            CK(launch_ex(gc_linear_mse_f32, p.n / 4, 256, 0, s, 1, pdl, p.grad(), (float *)nullptr, p.sums(),
                         (const float *)p.dx, (const float *)p.dw, (const float *)p.db, (const float *)p.dt,
                         (u32)p.m, (u32)p.n, (u32)p.k, 0x3bu, 1.0f));
        };
    };
    auto fwd_cl_l = [](Prob &p, const ClVar &v, bool pdl) -> Launch {
        return [&p, v, pdl](cudaStream_t s) {
            CK(launch_ex(v.k, p.n / 8, 256, v.floats(p.k) * 4, s, v.lc, pdl, p.grad(), (float *)nullptr, p.sums(),
                         (const float *)p.dx, (const float *)p.dw, (const float *)p.db, (const float *)p.dt,
                         (u32)p.m, (u32)p.n, (u32)p.k, 1.0f));
        };
    };
    // update: 0 shipped gc_linear_sgd_f32 tile 3, 1 upd_pre<false>, 2 upd_pre<true>
    auto upd_l = [](Prob &p, int kind, bool pdl) -> Launch {
        return [&p, kind, pdl](cudaStream_t s) {
            const u32 blocks = 1 + p.n / 32 + (p.n / 64) * (p.k / 64), ty = bias_ty_of(p.m), parts = p.n / 4;
            if (kind == 0)
                CK(launch_ex(gc_linear_sgd_f32, blocks, 256, 0, s, 1, pdl, p.dw, p.db, (const float *)p.grad(),
                             (const float *)p.dx, (u32)p.m, (u32)p.n, (u32)p.k, p.lr, 3u, ty, p.dloss,
                             (const float *)p.sums(), parts));
            else
                CK(launch_ex(kind == 1 ? upd_pre<false> : upd_pre<true>, blocks, 256, 0, s, 1, pdl, p.dw, p.db,
                             (const float *)p.grad(), (const float *)p.dx, (u32)p.m, (u32)p.n, (u32)p.k, p.lr, ty,
                             p.dloss, (const float *)p.sums(), parts));
        };
    };
    auto pair = [](Launch f, Launch u) -> Launch { return [f, u](cudaStream_t s) { f(s); u(s); }; };
    const char *unames[] = {"ship", "ship_copy", "pre"};

    // Checks: the forward bitwise the shipped one (dY and the loss's block
    // sums), the step bitwise the shipped step, float64 and replay checks.
    if (san) {  // under compute-sanitizer: one step of each forward with the early-load update, PDL on
        for (auto &v : vars)
            if (v.ok && v.full) {
                Check c = check(mid, s, pair(fwd_cl_l(mid, v, true), upd_l(mid, 2, true)));
                printf("SAN5 %s werr %.1e det %d\n", v.name, c.werr, c.det);
            }
        return 0;
    }
    for (Prob *pp : {&big, &mid, &small}) {
        if (prof) break;
        Prob &p = *pp;
        const size_t mn = (size_t)p.m * p.n, parts = p.n / 4;
        std::vector<float> g0(mn), s0(parts), g1(mn), s1(parts);
        fwd_ship(p, false)(s);
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(g0.data(), p.grad(), mn * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(s0.data(), p.sums(), parts * 4, cudaMemcpyDeviceToHost));
        StepOut ref = step_out(p, s, pair(fwd_ship(p, false), upd_l(p, 0, false)));
        for (int u = 1; u <= 2; ++u) {
            Launch st = pair(fwd_ship(p, true), upd_l(p, u, true));
            Check c = check(p, s, st);
            printf("CHK5 m=%d n=%d k=%d fwd ship upd %s step_bitwise_ship %d werr %.1e berr %.1e lerr %.1e det %d\n",
                   p.m, p.n, p.k, unames[u], same(step_out(p, s, st), ref), c.werr, c.berr, c.lerr, c.det);
        }
        for (auto &v : vars) {
            if (!v.ok || !v.full) continue;
            p.reset();  // the shipped forward above ran on the initial W and b
            CK(cudaMemsetAsync(p.grad(), 0xff, mn * 4, s));
            CK(cudaMemsetAsync(p.sums(), 0xff, parts * 4, s));
            fwd_cl_l(p, v, false)(s);
            CK(cudaStreamSynchronize(s));
            CK(cudaGetLastError());
            CK(cudaMemcpy(g1.data(), p.grad(), mn * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(s1.data(), p.sums(), parts * 4, cudaMemcpyDeviceToHost));
            size_t gbad = 0, sbad = 0;
            for (size_t i = 0; i < mn; i++) gbad += memcmp(&g0[i], &g1[i], 4) != 0;
            for (size_t i = 0; i < parts; i++) sbad += memcmp(&s0[i], &s1[i], 4) != 0;
            for (int u : {0, 2}) {
                Launch st = pair(fwd_cl_l(p, v, u == 2), upd_l(p, u, u == 2));
                Check c = check(p, s, st);
                printf("CHK5 m=%d n=%d k=%d fwd %s upd %s dY_mismatch %zu sums_mismatch %zu step_bitwise_ship %d werr %.1e berr %.1e lerr %.1e det %d\n",
                       p.m, p.n, p.k, v.name, unames[u], gbad, sbad, same(step_out(p, s, st), ref), c.werr, c.berr,
                       c.lerr, c.det);
            }
            fflush(stdout);
        }
    }

    // Times on the notes' shape (us; fwd = the forward alone in a graph of 20,
    // step20 = a graph of 20 steps, replay = a one-step graph back to back).
    Prob &p = big;
    printf("%-12s %-9s %3s %7s %7s %7s\n", "forward", "update", "pdl", "fwd", "step20", "replay");
    auto row = [&](const char *fname, Launch f, Launch fp, int u, bool pdl, bool time_fwd) {
        double tf = time_fwd ? time_graph(s, f, 20) : -1;
        Launch st = pair(pdl ? fp : f, upd_l(p, u, pdl));
        double ts = time_graph(s, st, 20), t1 = time_graph(s, st, 1, 7, 200);
        printf("RES5 %-12s %-9s %3d %7.2f %7.2f %7.2f\n", fname, unames[u], (int)pdl, tf, ts, t1);
        fflush(stdout);
    };
    if (prof) {  // for ncu: each forward launched twice, outside graphs
        for (int r = 0; r < 2; ++r) {
            fwd_ship(p, false)(s);
            for (auto &v : vars)
                if (v.ok) fwd_cl_l(p, v, false)(s);
        }
        CK(cudaStreamSynchronize(s));
        return 0;
    }
    {
        const size_t sm91 = gc_cl_floats<8>(1024) * 4;
        CK(cudaFuncSetAttribute(empty_k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm91));
        for (u32 lc : {1u, 8u})
            for (size_t sm : {(size_t)0, sm91}) {
                Launch e = [lc, sm, &p](cudaStream_t s) { CK(launch_ex(empty_k, 128, 256, sm, s, lc, false, p.grad())); };
                printf("RES5 empty_cluster%u_smem%zu fwd %.2f\n", lc, sm, time_graph(s, e, 20));
            }
    }
    {
        Launch u0 = upd_l(p, 0, false), u2 = upd_l(p, 2, true);
        printf("RES5 update-alone ship %.2f pre(pdl) %.2f\n", time_graph(s, u0, 20), time_graph(s, u2, 20));
    }
    for (int rep = 0; rep < 5; ++rep) {  // the shipped pair with and without the early loads, alternated
        row("ship", fwd_ship(p, false), fwd_ship(p, true), 0, false, rep == 0);
        row("ship", fwd_ship(p, false), fwd_ship(p, true), 0, true, false);
        row("ship", fwd_ship(p, false), fwd_ship(p, true), 2, true, false);
    }
    {
        for (auto &v : vars) {
            if (!v.ok) continue;
            if (!v.full) {
                printf("RES5 %-14s fwd %.2f\n", v.name, time_graph(s, fwd_cl_l(p, v, false), 20));
                continue;
            }
            row(v.name, fwd_cl_l(p, v, false), fwd_cl_l(p, v, true), 0, false, true);
            row(v.name, fwd_cl_l(p, v, false), fwd_cl_l(p, v, true), 0, true, false);
            row(v.name, fwd_cl_l(p, v, false), fwd_cl_l(p, v, true), 2, true, false);
        }
    }
    return 0;
}

// ===========================================================================
// step1<WARPS>(w, b, x, target, loss, ws, m, n, k, grad_scale, lr): run 6, NOT SHIPPED
// (perf/TUNING.md, "The step in one launch"; it measured no faster than
// the shipped two-launch step).
//
// A whole training step of a linear layer with the summed squared error and
// SGD in ONE launch (what gc_linear_mse_f32 then gc_linear_sgd_f32 compute
// in two), for m <= 64 rows, n % 16 == 0, k % (64 S) == 0 and k / S <= 512
// (S the cluster's size, 1 or 2), x, w and target 16-byte aligned; compute
// capability 9.0 (thread-block clusters; it traps on older GPUs):
//   p = x . W^T + b (W n x k), d = p - target, loss[0] = sum d^2,
//   dY = d * (2 grad_scale), W = fmaf(-lr, dY^T . x, W),
//   b = fmaf(-lr, colsum(dY), b)  (b may be null: no bias).
// The step is separable over the output columns: W's row j and b[j] change
// with column j of dY alone, which needs W's row j alone. So cluster c
// owns columns j0 = 16 c .. j0 + 15. Block s (its rank) holds x[:, s KB ..
// (s + 1) KB) and the same half of W's rows j0 .. j0 + 15 in shared memory
// (KB = k / S), sums the forward's products over its half, the cluster adds
// the halves through distributed shared memory, every block of the cluster
// finishes p, d and dY for the 64 x 16 tile (the same bits in each), and
// block s updates W[j0 .., s KB ..) from the x and W it already holds. W is
// read once and written once, x read once per cluster; only the loss crosses
// clusters.
//
// Sums, each in a fixed order (replays are bitwise equal; the order is not
// the two-launch step's, so W and b agree with it to rounding):
//   products: thread slice q (0..15) of a block sums the float4 steps u = q,
//     q + 16, ... of its half (increasing k, fmaf); slice q's sum and slice
//     q + 8's are added, then the 8 results as ((0+1)+(2+3))+((4+5)+(6+7));
//     the cluster adds its S block sums; p = sum + b[j];
//   dW[j, r] = fmaf chain over i = 0 .. m - 1; db[j]: the even rows' and
//     the odd rows' fadd chains, added;
//   loss: each warp's d^2 sums by a butterfly, the 8 warps in order; the
//     last cluster to finish adds the clusters' sums (lane l of a warp
//     takes l, l + 32, ... in 4 chains, then a butterfly).
//
// Launch: 1-D grid of S n / 16 blocks as clusters of (S, 1, 1), block 32
// WARPS + 32 (WARPS = 8 or 16 warps of arithmetic and one that finishes the
// loss and the bias),
// dynamic shared memory 4 * gc_step_floats(k / S) bytes (203 KiB at
// KB = 512: the kernel's max dynamic shared memory attribute must allow it).
// ws: a u32 counter at byte 0 (zero before the first launch; left zero),
// then one float per cluster from byte 16. W, b, loss and ws must not
// overlap x or target.
// ===========================================================================

#define GC_STEP_AHEAD 3  // chunks in flight (2, 5 and 8 measured no better)
#define GC_STEP_COLS 16
#define GC_STEP_ROWS 64
#define GC_STEP_RED 17  // padded row stride of the slices' sums

// Shared memory (floats) of gc_linear_step_f32 for a K half of kb: x's and
// W's rows (stride kb + 4), the 8 slice sums, the block's sums, dY, the
// warps' loss sums.
__host__ __device__ constexpr u32 gc_step_floats(u32 kb) {
    return (GC_STEP_ROWS + GC_STEP_COLS) * (kb + 4) + 8 * GC_STEP_ROWS * GC_STEP_RED +
           2 * GC_STEP_ROWS * GC_STEP_COLS + 16;
}


// WARPS arithmetic warps (8 or 16) and one more; the slices, their order and
// every sum are the same for both (the same bits): with 8, a warp holds
// slices v and v + 8 (16 lanes each, 8 x 8 outputs a thread); with 16, warp
// v is slice v (8 x 4 outputs a thread, columns ct + 4 c).
template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32 + 32, 1)
    step1(float *w, float *b, const float *x, const float *target, float *loss, void *ws, u32 m, u32 n, u32 k,
          float grad_scale, float lr) {
    constexpr u32 T = WARPS * 32;        // arithmetic threads
    constexpr u32 TPS = T / 16;          // threads per slice
    constexpr int CC = 1024 / (TPS * 8); // columns per thread (8 rows each)
    constexpr u32 CT = TPS / 8;          // column groups per slice
    constexpr int FPT = 128 / (T / 4);   // W float4 columns per thread in the update
    GC_PDL_WAIT();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) float sm[];
    const u32 cs = gc_cluster_size(), s = gc_cluster_rank(), cid = gc_cluster_id();
    // The same on every block of the grid: no block leaves a cluster alone.
    if (m == 0 || m > GC_STEP_ROWS || n % GC_STEP_COLS || cs > 2 || k % (64 * cs) || k / cs > 512) return;
    const u32 kb = k / cs, ld = kb + 4, chunks = kb / 64;
    float *xs = sm;                                          // 64 x ld: x[:, k0 ..)
    float *wsm = xs + GC_STEP_ROWS * ld;                     // 16 x ld: W[j0 .., k0 ..)
    float *red = wsm + GC_STEP_COLS * ld;                    // 8 x 64 x 17: slice sums
    float *part = red + 8 * GC_STEP_ROWS * GC_STEP_RED;      // 64 x 16: the block's sums
    float *dys = part + GC_STEP_ROWS * GC_STEP_COLS;         // 64 x 16: dY
    float *lsums = dys + GC_STEP_ROWS * GC_STEP_COLS;        // 8: the warps' d^2 sums
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const u32 j0 = cid * GC_STEP_COLS, k0 = s * kb;
    const bool arith = warp < WARPS, fin = tid < 256;  // fin: finishes 4 outputs

    // Chunk t of 64 k's (16 float4 per row of x and W) as one copy group;
    // GC_STEP_AHEAD chunks in flight (all at once, the first chunk would
    // land last).
    auto issue = [&](u32 t) {
        if (!arith || t >= chunks) return;
#pragma unroll
        for (u32 e = 0; e < 1024 / T; ++e) {
            const u32 f = tid + T * e, row = f >> 4, u = 16 * t + (f & 15);
            const u32 src_row = row < m ? row : m - 1;
            gc_cp_async16(xs + row * ld + 4 * u, x + (u64)src_row * k + k0 + 4 * u, row < m);
        }
        if (tid < 256) {
            const u32 row = tid >> 4, u = 16 * t + (tid & 15);
            gc_cp_async16(wsm + row * ld + 4 * u, w + (u64)(j0 + row) * k + k0 + 4 * u, true);
        }
    };
    for (u32 t = 0; t < GC_STEP_AHEAD; ++t) {
        issue(t);
        gc_cp_commit();  // an empty group past the last chunk keeps the count simple
    }
    // The epilogue's inputs: thread t < 256 finishes outputs (t / 4, 4 (t %
    // 4) .. + 3) of the tile.
    const u32 orow = (tid >> 2) & 63, ocol = 4 * (tid & 3);
    float4 tv = make_float4(0.0f, 0.0f, 0.0f, 0.0f), bv = tv;
    if (fin && orow < m) tv = __ldg(reinterpret_cast<const float4 *>(target + (u64)orow * n + j0 + ocol));
    // b by plain loads: the last rank writes it at the end.
    if (fin && b != nullptr) bv = *reinterpret_cast<const float4 *>(b + j0 + ocol);

    // Products: slice q's TPS threads each own 8 x CC outputs (rows rt + 8 r,
    // columns ct + CT c: conflict-free shared loads).
    const u32 h = WARPS == 8 ? (lane & 15) : lane, q = WARPS == 8 ? warp + 8 * (lane >> 4) : warp;
    const u32 rt = h & 7, ct = h >> 3;
    float acc[8][CC];
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int c = 0; c < CC; ++c) acc[r][c] = 0.0f;
    for (u32 t = 0; t < chunks; ++t) {
        // Groups committed: t + GC_STEP_AHEAD; chunk t is group t.
        gc_cp_wait_upto(GC_STEP_AHEAD - 1);
        __syncthreads();
        issue(t + GC_STEP_AHEAD);
        gc_cp_commit();
        if (arith) {
            const u32 u = q + 16 * t;
            float4 xv[8];
#pragma unroll
            for (int r = 0; r < 8; ++r) xv[r] = gc_lds4(xs + (rt + 8 * r) * ld + 4 * u);
#pragma unroll
            for (int c = 0; c < CC; ++c) {
                const float4 wv = gc_lds4(wsm + (ct + CT * c) * ld + 4 * u);
#pragma unroll
                for (int r = 0; r < 8; ++r) {
                    acc[r][c] = fmaf(xv[r].x, wv.x, acc[r][c]);
                    acc[r][c] = fmaf(xv[r].y, wv.y, acc[r][c]);
                    acc[r][c] = fmaf(xv[r].z, wv.z, acc[r][c]);
                    acc[r][c] = fmaf(xv[r].w, wv.w, acc[r][c]);
                }
            }
        }
    }
    GC_PDL_TRIGGER();
    // Slices q and q + 8 (q's first), then the 8 sums through shared memory.
    auto slot = [&](u32 qq, int r, int c) -> float & {
        return red[(qq * GC_STEP_ROWS + rt + 8 * r) * GC_STEP_RED + ct + CT * c];
    };
    if constexpr (WARPS == 8) {
        if (arith) {
#pragma unroll
            for (int r = 0; r < 8; ++r)
#pragma unroll
                for (int c = 0; c < CC; ++c)
                    acc[r][c] = __fadd_rn(acc[r][c], __shfl_xor_sync(0xffffffffu, acc[r][c], 16));
            if (q < 8) {
#pragma unroll
                for (int r = 0; r < 8; ++r)
#pragma unroll
                    for (int c = 0; c < CC; ++c) slot(q, r, c) = acc[r][c];
            }
        }
    } else {
        if (arith && q >= 8) {
#pragma unroll
            for (int r = 0; r < 8; ++r)
#pragma unroll
                for (int c = 0; c < CC; ++c) slot(q - 8, r, c) = acc[r][c];
        }
        __syncthreads();
        if (arith && q < 8) {
#pragma unroll
            for (int r = 0; r < 8; ++r)
#pragma unroll
                for (int c = 0; c < CC; ++c) slot(q, r, c) = __fadd_rn(acc[r][c], slot(q, r, c));
        }
    }
    __syncthreads();
    float pv[4];
    if (fin) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float *p = red + orow * GC_STEP_RED + ocol + e;
            float v[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) v[i] = p[i * GC_STEP_ROWS * GC_STEP_RED];
            pv[e] = __fadd_rn(__fadd_rn(__fadd_rn(v[0], v[1]), __fadd_rn(v[2], v[3])),
                              __fadd_rn(__fadd_rn(v[4], v[5]), __fadd_rn(v[6], v[7])));
        }
        gc_sts4(part + 4 * tid, make_float4(pv[0], pv[1], pv[2], pv[3]));
    }
    // The cluster's halves: every block adds the other's sums (fadd
    // commutes: the same bits in both).
    if (cs > 1) gc_cluster_sync();
    if (fin) {
        if (cs > 1) {
            const float4 o = gc_ld_cluster4(part + 4 * tid, s ^ 1u);
            pv[0] = __fadd_rn(pv[0], o.x);
            pv[1] = __fadd_rn(pv[1], o.y);
            pv[2] = __fadd_rn(pv[2], o.z);
            pv[3] = __fadd_rn(pv[3], o.w);
        }
        const float g2 = 2.0f * grad_scale, tt[4] = {tv.x, tv.y, tv.z, tv.w}, bb[4] = {bv.x, bv.y, bv.z, bv.w};
        float gv[4], ls = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            gv[e] = 0.0f;
            if (orow < m) {
                const float p = b != nullptr ? __fadd_rn(pv[e], bb[e]) : pv[e];
                const float d = __fsub_rn(p, tt[e]);
                ls = fmaf(d, d, ls);
                gv[e] = __fmul_rn(d, g2);
            }
        }
        gc_sts4(dys + 4 * tid, make_float4(gv[0], gv[1], gv[2], gv[3]));
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ls = __fadd_rn(ls, __shfl_xor_sync(0xffffffffu, ls, o));
        if (lane == 0) lsums[warp] = ls;
    }
    // The other block may read `part` until it arrives here (the matching
    // wait is at the end). Relaxed: this block's reads of the other's sums
    // have returned (their values are used above).
    if (cs > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    __syncthreads();

    if (arith) {
        // W[j0 + 4 jg + a, k0 + 4 f + h] -= lr * sum_i dY[i, j] x[i, r]:
        // thread (jg, f) owns 4 rows of W times the float4 columns f, f + T /
        // 4, ... of the block's half (a warp's stores: 4 rows x 128
        // contiguous bytes).
        const u32 jg = lane & 3, nf = kb / 4, f0 = warp * 8 + (lane >> 2);
        float a[4][4 * FPT];
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4 * FPT; ++e) a[j][e] = 0.0f;
        for (u32 i = 0; i < m; ++i) {
            const float4 d4 = gc_lds4(dys + i * GC_STEP_COLS + 4 * jg);
            const float dv[4] = {d4.x, d4.y, d4.z, d4.w};
#pragma unroll
            for (int e = 0; e < FPT; ++e) {
                const u32 f = f0 + (T / 4) * e;
                const float4 x4 = gc_lds4(xs + i * ld + 4 * (f < nf ? f : 0));
                const float xv[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
                for (int j = 0; j < 4; ++j)
#pragma unroll
                    for (int hh = 0; hh < 4; ++hh) a[j][4 * e + hh] = fmaf(dv[j], xv[hh], a[j][4 * e + hh]);
            }
        }
#pragma unroll
        for (int e = 0; e < FPT; ++e) {
            const u32 f = f0 + (T / 4) * e;
            if (f >= nf) continue;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const u32 row = 4 * jg + j;
                const float4 o = gc_lds4(wsm + row * ld + 4 * f);
                *reinterpret_cast<float4 *>(w + (u64)(j0 + row) * k + k0 + 4 * f) =
                    make_float4(fmaf(-lr, a[j][4 * e], o.x), fmaf(-lr, a[j][4 * e + 1], o.y),
                                fmaf(-lr, a[j][4 * e + 2], o.z), fmaf(-lr, a[j][4 * e + 3], o.w));
            }
        }
    } else {
        // The last warp: the loss (rank 0) and the bias (the last rank),
        // while the others update W.
        if (s == 0) {
            u32 *counter = reinterpret_cast<u32 *>(ws);
            float *partials = reinterpret_cast<float *>(reinterpret_cast<char *>(ws) + 16);
            const u32 clusters = gridDim.x / cs;
            u32 last = 0;
            if (lane == 0) {
                float sum = lsums[0];
                for (u32 i = 1; i < 8; ++i) sum = __fadd_rn(sum, lsums[i]);
                partials[cid] = sum;
                __threadfence();  // the partial is visible before the counter moves
                last = atomicAdd(counter, 1u) == clusters - 1;
            }
            if (__shfl_sync(0xffffffffu, last, 0)) {
                // The last cluster adds the partials: lane l takes l, l + 32,
                // ... (loads in flight together), then a butterfly.
                __threadfence();
                const volatile float *vp = partials;  // bypass L1: other clusters wrote these
                float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                u32 i = lane;
                for (; i + 96 < clusters; i += 128) {
                    const float a = vp[i], b1 = vp[i + 32], c = vp[i + 64], d = vp[i + 96];
                    v[0] = __fadd_rn(v[0], a);
                    v[1] = __fadd_rn(v[1], b1);
                    v[2] = __fadd_rn(v[2], c);
                    v[3] = __fadd_rn(v[3], d);
                }
                if (i < clusters) v[0] = __fadd_rn(v[0], vp[i]);
                if (i + 32 < clusters) v[1] = __fadd_rn(v[1], vp[i + 32]);
                if (i + 64 < clusters) v[2] = __fadd_rn(v[2], vp[i + 64]);
                float total = __fadd_rn(__fadd_rn(v[0], v[1]), __fadd_rn(v[2], v[3]));
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) total = __fadd_rn(total, __shfl_xor_sync(0xffffffffu, total, o));
                if (lane == 0) {
                    loss[0] = total;
                    *counter = 0;
                }
            }
        }
        if (s == cs - 1 && b != nullptr) {
            // Column lane % 16, rows of parity lane / 16, then the two halves.
            const u32 col = lane & 15;
            float sum = 0.0f;
            for (u32 i = lane >> 4; i < m; i += 2) sum = __fadd_rn(sum, dys[i * GC_STEP_COLS + col]);
            const float other = __shfl_xor_sync(0xffffffffu, sum, 16);
            if (lane < GC_STEP_COLS) b[j0 + col] = fmaf(-lr, __fadd_rn(sum, other), b[j0 + col]);
        }
    }
    // No block leaves while the other may still read its sums.
    if (cs > 1) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
    (void)w, (void)b, (void)x, (void)target, (void)loss, (void)ws, (void)m, (void)n, (void)k, (void)grad_scale,
        (void)lr;
#ifdef __CUDA_ARCH__
    asm volatile("trap;");
#endif
#endif
}


// ---------------------------------------------------------------------------
// Run 6 (`train_harness run6`; RES6 / CHK6 lines; `san6` for
// compute-sanitizer): the whole step in one launch (step1,
// clusters of cs blocks owning 16 output columns each), checked against
// float64 and the shipped two-launch step, and timed beside it.
// step1 with `warps` (8 or 16) arithmetic warps.
static void step1_launch(Prob &p, u32 cs, int warps, bool pdl, cudaStream_t s) {
    const u32 grid = cs * p.n / 16, block = warps * 32 + 32, smem = gc_step_floats(p.k / cs) * 4;
    if (warps == 16)
        CK(launch_ex(step1<16>, grid, block, smem, s, cs, pdl, p.dw, p.db, (const float *)p.dx, (const float *)p.dt,
                     p.dloss, (void *)p.ws, (u32)p.m, (u32)p.n, (u32)p.k, 1.0f, p.lr));
    else
        CK(launch_ex(step1<8>, grid, block, smem, s, cs, pdl, p.dw, p.db, (const float *)p.dx, (const float *)p.dt,
                     p.dloss, (void *)p.ws, (u32)p.m, (u32)p.n, (u32)p.k, 1.0f, p.lr));
}
static Launch ship_step(Prob &p, bool pdl) {
    return [&p, pdl](cudaStream_t s) {
        const u32 parts = p.n / 4, ty = bias_ty_of(p.m), blocks = 1 + p.n / 32 + (p.n / 64) * (p.k / 64);
        CK(launch_ex(gc_linear_mse_f32, p.n / 4, 256, 0, s, 1, pdl, p.grad(), (float *)nullptr, p.sums(),
                     (const float *)p.dx, (const float *)p.dw, (const float *)p.db, (const float *)p.dt, (u32)p.m,
                     (u32)p.n, (u32)p.k, 0x3bu, 1.0f));
        CK(launch_ex(gc_linear_sgd_f32, blocks, 256, 0, s, 1, pdl, p.dw, p.db, (const float *)p.grad(),
                     (const float *)p.dx, (u32)p.m, (u32)p.n, (u32)p.k, p.lr, 3u, ty, p.dloss,
                     (const float *)p.sums(), parts));
    };
}
static double maxrel(const std::vector<float> &a, const std::vector<float> &b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); i++) {
        const double d = fabs((double)a[i] - b[i]) / std::max(fabs((double)b[i]), 1e-3);
        worst = std::max(worst, std::isfinite(d) ? d : 1e30);
    }
    return worst;
}

static int run6(cudaStream_t s, bool san, bool prof = false) {
    for (int warps : {8, 16}) {
        void (*kern)(float *, float *, const float *, const float *, float *, void *, u32, u32, u32, float, float) =
            step1<8>;
        if (warps == 16) kern = step1<16>;
        CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(gc_step_floats(512) * 4)));
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, kern));
        printf("VAR6 warps %d regs %d local %zu static_smem %zu\n", warps, fa.numRegs, fa.localSizeBytes,
               fa.sharedSizeBytes);
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute at;
        at.id = cudaLaunchAttributeClusterDimension;
        at.val.clusterDim.x = 2; at.val.clusterDim.y = 1; at.val.clusterDim.z = 1;
        cfg.gridDim = dim3(128); cfg.blockDim = dim3(warps * 32 + 32); cfg.dynamicSmemBytes = gc_step_floats(512) * 4;
        cfg.attrs = &at; cfg.numAttrs = 1;
        int clusters = -1;
        cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, kern, &cfg);
        printf("VAR6 warps %d cs 2 smem %zu max_active_clusters %d %s\n", warps, cfg.dynamicSmemBytes, clusters,
               e == cudaSuccess ? "" : cudaGetErrorString(e));
        cudaGetLastError();
    }
    {  // the launch floor: an empty kernel with the same grid, block, shared memory and clusters
        Prob p(64, 1024, 1024);
        const size_t smem = gc_step_floats(512) * 4;
        CK(cudaFuncSetAttribute(empty_k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        for (u32 cs : {1u, 2u}) {
            Launch e = [cs, smem, &p](cudaStream_t s) { CK(launch_ex(empty_k, 128, 288, smem, s, cs, false, p.grad())); };
            printf("RES6 empty cs=%u step20 %.2f replay %.2f\n", cs, time_graph(s, e, 20), time_graph(s, e, 1, 7, 200));
        }
    }
    struct Shape { int m, n, k; u32 cs; };
    std::vector<Shape> shapes = {{64, 1024, 1024, 2}, {37, 256, 384, 2}, {8, 512, 256, 2}, {1, 1024, 1024, 2},
                                 {16, 1024, 1024, 2}};
    if (san) shapes = {{37, 256, 384, 2}, {8, 512, 256, 1}};
    if (prof) {  // for ncu: the notes' step and one row, each launched twice outside graphs
        for (Shape sh : {Shape{64, 1024, 1024, 2}, Shape{1, 1024, 1024, 2}}) {
            Prob p(sh.m, sh.n, sh.k);
            for (int warps : {8, 16})
                for (int r = 0; r < 2; ++r) step1_launch(p, sh.cs, warps, false, s);
            CK(cudaStreamSynchronize(s));
        }
        return 0;
    }
    for (const Shape &sh : shapes) {
        Prob p(sh.m, sh.n, sh.k);
        StepOut ref = step_out(p, s, ship_step(p, false)), first;
        for (int warps : {8, 16}) {
            Launch one = [&p, sh, warps](cudaStream_t s) { step1_launch(p, sh.cs, warps, false, s); };
            Check c = check(p, s, one);
            StepOut a = step_out(p, s, one);
            if (warps == 8) first = a;
            printf("CHK6 m=%d n=%d k=%d cs=%u warps %d werr %.1e berr %.1e lerr %.1e det %d vs_ship_w %.1e "
                   "vs_ship_b %.1e loss %.6g ship_loss %.6g bitwise_8_warps %d\n",
                   sh.m, sh.n, sh.k, sh.cs, warps, c.werr, c.berr, c.lerr, c.det, maxrel(a.w, ref.w),
                   maxrel(a.b, ref.b), a.loss, ref.loss, (int)same(a, first));
            fflush(stdout);
        }
        if (san) continue;
        // Times (PDL on): a graph of 20 steps, and a one-step graph replayed back to back.
        for (int rep = 0; rep < 3; ++rep) {
            Launch sp = ship_step(p, true);
            const double a20 = time_graph(s, sp, 20), a1 = time_graph(s, sp, 1, 7, 200);
            printf("RES6 m=%d n=%d k=%d cs=%u ship step20 %.2f replay %.2f", sh.m, sh.n, sh.k, sh.cs, a20, a1);
            for (int warps : {8, 16}) {
                Launch op = [&p, sh, warps](cudaStream_t s) { step1_launch(p, sh.cs, warps, true, s); };
                printf(" w%d step20 %.2f replay %.2f", warps, time_graph(s, op, 20), time_graph(s, op, 1, 7, 200));
            }
            printf("\n");
            fflush(stdout);
        }
    }
    return 0;
}

// ===========================================================================
// Run 7 (`run.sh run7`; RES7 / CHK7 lines; `san7` under compute-sanitizer):
// the step's two GEMMs on the tensor cores in 3xTF32 (NOT SHIPPED; see
// perf/TUNING.md, "3xTF32"). Each f32 operand v is split as hi =
// tf32(v), lo = tf32(v - hi) (22 of its 24 bits), and a product is
// lo.hi + hi.lo + hi.hi (lo.lo dropped, about 2^-22 relative) summed in f32
// by mma.sync m16n8k8: near-f32 accuracy at a fraction of the FFMA issue
// cost. Deterministic (fixed order), not the bits of the f32 kernels.
// ===========================================================================
#include "linear_tf32.cu"

// v = hi + lo as TF32 bit patterns (hi = tf32(v), lo = tf32(v - hi)).
__device__ __forceinline__ void gc3_split(float v, u32 &hi, u32 &lo) {
    hi = gc_tf32(v);
    lo = gc_tf32(__fsub_rn(v, __uint_as_float(hi)));
}
// d += a . b in 3xTF32: the small products first.
__device__ __forceinline__ void gc3_mma(float (&d)[4], const u32 (&ah)[4], const u32 (&al)[4], const u32 (&bh)[2],
                                        const u32 (&bl)[2]) {
    gc_mma_tf32(d, al, bh);
    gc_mma_tf32(d, ah, bl);
    gc_mma_tf32(d, ah, bh);
}
// Stores (a, b) at p (this block's shared memory, 8-byte aligned) in the block of cluster rank `rank`.
__device__ __forceinline__ void gc3_st_cluster2(float *p, u32 rank, float a, float b) {
    u32 ra;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"((u32)__cvta_generic_to_shared(p)), "r"(rank));
    asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(ra), "f"(a), "f"(b) : "memory");
}

// The update: gc_linear_sgd_f32's loss block and bias blocks, then 64 x 64
// tiles of W -= lr dy^T x on the tensor cores (8 warps as 2 x 4, warp tile
// 32 x 16; dy and x tiles of all m <= 64 rows staged at once, row stride 72:
// fragment loads hit 32 banks). Needs m <= 64, n % 4 == 0, k % 4 == 0,
// 16-byte aligned w, dy, x. Grid: 1 (loss) + ceil(n / 32) + ceil(n / 64) ceil(k / 64).
#define GC3_L 72
__global__ void __launch_bounds__(256, 2)
    upd_tc(float *w, float *b, const float *dy, const float *x, u32 m, u32 n, u32 k, float lr, u32 bias_ty,
           float *loss, const float *partials, u32 parts) {
    GC_PDL_WAIT();
    __shared__ __align__(16) float smem[2 * 64 * GC3_L];
    u32 blk = blockIdx.x;
    if (loss != nullptr) {
        if (blk == 0) {
            gc_loss_block(loss, partials, parts);
            return;
        }
        --blk;
    }
    const u32 bias_blocks = b != nullptr ? (n + 31) / 32 : 0;
    if (blk < bias_blocks) {
        gc_layer_sgd(blk, w, b, dy, x, m, n, k, lr, 1u, bias_ty, smem);
        return;
    }
    blk -= bias_blocks;
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5, g = lane >> 2, t = lane & 3u;
    const u32 tiles_r = (k + 63) / 64, j0 = (blk / tiles_r) * 64, r0 = (blk % tiles_r) * 64;
    const u32 jb = (warp >> 2) * 32, rb = (warp & 3u) * 16;
    float *As = smem, *Bs = smem + 64 * GC3_L;
    float2 wv[2][2][2];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int ni = 0; ni < 2; ++ni) {
                const u32 j = j0 + jb + 16 * mi + 8 * h + g, r = r0 + rb + 8 * ni + 2 * t;
                wv[mi][h][ni] = j < n && r < k ? *reinterpret_cast<const float2 *>(w + j * k + r) : make_float2(0, 0);
            }
    for (u32 e = tid; e < 64 * 16; e += 256) {
        const u32 i = e / 16, c = 4 * (e % 16);
        float4 va = make_float4(0, 0, 0, 0), vb = va;
        if (i < m) {
            if (j0 + c < n) va = __ldg(reinterpret_cast<const float4 *>(dy + i * n + j0 + c));
            if (r0 + c < k) vb = __ldg(reinterpret_cast<const float4 *>(x + i * k + r0 + c));
        }
        gc_sts4(As + i * GC3_L + c, va);
        gc_sts4(Bs + i * GC3_L + c, vb);
    }
    __syncthreads();
    float acc[2][2][4];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 2; ++ni)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[mi][ni][q] = 0.0f;
    const u32 mp = (m + 7) & ~7u;
    for (u32 kk = 0; kk < mp; kk += 8) {
        u32 ah[2][4], al[2][4], bh[2][2], bl[2][2];
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) {
            const float *p = As + (kk + t) * GC3_L + jb + 16 * mi + g;
            gc3_split(p[0], ah[mi][0], al[mi][0]);
            gc3_split(p[8], ah[mi][1], al[mi][1]);
            gc3_split(p[4 * GC3_L], ah[mi][2], al[mi][2]);
            gc3_split(p[4 * GC3_L + 8], ah[mi][3], al[mi][3]);
        }
#pragma unroll
        for (int ni = 0; ni < 2; ++ni) {
            const float *q = Bs + (kk + t) * GC3_L + rb + 8 * ni + g;
            gc3_split(q[0], bh[ni][0], bl[ni][0]);
            gc3_split(q[4 * GC3_L], bh[ni][1], bl[ni][1]);
        }
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
            for (int ni = 0; ni < 2; ++ni) gc3_mma(acc[mi][ni], ah[mi], al[mi], bh[ni], bl[ni]);
    }
    GC_PDL_TRIGGER();
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int ni = 0; ni < 2; ++ni) {
                const u32 j = j0 + jb + 16 * mi + 8 * h + g, r = r0 + rb + 8 * ni + 2 * t;
                if (j >= n || r >= k) continue;
                const float2 o = wv[mi][h][ni];
                *reinterpret_cast<float2 *>(w + j * k + r) =
                    make_float2(fmaf(-lr, acc[mi][ni][2 * h], o.x), fmaf(-lr, acc[mi][ni][2 * h + 1], o.y));
            }
}

// The split fragments of one k step of the forward: A (16 rows of x from
// pa = x row g, k step + t) and NTW B tiles (W rows g, g + 8, ... from pb),
// row stride L.
template <u32 NTW>
__device__ __forceinline__ void gc3_frags(const float *pa, const float *pb, u32 L, u32 (&ah)[4], u32 (&al)[4],
                                          u32 (&bh)[NTW][2], u32 (&bl)[NTW][2]) {
    gc3_split(pa[0], ah[0], al[0]);
    gc3_split(pa[8 * L], ah[1], al[1]);
    gc3_split(pa[4], ah[2], al[2]);
    gc3_split(pa[8 * L + 4], ah[3], al[3]);
#pragma unroll
    for (int ni = 0; ni < (int)NTW; ++ni) {
        gc3_split(pb[8 * ni * L], bh[ni][0], bl[ni][0]);
        gc3_split(pb[8 * ni * L + 4], bh[ni][1], bl[ni][1]);
    }
}

// The forward's finish in cluster rank `rank` after the partial sums were
// pushed into its `recv` ([CS][64][8]): its 8 columns' sums in rank order,
// bias, grad = 2 gs (p - target) and sums[blockIdx.x] (256 threads, 2
// outputs each).
template <int CS>
__device__ __forceinline__ void gc3_finish(float *grad, float *sums, const float *recv, const float *b,
                                           const float *target, u32 m, u32 n, u32 n0, u32 rank, float grad_scale) {
    const u32 tid = threadIdx.x;
    float part = 0.0f;
    {
        const u32 row = tid / 4, cc = 2 * (tid % 4), col = n0 + 8 * rank + cc;
        if (row < m) {
            float s0 = recv[row * 8 + cc], s1 = recv[row * 8 + cc + 1];
#pragma unroll
            for (int r = 1; r < CS; ++r) {
                s0 = __fadd_rn(s0, recv[(r * 64 + row) * 8 + cc]);
                s1 = __fadd_rn(s1, recv[(r * 64 + row) * 8 + cc + 1]);
            }
            const float d0 = __fsub_rn(__fadd_rn(s0, __ldg(b + col)), __ldg(target + row * n + col));
            const float d1 = __fsub_rn(__fadd_rn(s1, __ldg(b + col + 1)), __ldg(target + row * n + col + 1));
            const float two = 2.0f * grad_scale;
            *reinterpret_cast<float2 *>(grad + row * n + col) = make_float2(d0 * two, d1 * two);
            part = fmaf(d1, d1, fmaf(d0, d0, 0.0f));
        }
    }
    const float total = gc_block_sum(part);
    if (tid == 0) sums[blockIdx.x] = total;
}

// The forward with the loss's block sums and dY (what gc_linear_mse_f32
// computes, without pred): clusters of CS blocks own BN = 8 CS output
// columns; block s of a cluster takes K slice s (k / CS wide) of all 64 rows,
// staged with cp.async in up to 4 groups (products start as each lands),
// 8 warps as 4 (rows) x 2 (columns); each block pushes its partial sums of
// columns 8 q .. 8 q + 7 into rank q's shared memory, one cluster barrier,
// and rank q adds the CS partials in rank order, adds the bias and writes
// grad = 2 gs (p - target) and sums[blockIdx.x] (its sum of (p - target)^2).
// Needs m <= 64, n % BN == 0, k % (8 CS) == 0, 16-byte aligned x, w.
// Grid: (n / BN) CS blocks in clusters of CS, 256 threads, gc3_fwd_bytes(k) of shared memory.
template <int CS>
static size_t gc3_fwd_bytes(u32 k) { return ((size_t)(64 + 8 * CS) * (k / CS + 4) + CS * 64 * 8) * 4; }
// CUT (time decomposition only, wrong results): 1 skips the products, 2 also
// the loads, 3 the push, barrier and finishing instead (sums only).
template <int CS, int CUT = 0>
__global__ void __launch_bounds__(256, 1)
    fwd_tc(float *grad, float *sums, const float *x, const float *w, const float *b, const float *target, u32 m,
           u32 n, u32 k, float grad_scale) {
    constexpr u32 BN = 8 * CS, NTW = CS / 2;  // columns per cluster; n-tiles per warp
    extern __shared__ __align__(16) float sm[];
    GC_PDL_WAIT();
    const u32 rank = gc_cluster_rank(), n0 = (blockIdx.x / CS) * BN;
    const u32 ks = k / CS, L = ks + 4, k0 = rank * ks;
    float *Xs = sm, *Ws = sm + 64 * L, *recv = Ws + BN * L;
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5, g = lane >> 2, t = lane & 3u;
    const u32 kc = ((ks + 3) / 4 + 7) & ~7u, chunks = (ks + kc - 1) / kc;
    for (u32 c = 0; c < chunks; ++c) {
        if (CUT == 2) break;
        const u32 c0 = c * kc, q = (min(kc, ks - c0)) / 4;
        for (u32 e = tid; e < (64 + BN) * q; e += 256) {
            const u32 row = e / q, col = c0 + 4 * (e % q);
            if (row < 64)
                gc_cp_async16(Xs + row * L + col, row < m ? x + row * k + k0 + col : x, row < m);
            else
                gc_cp_async16(Ws + (row - 64) * L + col, w + (n0 + row - 64) * k + k0 + col, true);
        }
        gc_cp_commit();
    }
    const u32 mb = (warp & 3u) * 16, nb = (warp >> 2) * (BN / 2);
    float acc[NTW][4];
#pragma unroll
    for (int ni = 0; ni < (int)NTW; ++ni)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[ni][q] = 0.0f;
    for (u32 c = 0; c < chunks; ++c) {
        if (CUT != 2) gc_cp_wait_upto(chunks - 1 - c);
        __syncthreads();
        if (mb >= m || CUT == 1 || CUT == 2) continue;
        const u32 end = min((c + 1) * kc, ks);
        for (u32 kk = c * kc; kk < end; kk += 8) {
            u32 ah[4], al[4], bh[NTW][2], bl[NTW][2];
            gc3_frags<NTW>(Xs + (mb + g) * L + kk + t, Ws + (nb + g) * L + kk + t, L, ah, al, bh, bl);
#pragma unroll
            for (int ni = 0; ni < (int)NTW; ++ni) gc3_mma(acc[ni], ah, al, bh[ni], bl[ni]);
        }
    }
    GC_PDL_TRIGGER();
    if (CUT == 3) {
        const float total = gc_block_sum(acc[0][0] + acc[NTW - 1][3]);
        if (tid == 0) sums[blockIdx.x] = total;
        return;
    }
    // Push: column nb + 8 ni + 2 t (+1) goes to rank (nb / 8 + ni), local column 2 t.
#pragma unroll
    for (int ni = 0; ni < (int)NTW; ++ni)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const u32 row = mb + g + 8 * h;
            gc3_st_cluster2(recv + (rank * 64 + row) * 8 + 2 * t, nb / 8 + ni, acc[ni][2 * h], acc[ni][2 * h + 1]);
        }
    gc_cluster_sync();
    gc3_finish<CS>(grad, sums, recv, b, target, m, n, n0, rank, grad_scale);
}


// fwd_tma<CS>: fwd_tc with its slices staged by the copy engine of the SM
// (cp.async.bulk, one copy per row and chunk, completion counted on an
// mbarrier per chunk; rows past m zeroed by plain stores) and products in
// three independent accumulators per tile (lo.hi, hi.lo, hi.hi; added at
// the end), the k loop unrolled by 4. CUT as fwd_tc (1: no products).
__device__ __forceinline__ void gc3_mbar_init(u64 *bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"((u32)__cvta_generic_to_shared(bar)), "r"(count)
                 : "memory");
}
__device__ __forceinline__ void gc3_mbar_expect(u64 *bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"((u32)__cvta_generic_to_shared(bar)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void gc3_mbar_wait(u64 *bar, u32 parity) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t@!p bra W;\n\t}" ::"r"(
            (u32)__cvta_generic_to_shared(bar)),
        "r"(parity)
        : "memory");
}
__device__ __forceinline__ void gc3_bulk(float *dst, const float *src, u32 bytes, u64 *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     (u32)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(bytes), "r"((u32)__cvta_generic_to_shared(bar))
                 : "memory");
}
template <int CS, int CUT = 0>
__global__ void __launch_bounds__(256, 1)
    fwd_tma(float *grad, float *sums, const float *x, const float *w, const float *b, const float *target, u32 m,
            u32 n, u32 k, float grad_scale) {
    constexpr u32 BN = 8 * CS, NTW = CS / 2;
    extern __shared__ __align__(16) float sm[];
    __shared__ __align__(8) u64 bars[4];
    const u32 rank = gc_cluster_rank(), n0 = (blockIdx.x / CS) * BN;
    const u32 ks = k / CS, L = ks + 4, k0 = rank * ks;
    float *Xs = sm, *Ws = sm + 64 * L, *recv = Ws + BN * L;
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5, g = lane >> 2, t = lane & 3u;
    const u32 kc = ((ks + 3) / 4 + 7) & ~7u, chunks = (ks + kc - 1) / kc, rows = min(m, 64u);
    if (tid == 0) {
        for (u32 c = 0; c < chunks; ++c) gc3_mbar_init(&bars[c], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // Rows past m: zeros (plain stores, read after the barrier below).
    for (u32 e = rows * (ks / 4) + tid; e < 64 * (ks / 4); e += 256) {
        const u32 row = e / (ks / 4), col = 4 * (e % (ks / 4));
        gc_sts4(Xs + row * L + col, make_float4(0, 0, 0, 0));
    }
    __syncthreads();
    GC_PDL_WAIT();
    if (warp == 0) {
        for (u32 c = 0; c < chunks; ++c) {
            const u32 c0 = c * kc, cw = min(kc, ks - c0);
            if (lane == 0) gc3_mbar_expect(&bars[c], (rows + BN) * cw * 4);
            __syncwarp();
            for (u32 r = lane; r < rows + BN; r += 32) {
                if (r < rows)
                    gc3_bulk(Xs + r * L + c0, x + r * k + k0 + c0, cw * 4, &bars[c]);
                else
                    gc3_bulk(Ws + (r - rows) * L + c0, w + (n0 + r - rows) * k + k0 + c0, cw * 4, &bars[c]);
            }
        }
    }
    const u32 mb = (warp & 3u) * 16, nb = (warp >> 2) * (BN / 2);
    float acc[3][NTW][4];
#pragma unroll
    for (int z = 0; z < 3; ++z)
#pragma unroll
        for (int ni = 0; ni < (int)NTW; ++ni)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[z][ni][q] = 0.0f;
    for (u32 c = 0; c < chunks; ++c) {
        gc3_mbar_wait(&bars[c], 0);
        if (mb >= m || CUT == 1) continue;
        const u32 end = min((c + 1) * kc, ks);
#pragma unroll 4
        for (u32 kk = c * kc; kk < end; kk += 8) {
            u32 ah[4], al[4], bh[NTW][2], bl[NTW][2];
            gc3_frags<NTW>(Xs + (mb + g) * L + kk + t, Ws + (nb + g) * L + kk + t, L, ah, al, bh, bl);
#pragma unroll
            for (int ni = 0; ni < (int)NTW; ++ni) {
                gc_mma_tf32(acc[0][ni], al, bh[ni]);
                gc_mma_tf32(acc[1][ni], ah, bl[ni]);
                gc_mma_tf32(acc[2][ni], ah, bh[ni]);
            }
        }
    }
    GC_PDL_TRIGGER();
#pragma unroll
    for (int ni = 0; ni < (int)NTW; ++ni)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const u32 row = mb + g + 8 * h;
            const float v0 = __fadd_rn(__fadd_rn(acc[0][ni][2 * h], acc[1][ni][2 * h]), acc[2][ni][2 * h]);
            const float v1 = __fadd_rn(__fadd_rn(acc[0][ni][2 * h + 1], acc[1][ni][2 * h + 1]), acc[2][ni][2 * h + 1]);
            gc3_st_cluster2(recv + (rank * 64 + row) * 8 + 2 * t, nb / 8 + ni, v0, v1);
        }
    gc_cluster_sync();
    gc3_finish<CS>(grad, sums, recv, b, target, m, n, n0, rank, grad_scale);
}
template <int CS, int CUT = 0>
static void fwd_tma_launch(Prob &p, bool pdl, cudaStream_t s) {
    CK(launch_ex(fwd_tma<CS, CUT>, (p.n / (8 * CS)) * CS, 256, gc3_fwd_bytes<CS>(p.k), s, CS, pdl, p.grad(),
                 p.sums(), (const float *)p.dx, (const float *)p.dw, (const float *)p.db, (const float *)p.dt,
                 (u32)p.m, (u32)p.n, (u32)p.k, 1.0f));
}

template <int CS, int CUT = 0>
static void fwd_tc_launch(Prob &p, bool pdl, cudaStream_t s) {
    const size_t smem = gc3_fwd_bytes<CS>(p.k);
    CK(launch_ex(fwd_tc<CS, CUT>, (p.n / (8 * CS)) * CS, 256, smem, s, CS, pdl, p.grad(), p.sums(), (const float *)p.dx,
                 (const float *)p.dw, (const float *)p.db, (const float *)p.dt, (u32)p.m, (u32)p.n, (u32)p.k, 1.0f));
}
static void ship_fwd_launch(Prob &p, bool pdl, cudaStream_t s) {
    CK(launch_ex(gc_linear_mse_f32, p.n / 4, 256, 0, s, 1, pdl, p.grad(), (float *)nullptr, p.sums(),
                 (const float *)p.dx, (const float *)p.dw, (const float *)p.db, (const float *)p.dt, (u32)p.m,
                 (u32)p.n, (u32)p.k, 0x3bu, 1.0f));
}
// The update after a forward that wrote `parts` block sums: shipped (tile 3) or upd_tc.
static void upd_launch7(Prob &p, bool tc, u32 parts, bool pdl, cudaStream_t s) {
    const u32 ty = bias_ty_of(p.m), blocks = 1 + (p.n + 31) / 32 + ((p.n + 63) / 64) * ((p.k + 63) / 64);
    if (tc)
        CK(launch_ex(upd_tc, blocks, 256, 0, s, 1, pdl, p.dw, p.db, (const float *)p.grad(), (const float *)p.dx,
                     (u32)p.m, (u32)p.n, (u32)p.k, p.lr, ty, p.dloss, (const float *)p.sums(), parts));
    else
        CK(launch_ex(gc_linear_sgd_f32, blocks, 256, 0, s, 1, pdl, p.dw, p.db, (const float *)p.grad(),
                     (const float *)p.dx, (u32)p.m, (u32)p.n, (u32)p.k, p.lr, 3u, ty, p.dloss,
                     (const float *)p.sums(), parts));
}

// fwd: 0 shipped, else the cluster size of fwd_tc; upd_tc: the tensor-core update.
static void step7(Prob &p, int fwd, bool tc, bool pdl, cudaStream_t s) {
    u32 parts = p.n / 4;
    if (fwd == 0) ship_fwd_launch(p, pdl, s);
    else {
        parts = p.n / 8;  // one block sum per 8 columns, every cluster size
        if (fwd == 2) fwd_tc_launch<2>(p, pdl, s);
        else if (fwd == 4) fwd_tc_launch<4>(p, pdl, s);
        else if (fwd == 8) fwd_tc_launch<8>(p, pdl, s);
        else if (fwd == 14) fwd_tma_launch<4>(p, pdl, s);
        else fwd_tma_launch<8>(p, pdl, s);
    }
    upd_launch7(p, tc, parts, pdl, s);
}

static void tma_attr() {
    CK(cudaFuncSetAttribute(fwd_tma<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gc3_fwd_bytes<4>(1024)));
    CK(cudaFuncSetAttribute(fwd_tma<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gc3_fwd_bytes<8>(1024)));
}
template <int CS, int CUT>
static void cut_row(Prob &p, cudaStream_t s) {
    CK(cudaFuncSetAttribute(fwd_tc<CS, CUT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gc3_fwd_bytes<CS>(1024)));
    Launch f = [&p](cudaStream_t s) { fwd_tc_launch<CS, CUT>(p, true, s); };
    printf(" cs%d_cut%d %.2f", CS, CUT, time_graph(s, f, 20));
}
template <int CS, int CUT>
static void tma_row(Prob &p, cudaStream_t s) {
    CK(cudaFuncSetAttribute(fwd_tma<CS, CUT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gc3_fwd_bytes<CS>(1024)));
    Launch f = [&p](cudaStream_t s) { fwd_tma_launch<CS, CUT>(p, true, s); };
    printf(" tma%d_cut%d %.2f", CS, CUT, time_graph(s, f, 20));
}
static int run7(cudaStream_t s, bool san) {
    tma_attr();
    if (!san) {  // where the forward's time goes (wrong results; times only)
        for (int m : {64, 1}) {
            Prob p(m, 1024, 1024);
            printf("CUT7 m=%d", m);
            cut_row<4, 1>(p, s); cut_row<4, 2>(p, s); cut_row<4, 3>(p, s);
            cut_row<8, 1>(p, s); cut_row<8, 2>(p, s); cut_row<8, 3>(p, s);
            tma_row<4, 0>(p, s); tma_row<4, 1>(p, s); tma_row<8, 0>(p, s); tma_row<8, 1>(p, s);
            printf("\n");
            fflush(stdout);
        }
    }
    CK(cudaFuncSetAttribute(fwd_tc<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gc3_fwd_bytes<2>(1024)));
    CK(cudaFuncSetAttribute(fwd_tc<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gc3_fwd_bytes<4>(1024)));
    CK(cudaFuncSetAttribute(fwd_tc<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gc3_fwd_bytes<8>(1024)));
    if (cudaFuncSetAttribute(fwd_tc<8>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) cudaGetLastError();
    struct Shape { int m, n, k; };
    std::vector<Shape> shapes = {{64, 1024, 1024}, {37, 256, 384}, {8, 512, 256}, {1, 1024, 1024}, {16, 1024, 1024}};
    if (san) shapes = {{37, 256, 384}, {8, 512, 256}};
    const std::vector<std::pair<int, bool>> vars = {{0, true}, {4, false}, {8, false}, {14, false}, {18, false},
                                                    {14, true}, {18, true}};
    for (const Shape &sh : shapes) {
        Prob p(sh.m, sh.n, sh.k);
        StepOut ref = step_out(p, s, ship_step(p, false));
        Check cs = check(p, s, ship_step(p, false));
        printf("CHK7 m=%d n=%d k=%d ship werr %.1e berr %.1e lerr %.1e det %d\n", sh.m, sh.n, sh.k, cs.werr, cs.berr,
               cs.lerr, cs.det);
        for (auto [fwd, tc] : vars) {
            if (fwd && (sh.n % (8 * (fwd % 10)) || sh.k % (8 * (fwd % 10)))) continue;
            Launch one = [&p, fwd = fwd, tc = tc](cudaStream_t s) { step7(p, fwd, tc, false, s); };
            Check c = check(p, s, one);
            StepOut a = step_out(p, s, one);
            printf("CHK7 m=%d n=%d k=%d fwd %d upd_tc %d werr %.1e berr %.1e lerr %.1e det %d vs_ship_w %.1e "
                   "vs_ship_b %.1e loss %.7g ship_loss %.7g\n",
                   sh.m, sh.n, sh.k, fwd, (int)tc, c.werr, c.berr, c.lerr, c.det, maxrel(a.w, ref.w),
                   maxrel(a.b, ref.b), a.loss, ref.loss);
            fflush(stdout);
        }
        if (san) continue;
        for (int rep = 0; rep < 2; ++rep) {
            Launch sp = ship_step(p, true);
            printf("RES7 m=%d n=%d k=%d ship step20 %.2f replay %.2f", sh.m, sh.n, sh.k, time_graph(s, sp, 20),
                   time_graph(s, sp, 1, 7, 200));
            Launch f0 = [&p](cudaStream_t s) { ship_fwd_launch(p, true, s); };
            Launch u0 = [&p](cudaStream_t s) { upd_launch7(p, false, p.n / 4, true, s); };
            Launch u1 = [&p](cudaStream_t s) { upd_launch7(p, true, p.n / 4, true, s); };
            printf(" | fwd ship %.2f upd ship %.2f upd_tc %.2f", time_graph(s, f0, 20), time_graph(s, u0, 20),
                   time_graph(s, u1, 20));
            for (int cs2 : {2, 4, 8}) {
                if (sh.n % (8 * cs2) || sh.k % (8 * cs2)) continue;
                Launch f = [&p, cs2](cudaStream_t s) {
                    if (cs2 == 2) fwd_tc_launch<2>(p, true, s);
                    else if (cs2 == 4) fwd_tc_launch<4>(p, true, s);
                    else fwd_tc_launch<8>(p, true, s);
                };
                printf(" fwd_tc%d %.2f", cs2, time_graph(s, f, 20));
            }
            printf(" |");
            for (auto [fwd, tc] : vars) {
                if (fwd && (sh.n % (8 * (fwd % 10)) || sh.k % (8 * (fwd % 10)))) continue;
                Launch op = [&p, fwd = fwd, tc = tc](cudaStream_t s) { step7(p, fwd, tc, true, s); };
                printf(" f%d%s step20 %.2f replay %.2f", fwd, tc ? "+tc" : "", time_graph(s, op, 20),
                       time_graph(s, op, 1, 7, 200));
            }
            printf("\n");
            fflush(stdout);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
    printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (argc > 1 && !strcmp(argv[1], "run5")) return run5(s, false, false);
    if (argc > 1 && !strcmp(argv[1], "prof5")) return run5(s, true, false);  // under ncu
    if (argc > 1 && !strcmp(argv[1], "san5")) return run5(s, false, true);  // under compute-sanitizer
    if (argc > 1 && !strcmp(argv[1], "run6")) return run6(s, false);
    if (argc > 1 && !strcmp(argv[1], "san6")) return run6(s, true);  // under compute-sanitizer
    if (argc > 1 && !strcmp(argv[1], "prof6")) return run6(s, false, true);  // under ncu
    if (argc > 1 && !strcmp(argv[1], "run7")) return run7(s, false);
    if (argc > 1 && !strcmp(argv[1], "san7")) return run7(s, true);  // under compute-sanitizer

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
