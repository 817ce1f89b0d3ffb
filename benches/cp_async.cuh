// cp.async helpers shared by the benches' CUDA harnesses (train_harness,
// gemm_harness): 16-byte global -> shared copies and their groups (sm_80+).
#pragma once
// 16 bytes global -> shared, asynchronous (zeros when !in: nothing is read).
__device__ __forceinline__ void gc_cp_async16(float *dst, const float *src, bool in) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((u32)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(in ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void gc_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most `pending` (0..7) of this thread's newest copy groups
// are still in flight.
__device__ __forceinline__ void gc_cp_wait_upto(u32 pending) {
    switch (pending) {
    case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
    }
}
template <int N>
__device__ __forceinline__ void gc_cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
