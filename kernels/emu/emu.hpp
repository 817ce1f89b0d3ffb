// emu.hpp: runs graphcore's CUDA C kernels on the CPU, for checking them on a
// machine without a GPU (see check.cpp; `python3 kernels/emu/run.py`).
//
// Each CUDA thread of a block is an OS thread; blocks run one after another,
// so `__shared__` variables become function-local statics (one per block at
// a time, as on the GPU). __syncthreads is a barrier over the block, and
// __shfl_xor_sync a two-phase exchange over the warp. Arithmetic intrinsics
// map to IEEE single-precision operations (compile with -ffp-contract=off so
// nothing is fused behind the kernels' back; fmaf is the correctly rounded
// libm fmaf), so results match the GPU's bit for bit.
#pragma once

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__

struct alignas(16) float4 {
    float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

struct uint3 {
    unsigned x = 0, y = 0, z = 0;
};
using dim3 = uint3;

namespace emu {
struct Block {
    std::barrier<> *block_bar = nullptr;
    std::vector<std::unique_ptr<std::barrier<>>> warp_bars;
    std::vector<float> shfl;  // one slot per thread
};
inline thread_local Block *tls_block = nullptr;
inline thread_local unsigned tls_linear = 0;
}  // namespace emu

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline uint3 blockDim;
inline uint3 gridDim;

inline void __syncthreads() { emu::tls_block->block_bar->arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

inline float __shfl_xor_sync(unsigned, float v, int lane_mask) {
    emu::Block *b = emu::tls_block;
    const unsigned t = emu::tls_linear, warp = t / 32, lane = t % 32;
    b->shfl[t] = v;
    b->warp_bars[warp]->arrive_and_wait();
    const float r = b->shfl[warp * 32 + (lane ^ (unsigned)lane_mask)];
    b->warp_bars[warp]->arrive_and_wait();
    return r;
}

// A spinning thread's pause: gives the CPU to the threads it waits for.
inline void emu_yield() { std::this_thread::yield(); }

inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }

template <class T>
inline T __ldg(const T *p) {
    return *p;
}
inline unsigned __float_as_uint(float v) {
    unsigned u;
    std::memcpy(&u, &v, 4);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float v;
    std::memcpy(&v, &u, 4);
    return v;
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
using std::fmaf;
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }

namespace emu {
// Runs kernel(args...) over grid x block, blocks one after another. One OS
// thread per CUDA thread of a block, reused for every block of the launch.
template <class... P, class... A>
void launch(void (*kernel)(P...), uint3 grid, uint3 block, A... args) {
    gridDim = grid;
    blockDim = block;
    const unsigned nthreads = block.x * block.y * block.z;
    if (nthreads == 0 || nthreads % 32 != 0 || nthreads > 1024) throw "bad block size";
    const unsigned long long nblocks = (unsigned long long)grid.x * grid.y * grid.z;
    std::barrier<> start(nthreads + 1), done(nthreads + 1);
    std::unique_ptr<Block> cur;
    unsigned long long current = 0;
    std::vector<std::thread> threads;
    threads.reserve(nthreads);
    for (unsigned t = 0; t < nthreads; ++t) {
        threads.emplace_back([&, t] {
            tls_linear = t;
            threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            for (;;) {
                start.arrive_and_wait();
                if (current >= nblocks) return;
                Block *b = cur.get();
                tls_block = b;
                const unsigned long long id = current;
                blockIdx = uint3{unsigned(id % grid.x), unsigned(id / grid.x % grid.y), unsigned(id / grid.x / grid.y)};
                kernel(static_cast<P>(args)...);
                b->warp_bars[t / 32]->arrive_and_drop();
                b->block_bar->arrive_and_drop();
                done.arrive_and_wait();
            }
        });
    }
    for (current = 0; current <= nblocks; ++current) {
        std::unique_ptr<std::barrier<>> bar;
        if (current < nblocks) {
            cur.reset(new Block);
            bar.reset(new std::barrier<>(nthreads));
            cur->block_bar = bar.get();
            for (unsigned w = 0; w < nthreads / 32; ++w) cur->warp_bars.emplace_back(new std::barrier<>(32));
            cur->shfl.assign(nthreads, 0.0f);
        }
        start.arrive_and_wait();
        if (current == nblocks) break;
        done.arrive_and_wait();
        cur->block_bar = nullptr;
        cur.reset();
    }
    for (auto &th : threads) th.join();
}
}  // namespace emu
