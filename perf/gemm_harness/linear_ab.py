"""gc_op_linear vs cuBLAS (torch.addmm, TF32 off) on chosen shapes, for A/B runs of two libraries or settings
alternated in separate processes (perf/TUNING.md: "GEMMs and programmatic dependent launch", "Weights
prefetched ahead in the cluster kernel"). Run on the GPU machine, e.g.
  for p in 1 0 1 0; do GC_PDL=$p LIBGRAPHCORE=stage/lib/libgraphcore.so python3 perf/gemm_harness/linear_ab.py; done
  LIBGRAPHCORE=before/libgraphcore.so python3 perf/gemm_harness/linear_ab.py 64x4096x4096 128x4096x4096
Shapes are MxKxN (x is M x K, W is N x K); without any, the PDL study's. Prints one line per shape: microseconds
per call in graphs of up to 20 calls (median of 7 replays) and the largest error of an output vs float64 over the
sum of |products|; with $OUT set, also appends the lines as JSON to $OUT/linear_ab.jsonl."""
import ctypes as C, json, os, statistics, sys, torch
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
shapes=[tuple(int(v) for v in s.split("x")) for s in sys.argv[1:]] or [
    (256,1024,4096),(256,4096,4096),(1024,1024,1024),(1024,4096,1024),(512,1024,512),(2048,1024,512),(512,1024,1024),(1024,4096,4096)]
tag=f"lib={os.environ['LIBGRAPHCORE']} PDL={os.environ.get('GC_PDL','1')}"
for m,k,n in shapes:
    x=torch.rand(m,k,device="cuda")*2-1; w=(torch.rand(n,k,device="cuda")*2-1)/k**.5; bb=torch.rand(n,device="cuda"); out=torch.empty(m,n,device="cuda")
    def call():
        s=P(); lib.gc_stream_wrap(ctx,P(torch.cuda.current_stream().cuda_stream),C.byref(s))
        assert lib.gc_op_linear(s,P(out.data_ptr()),P(x.data_ptr()),P(w.data_ptr()),P(bb.data_ptr()),m,n,k,0)==0
        lib.gc_stream_destroy(s)
    out.fill_(float("nan")); call(); torch.cuda.synchronize()
    ref=torch.addmm(bb.double(),x.double(),w.double().t()); mag=torch.addmm(bb.double().abs(),x.double().abs(),w.double().abs().t())
    err=((out.double()-ref).abs()/mag).max().item(); del ref, mag
    cb=gpu_us(lambda: torch.addmm(bb,x,w.t(),out=out)); g=gpu_us(call)
    print(f"{tag} {m:5d} {k:5d} {n:5d} cublas {cb:8.1f} gc {g:8.1f} ratio {g/cb:5.2f} err {err:.1e}", flush=True)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "linear_ab.jsonl"), "a") as f:
            f.write(json.dumps({"lib": os.environ["LIBGRAPHCORE"], "pdl": os.environ.get("GC_PDL", "1"), "m": m, "k": k,
                                "n": n, "cublas_us": cb, "graphcore_us": g, "err": err,
                                "gpu": torch.cuda.get_device_name(0)}) + "\n")
