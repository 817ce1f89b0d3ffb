"""gc_op_linear with programmatic dependent launch on and off, vs cuBLAS (kernels/TUNING.md, "GEMMs and
programmatic dependent launch"). Run on the GPU machine, alternating:
  for p in 1 0 1 0; do GC_PDL=$p LIBGRAPHCORE=stage/lib/libgraphcore.so python3 benches/gemm_harness/pdl_ab.py; done
Prints one line per shape: microseconds per call in graphs of up to 20 calls, median of 7 replays."""
import ctypes as C, os, statistics, sys, torch
torch.backends.cuda.matmul.allow_tf32 = False
lib = C.CDLL(os.environ["LIBGRAPHCORE"]); P, U32, I = C.c_void_p, C.c_uint32, C.c_int
lib.gc_context_create.argtypes=[I, C.POINTER(P)]; lib.gc_stream_wrap.argtypes=[P,P,C.POINTER(P)]
lib.gc_stream_destroy.argtypes=[P]; lib.gc_op_linear.argtypes=[P,P,P,P,P,U32,U32,U32,I]
ctx=P(); assert lib.gc_context_create(0, C.byref(ctx))==0
def gpu_us(fn, inner=20, reps=7):
    fn(); torch.cuda.synchronize()
    a,b=torch.cuda.Event(enable_timing=True),torch.cuda.Event(enable_timing=True)
    a.record(); fn(); b.record(); b.synchronize(); est=max(a.elapsed_time(b)*1000,1.0)
    inner=int(min(20,max(1,2000/est)))
    s=torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s): fn()
    torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
    g=torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner): fn()
    g.replay(); torch.cuda.synchronize(); t=[]
    for _ in range(reps):
        a.record(); g.replay(); b.record(); b.synchronize(); t.append(a.elapsed_time(b)*1000/inner)
    return statistics.median(t)
shapes=[(256,1024,4096),(256,4096,4096),(1024,1024,1024),(1024,4096,1024),(512,1024,512),(2048,1024,512),(512,1024,1024),(1024,4096,4096)]
for m,k,n in shapes:
    x=torch.rand(m,k,device="cuda"); w=torch.rand(n,k,device="cuda")/k**.5; bb=torch.rand(n,device="cuda"); out=torch.empty(m,n,device="cuda")
    def call():
        s=P(); lib.gc_stream_wrap(ctx,P(torch.cuda.current_stream().cuda_stream),C.byref(s))
        assert lib.gc_op_linear(s,P(out.data_ptr()),P(x.data_ptr()),P(w.data_ptr()),P(bb.data_ptr()),m,n,k,0)==0
        lib.gc_stream_destroy(s)
    cb=gpu_us(lambda: torch.addmm(bb,x,w.t(),out=out)); g=gpu_us(call)
    print(f"PDL={os.environ.get('GC_PDL','1')} {m:5d} {k:5d} {n:5d} cublas {cb:8.1f} gc {g:8.1f} ratio {g/cb:5.2f}", flush=True)
