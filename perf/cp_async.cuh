// A cp.async helper the benches' CUDA harnesses (train_harness,
// gemm_harness) add to kernels/linear.cu's (gc_cp_async16, gc_cp_commit,
// gc_cp_wait<N>): a wait with a run-time count. Include after linear.cu.
#pragma once
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
