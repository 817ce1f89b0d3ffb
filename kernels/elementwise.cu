// elementwise.cu: graphcore's elementwise kernels and the fused chain kernel.
//
// Thread mapping (all kernels here): a 1-D grid-stride loop. When every
// pointer the kernel touches is 16-byte aligned (checked at run time, inside
// the kernel), thread t handles float4 number t, t + stride, ... of the first
// 4*floor(n/4) elements (one 16-byte load per input, one 16-byte store), and
// threads 0..n%4-1 handle the scalar tail [4*floor(n/4), n). Otherwise every
// thread walks single floats t, t + stride, ... Any grid covers all n
// elements; the launcher picks one of at most a few waves.
//
// Every element is read before it is written by the same thread and by no
// other, so in-place use (y == x, z == x, ...) is fine. Pointers are not
// __restrict__ and inputs are not read through the non-coherent cache for the
// same reason.
//
// Each output element is computed by exactly one rounding-explicit expression
// (see common.cuh), identical in the standalone kernels and in gc_chain_f32.
#include "common.cuh"

// y[i] = f(x[i]) for i < n.
template <class F>
__device__ __forceinline__ void gc_map1(float *y, const float *x, u64 n, F f) {
    const u64 tid = gc_tid(), stride = gc_stride();
    if (gc_aligned16(y, x)) {
        const u64 nv = n >> 2;
        float4 *y4 = reinterpret_cast<float4 *>(y);
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        for (u64 i = tid; i < nv; i += stride) {
            const float4 a = x4[i];
            y4[i] = make_float4(f(a.x), f(a.y), f(a.z), f(a.w));
        }
        const u64 t = (nv << 2) + tid;
        if (t < n) y[t] = f(x[t]);
    } else {
        for (u64 i = tid; i < n; i += stride) y[i] = f(x[i]);
    }    GC_PDL_TRIGGER();
}

// z[i] = f(x[i], y[i]) for i < n.
template <class F>
__device__ __forceinline__ void gc_map2(float *z, const float *x, const float *y, u64 n, F f) {
    const u64 tid = gc_tid(), stride = gc_stride();
    if (gc_aligned16(z, x, y)) {
        const u64 nv = n >> 2;
        float4 *z4 = reinterpret_cast<float4 *>(z);
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        const float4 *y4 = reinterpret_cast<const float4 *>(y);
        for (u64 i = tid; i < nv; i += stride) {
            const float4 a = x4[i], b = y4[i];
            z4[i] = make_float4(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
        }
        const u64 t = (nv << 2) + tid;
        if (t < n) z[t] = f(x[t], y[t]);
    } else {
        for (u64 i = tid; i < n; i += stride) z[i] = f(x[i], y[i]);
    }    GC_PDL_TRIGGER();
}

// y[i] = value.
extern "C" __global__ void __launch_bounds__(GC_BLOCK) gc_fill_f32(float *y, u64 n, float value) {
    GC_PDL_WAIT();
    const u64 tid = gc_tid(), stride = gc_stride();
    if (gc_aligned16(y)) {
        const u64 nv = n >> 2;
        float4 *y4 = reinterpret_cast<float4 *>(y);
        const float4 v = make_float4(value, value, value, value);
        for (u64 i = tid; i < nv; i += stride) y4[i] = v;
        const u64 t = (nv << 2) + tid;
        if (t < n) y[t] = value;
    } else {
        for (u64 i = tid; i < n; i += stride) y[i] = value;
    }    GC_PDL_TRIGGER();
}

// y[i] = x[i].
extern "C" __global__ void __launch_bounds__(GC_BLOCK) gc_copy_f32(float *y, const float *x, u64 n) {
    GC_PDL_WAIT();
    gc_map1(y, x, n, [](float v) { return v; });
}

// y[i] = alpha * x[i] (one rounding: __fmul_rn(x, alpha)).
extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_scale_f32(float *y, const float *x, u64 n, float alpha) {
    GC_PDL_WAIT();
    gc_map1(y, x, n, [=](float v) { return __fmul_rn(v, alpha); });
}

// y[i] = x[i] + c (__fadd_rn(x, c)).
extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_add_scalar_f32(float *y, const float *x, u64 n, float c) {
    GC_PDL_WAIT();
    gc_map1(y, x, n, [=](float v) { return __fadd_rn(v, c); });
}

// y[i] = fmaf(alpha, x[i], y[i]).
extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_axpy_f32(float *y, const float *x, u64 n, float alpha) {
    GC_PDL_WAIT();
    gc_map2(y, x, y, n, [=](float a, float b) { return fmaf(alpha, a, b); });
}

// z[i] = x[i] + y[i].
extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_add_f32(float *z, const float *x, const float *y, u64 n) {
    GC_PDL_WAIT();
    gc_map2(z, x, y, n, [](float a, float b) { return __fadd_rn(a, b); });
}

// z[i] = x[i] * y[i].
extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_mul_f32(float *z, const float *x, const float *y, u64 n) {
    GC_PDL_WAIT();
    gc_map2(z, x, y, n, [](float a, float b) { return __fmul_rn(a, b); });
}

// y[i] = relu(x[i]) (NaN propagates, -0 -> +0; see gc_relu).
extern "C" __global__ void __launch_bounds__(GC_BLOCK) gc_relu_f32(float *y, const float *x, u64 n) {
    GC_PDL_WAIT();
    gc_map1(y, x, n, [](float v) { return gc_relu(v); });
}

// GELU, the tanh approximation (PyTorch's gelu(approximate="tanh")):
// 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as
// x * sigmoid(2u) = x / (1 + 2^(K (x + 0.044715 x^3))), K = -2 sqrt(2/pi) log2(e),
// with explicit roundings and ex2.approx.f32 (inline PTX, so the instruction is
// fixed: core's fusion JIT emits exactly this sequence, and kernels/src/table.rs
// declares it). Large |x| give x or -0; NaN propagates.
__device__ __forceinline__ float gc_gelu(float v) {
    float t = fmaf(__fmul_rn(__fmul_rn(v, v), 0.044715f), v, v);
    t = __fmul_rn(t, -2.3022082f);
#ifdef __CUDA_ARCH__
    asm("ex2.approx.f32 %0, %0;" : "+f"(t));
#else
    t = std::exp2(t);  // CPU emulation (kernels/emu)
#endif
    return __fdiv_rn(v, __fadd_rn(t, 1.0f));
}

// y[i] = gelu(x[i]).
extern "C" __global__ void __launch_bounds__(GC_BLOCK) gc_gelu_f32(float *y, const float *x, u64 n) {
    GC_PDL_WAIT();
    gc_map1(y, x, n, [](float v) { return gc_gelu(v); });
}

// dx[i] = x[i] > 0 ? dy[i] : 0.
extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_relu_backward_f32(float *dx, const float *dy, const float *x, u64 n) {
    GC_PDL_WAIT();
    gc_map2(dx, dy, x, n, [](float g, float v) { return (v > 0.0f) ? g : 0.0f; });
}

// w[i] = fmaf(-lr, g[i], w[i])  (plain SGD step, w -= lr * g with one rounding).
extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_sgd_f32(float *w, const float *g, u64 n, float lr) {
    GC_PDL_WAIT();
    const float neg_lr = -lr;
    gc_map2(w, g, w, n, [=](float gi, float wi) { return fmaf(neg_lr, gi, wi); });
}

// y[r, c] = x[r, c] + b[c] for a row-major rows x cols matrix (rows * cols <
// 2^32). Vector path when cols % 4 == 0 and y, x, b are 16-byte aligned: the
// grid strides over float4 units of the flattened matrix, and a thread tracks
// its unit's column incrementally (no division inside the loop).
extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_bias_add_f32(float *y, const float *x, const float *b, u32 rows, u32 cols) {
    GC_PDL_WAIT();
    const u32 total = rows * cols;
    const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 stride = gridDim.x * blockDim.x;
    if ((cols & 3) == 0 && gc_aligned16(y, x, b)) {
        const u32 nv = total >> 2, cv = cols >> 2;
        float4 *y4 = reinterpret_cast<float4 *>(y);
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        const float4 *b4 = reinterpret_cast<const float4 *>(b);
        const u32 step = stride % cv;
        u32 c = tid % cv;
        for (u32 i = tid; i < nv; i += stride) {
            const float4 a = x4[i], bb = b4[c];
            y4[i] = make_float4(__fadd_rn(a.x, bb.x), __fadd_rn(a.y, bb.y), __fadd_rn(a.z, bb.z),
                                __fadd_rn(a.w, bb.w));
            c += step;
            if (c >= cv) c -= cv;
            if (i > 0xffffffffu - stride) break;  // i + stride would wrap
        }
    } else {
        const u32 step = stride % cols;
        u32 c = tid % cols;
        for (u32 i = tid; i < total; i += stride) {
            y[i] = __fadd_rn(x[i], b[c]);
            c += step;
            if (c >= cols) c -= cols;
            if (i > 0xffffffffu - stride) break;  // i + stride would wrap
        }
    }    GC_PDL_TRIGGER();
}

// ---------------------------------------------------------------------------
// The chain kernel: y[i] = op_{count-1}( ... op_1(op_0(x[i])) ... ), with every
// intermediate kept in registers (one read of x, one write of y).
//
// ops packs the opcodes, 4 bits each: op k is (ops >> 4k) & 15, k < count <= 8;
// op k uses constant ck. Each opcode computes exactly what the standalone
// kernel computes, so a chain is bitwise equal to running those kernels one
// after another:
//   1 FILL  v = c            (gc_fill_f32)
//   2 MUL   v = v * c        (gc_scale_f32)
//   3 ADD   v = v + c        (gc_add_scalar_f32)
//   4 RELU  v = relu(v)      (gc_relu_f32; c unused)
//   5 MAX   v = max(v, c)    (clamp_min, NaN in v propagates)
//   6 MIN   v = min(v, c)    (clamp_max, NaN in v propagates)
//   7 GELU  v = gelu(v)      (gc_gelu_f32; c unused)
// Any other opcode leaves v unchanged. When op 0 is FILL, x is not read (it
// may be null). count == 0 copies x to y.
#define GC_OP_FILL 1u
#define GC_OP_MUL 2u
#define GC_OP_ADD 3u
#define GC_OP_RELU 4u
#define GC_OP_MAX 5u
#define GC_OP_MIN 6u
#define GC_OP_GELU 7u

__device__ __forceinline__ float gc_op(u32 op, float v, float c) {
    switch (op) {
    case GC_OP_FILL: return c;
    case GC_OP_MUL: return __fmul_rn(v, c);
    case GC_OP_ADD: return __fadd_rn(v, c);
    case GC_OP_RELU: return gc_relu(v);
    case GC_OP_MAX: return gc_max(v, c);
    case GC_OP_MIN: return gc_min(v, c);
    case GC_OP_GELU: return gc_gelu(v);
    default: return v;
    }
}

// Applies one opcode to the four lanes of a float4 (the switch is taken once
// per float4; the opcode is the same for all threads, so no divergence).
__device__ __forceinline__ float4 gc_op4(u32 op, float4 v, float c) {
    switch (op) {
    case GC_OP_FILL: return make_float4(c, c, c, c);
    case GC_OP_MUL: return make_float4(__fmul_rn(v.x, c), __fmul_rn(v.y, c), __fmul_rn(v.z, c), __fmul_rn(v.w, c));
    case GC_OP_ADD: return make_float4(__fadd_rn(v.x, c), __fadd_rn(v.y, c), __fadd_rn(v.z, c), __fadd_rn(v.w, c));
    case GC_OP_RELU: return make_float4(gc_relu(v.x), gc_relu(v.y), gc_relu(v.z), gc_relu(v.w));
    case GC_OP_MAX: return make_float4(gc_max(v.x, c), gc_max(v.y, c), gc_max(v.z, c), gc_max(v.w, c));
    case GC_OP_MIN: return make_float4(gc_min(v.x, c), gc_min(v.y, c), gc_min(v.z, c), gc_min(v.w, c));
    case GC_OP_GELU: return make_float4(gc_gelu(v.x), gc_gelu(v.y), gc_gelu(v.z), gc_gelu(v.w));
    default: return v;
    }
}

// The op list is unrolled with compile-time slots so the constants stay in
// registers (no local-memory array indexed at run time).
template <class V, class Op>
__device__ __forceinline__ V gc_chain_apply(V v, u32 ops, u32 count, float c0, float c1, float c2, float c3,
                                            float c4, float c5, float c6, float c7, Op op) {
    if (count > 0) v = op(ops & 15u, v, c0);
    if (count > 1) v = op((ops >> 4) & 15u, v, c1);
    if (count > 2) v = op((ops >> 8) & 15u, v, c2);
    if (count > 3) v = op((ops >> 12) & 15u, v, c3);
    if (count > 4) v = op((ops >> 16) & 15u, v, c4);
    if (count > 5) v = op((ops >> 20) & 15u, v, c5);
    if (count > 6) v = op((ops >> 24) & 15u, v, c6);
    if (count > 7) v = op((ops >> 28) & 15u, v, c7);
    return v;
}

extern "C" __global__ void __launch_bounds__(GC_BLOCK)
    gc_chain_f32(float *y, const float *x, u64 n, u32 ops, u32 count, float c0, float c1, float c2, float c3,
                 float c4, float c5, float c6, float c7) {
    GC_PDL_WAIT();
    const u64 tid = gc_tid(), stride = gc_stride();
    const bool reads_x = !(count > 0 && (ops & 15u) == GC_OP_FILL);
    auto op1 = [](u32 op, float v, float c) { return gc_op(op, v, c); };
    auto op4 = [](u32 op, float4 v, float c) { return gc_op4(op, v, c); };
    if (gc_aligned16(y) && (!reads_x || gc_aligned16(x))) {
        const u64 nv = n >> 2;
        float4 *y4 = reinterpret_cast<float4 *>(y);
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        for (u64 i = tid; i < nv; i += stride) {
            const float4 a = reads_x ? x4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            y4[i] = gc_chain_apply(a, ops, count, c0, c1, c2, c3, c4, c5, c6, c7, op4);
        }
        const u64 t = (nv << 2) + tid;
        if (t < n) y[t] = gc_chain_apply(reads_x ? x[t] : 0.0f, ops, count, c0, c1, c2, c3, c4, c5, c6, c7, op1);
    } else {
        for (u64 i = tid; i < n; i += stride)
            y[i] = gc_chain_apply(reads_x ? x[i] : 0.0f, ops, count, c0, c1, c2, c3, c4, c5, c6, c7, op1);
    }    GC_PDL_TRIGGER();
}
