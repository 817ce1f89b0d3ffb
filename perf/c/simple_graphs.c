/* The reduction of NVIDIA's simpleCudaGraphs sample, written from its
 * description, against graphcore and against the CUDA driver: an array of
 * N floats is copied to the device, summed by one kernel into one double
 * per block and by a second launch into one double, copied back, and
 * handed to a host node. Six graphs do it, each checked against the CPU's
 * sum after every launch:
 *   raw manual         cuGraphAdd{Memcpy,Memset,Kernel,Host}Node;
 *   raw captured       three streams forked and joined with events, the
 *                      host function by cuLaunchHostFunc;
 *   raw clone          cuGraphClone of the captured graph;
 *   graphcore manual   gc_graph_add_{memcpy,memset_elem,kernel,host};
 *   graphcore captured three gc streams forked and joined with gc events
 *                      (gc_event_record, gc_stream_wait_event), the host
 *                      function by gc_launch_host_func;
 *   graphcore clone    gc_graph_clone of the captured graph.
 * The memsets are of 4-byte elements on both sides, as in the sample. The
 * inputs are multiples of 1/1024, so every order of summation gives the
 * same double exactly: the sums must be equal, not close. Each graph's
 * launch+sync is timed, the six interleaved round by round; prints the
 * table last and writes $OUT/simple_graphs.json (or ./). Before timing, a
 * clone of the raw manual graph is adopted by gc_graph_wrap and run once,
 * and the raw captured graph is borrowed by it and read back (its node
 * count must be graphcore's captured one). Exit status 1 when a sum or a
 * count differs. Nothing steps outside graphcore on its side (issue 15,
 * item 5). */
#include "bench.h"

/* out[block] = sum of in[i] over the grid-stride elements of the block,
 * in double; in is f32 (is_f64 == 0) or f64. One kernel serves both steps.
 * PTX ISA 8.0 for sm_75 and later. */
static const char PTX[] =
    ".version 8.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".shared .align 8 .f64 gc_bench_block_sum;\n"
    "\n"
    ".visible .entry gc_bench_sum(\n"
    "    .param .u64 gc_bench_sum_in,\n"
    "    .param .u64 gc_bench_sum_out,\n"
    "    .param .u64 gc_bench_sum_n,\n"
    "    .param .u32 gc_bench_sum_is_f64\n"
    ")\n"
    "{\n"
    "    .reg .pred %p<4>;\n"
    "    .reg .b32 %r<6>;\n"
    "    .reg .b64 %rd<10>;\n"
    "    .reg .f32 %f<2>;\n"
    "    .reg .f64 %fd<4>;\n"
    "\n"
    "    ld.param.u64 %rd1, [gc_bench_sum_in];\n"
    "    ld.param.u64 %rd2, [gc_bench_sum_out];\n"
    "    ld.param.u64 %rd3, [gc_bench_sum_n];\n"
    "    ld.param.u32 %r5, [gc_bench_sum_is_f64];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    cvta.to.global.u64 %rd2, %rd2;\n"
    "    setp.ne.u32 %p3, %r5, 0;\n"
    "    mov.u32 %r1, %tid.x;\n"
    "    mov.u32 %r2, %ctaid.x;\n"
    "    mov.u32 %r3, %ntid.x;\n"
    "    mov.u32 %r4, %nctaid.x;\n"
    "    setp.eq.u32 %p1, %r1, 0;\n"
    "    @%p1 st.shared.f64 [gc_bench_block_sum], 0d0000000000000000;\n"
    "    bar.sync 0;\n"
    "    mul.wide.u32 %rd4, %r2, %r3;\n"
    "    cvt.u64.u32 %rd5, %r1;\n"
    "    add.u64 %rd4, %rd4, %rd5;\n" /* i = block * block size + thread */
    "    mul.wide.u32 %rd6, %r3, %r4;\n" /* stride = threads in the grid */
    "    mov.f64 %fd1, 0d0000000000000000;\n"
    "LOOP:\n"
    "    setp.ge.u64 %p2, %rd4, %rd3;\n"
    "    @%p2 bra DONE;\n"
    "    @%p3 bra LOAD_F64;\n"
    "    shl.b64 %rd7, %rd4, 2;\n"
    "    add.u64 %rd8, %rd1, %rd7;\n"
    "    ld.global.f32 %f1, [%rd8];\n"
    "    cvt.f64.f32 %fd2, %f1;\n"
    "    bra.uni NEXT;\n"
    "LOAD_F64:\n"
    "    shl.b64 %rd7, %rd4, 3;\n"
    "    add.u64 %rd8, %rd1, %rd7;\n"
    "    ld.global.f64 %fd2, [%rd8];\n"
    "NEXT:\n"
    "    add.f64 %fd1, %fd1, %fd2;\n"
    "    add.u64 %rd4, %rd4, %rd6;\n"
    "    bra.uni LOOP;\n"
    "DONE:\n"
    "    red.shared.add.f64 [gc_bench_block_sum], %fd1;\n"
    "    bar.sync 0;\n"
    "    @!%p1 bra END;\n"
    "    ld.shared.f64 %fd3, [gc_bench_block_sum];\n"
    "    mul.wide.u32 %rd9, %r2, 8;\n"
    "    add.u64 %rd9, %rd2, %rd9;\n"
    "    st.global.f64 [%rd9], %fd3;\n"
    "END:\n"
    "    ret;\n"
    "}\n";

#define N (1u << 24) /* floats, as in the sample */
#define BLOCKS 512u
#define THREADS 512u
#define ROUNDS 21 /* timed launches of each graph */

/* What the host node saw: the sum copied back, and how many times it ran. */
struct seen {
    const double *result_h;
    double sum;
    int calls;
};

static void record_sum(void *user_data) {
    struct seen *s = user_data;
    s->sum = *s->result_h;
    s->calls++;
}

/* The buffers and arguments all four graphs share. */
static float *in_h;
static double *result_h;
static void *in_d, *partial_d, *result_d;
static struct seen seen;
static uint64_t n_in = N, n_partial = BLOCKS;
static uint32_t f32_input = 0, f64_input = 1;
static void *args_first[] = {&in_d, &partial_d, &n_in, &f32_input};
static void *args_final[] = {&partial_d, &result_d, &n_partial, &f64_input};

static CUgraph raw_manual(CUfunction sum) {
    CUcontext cuctx;
    CU(cu.CtxGetCurrent(&cuctx));
    CUgraph g;
    CUgraphNode copy_in, clear_partial, clear_result, first, final, copy_back, host;
    CU(cu.GraphCreate(&g, 0));
    bench_memcpy3d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = BENCH_CU_MEMORYTYPE_HOST;
    c.srcHost = in_h;
    c.dstMemoryType = BENCH_CU_MEMORYTYPE_DEVICE;
    c.dstDevice = (CUdeviceptr)(uintptr_t)in_d;
    c.WidthInBytes = (size_t)N * sizeof(float);
    c.Height = c.Depth = 1;
    CU(cu.GraphAddMemcpyNode(&copy_in, g, NULL, 0, &c, cuctx));
    /* Memsets of 4-byte elements, as the sample's (two per double). */
    bench_memset_node_params m = {(CUdeviceptr)(uintptr_t)partial_d, 0, 0, 4, 2 * BLOCKS, 1};
    CU(cu.GraphAddMemsetNode(&clear_partial, g, NULL, 0, &m, cuctx));
    m.dst = (CUdeviceptr)(uintptr_t)result_d;
    m.width = 2;
    CU(cu.GraphAddMemsetNode(&clear_result, g, NULL, 0, &m, cuctx));
    bench_kernel_node_params k = {sum, BLOCKS, 1, 1, THREADS, 1, 1, 0, args_first, NULL, NULL, NULL};
    CUgraphNode deps_first[] = {copy_in, clear_partial};
    CU(cu.GraphAddKernelNode(&first, g, deps_first, 2, &k));
    k.gridDimX = 1;
    k.kernelParams = args_final;
    CUgraphNode deps_final[] = {first, clear_result};
    CU(cu.GraphAddKernelNode(&final, g, deps_final, 2, &k));
    memset(&c, 0, sizeof c);
    c.srcMemoryType = BENCH_CU_MEMORYTYPE_DEVICE;
    c.srcDevice = (CUdeviceptr)(uintptr_t)result_d;
    c.dstMemoryType = BENCH_CU_MEMORYTYPE_HOST;
    c.dstHost = result_h;
    c.WidthInBytes = sizeof(double);
    c.Height = c.Depth = 1;
    CU(cu.GraphAddMemcpyNode(&copy_back, g, &final, 1, &c, cuctx));
    bench_host_node_params h = {record_sum, &seen};
    CU(cu.GraphAddHostNode(&host, g, &copy_back, 1, &h));
    return g;
}

static CUgraph raw_captured(CUfunction sum, CUstream s[3], CUevent ev[3]) {
    CUgraph g;
    CU(cu.StreamBeginCapture(s[0], BENCH_CU_CAPTURE_THREAD_LOCAL));
    CU(cu.EventRecord(ev[0], s[0]));
    CU(cu.StreamWaitEvent(s[1], ev[0], 0));
    CU(cu.StreamWaitEvent(s[2], ev[0], 0));
    CU(cu.MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)in_d, in_h, (size_t)N * sizeof(float), s[0]));
    CU(cu.MemsetD32Async((CUdeviceptr)(uintptr_t)partial_d, 0, 2 * BLOCKS, s[1]));
    CU(cu.EventRecord(ev[1], s[1]));
    CU(cu.MemsetD32Async((CUdeviceptr)(uintptr_t)result_d, 0, 2, s[2]));
    CU(cu.EventRecord(ev[2], s[2]));
    CU(cu.StreamWaitEvent(s[0], ev[1], 0));
    CU(cu.LaunchKernel(sum, BLOCKS, 1, 1, THREADS, 1, 1, 0, s[0], args_first, NULL));
    CU(cu.StreamWaitEvent(s[0], ev[2], 0));
    CU(cu.LaunchKernel(sum, 1, 1, 1, THREADS, 1, 1, 0, s[0], args_final, NULL));
    CU(cu.MemcpyDtoHAsync(result_h, (CUdeviceptr)(uintptr_t)result_d, sizeof(double), s[0]));
    CU(cu.LaunchHostFunc(s[0], record_sum, &seen));
    CU(cu.StreamEndCapture(s[0], &g));
    return g;
}

static gc_graph *gc_manual(gc_context *ctx, gc_function *sum) {
    gc_graph *g;
    gc_node copy_in, clear_partial, clear_result, first, final, copy_back;
    gc_dim3 grid = {BLOCKS, 1, 1}, one = {1, 1, 1}, block = {THREADS, 1, 1};
    TRY(gc_graph_create(ctx, &g));
    TRY(gc_graph_add_memcpy(g, in_d, in_h, (size_t)N * sizeof(float), NULL, 0, &copy_in));
    TRY(gc_graph_add_memset_elem(g, partial_d, 0, 4, 2 * BLOCKS, NULL, 0, &clear_partial));
    TRY(gc_graph_add_memset_elem(g, result_d, 0, 4, 2, NULL, 0, &clear_result));
    gc_node deps_first[] = {copy_in, clear_partial};
    TRY(gc_graph_add_kernel(g, sum, grid, block, 0, args_first, deps_first, 2, &first));
    gc_node deps_final[] = {first, clear_result};
    TRY(gc_graph_add_kernel(g, sum, one, block, 0, args_final, deps_final, 2, &final));
    TRY(gc_graph_add_memcpy(g, result_h, result_d, sizeof(double), &final, 1, &copy_back));
    TRY(gc_graph_add_host(g, record_sum, &seen, &copy_back, 1, NULL));
    return g;
}

static gc_graph *gc_captured(gc_function *sum, gc_stream *s[3], gc_event *ev[3]) {
    gc_graph *g;
    gc_dim3 grid = {BLOCKS, 1, 1}, one = {1, 1, 1}, block = {THREADS, 1, 1};
    TRY(gc_capture_begin(s[0], NULL, GC_CAPTURE_THREAD_LOCAL));
    TRY(gc_event_record(ev[0], s[0], 0));
    TRY(gc_stream_wait_event(s[1], ev[0], 0));
    TRY(gc_stream_wait_event(s[2], ev[0], 0));
    TRY(gc_memcpy_async(s[0], in_d, in_h, (size_t)N * sizeof(float)));
    TRY(gc_memset_async_elem(s[1], partial_d, 0, 4, 2 * BLOCKS));
    TRY(gc_event_record(ev[1], s[1], 0));
    TRY(gc_memset_async_elem(s[2], result_d, 0, 4, 2));
    TRY(gc_event_record(ev[2], s[2], 0));
    TRY(gc_stream_wait_event(s[0], ev[1], 0));
    TRY(gc_launch(sum, s[0], grid, block, 0, args_first));
    TRY(gc_stream_wait_event(s[0], ev[2], 0));
    TRY(gc_launch(sum, s[0], one, block, 0, args_final));
    TRY(gc_memcpy_async(s[0], result_h, result_d, sizeof(double)));
    TRY(gc_launch_host_func(s[0], record_sum, &seen));
    TRY(gc_capture_end(s[0], &g));
    return g;
}

/* One launch of `e` on `s`: the host node must run once and see the CPU's
 * sum. Returns 1 when it does not (and says so). */
static int check_once(const char *what, gc_exec *e, gc_stream *s, double cpu) {
    int calls = seen.calls;
    *result_h = -1.0;
    TRY(gc_exec_launch(e, s));
    TRY(gc_stream_synchronize(s));
    if (seen.calls == calls + 1 && seen.sum == cpu) return 0;
    fprintf(stderr, "simple_graphs: %s: sum %.1f (host node ran %d times), CPU sum %.1f\n", what, seen.sum,
            seen.calls - calls, cpu);
    return 1;
}

enum graph { RAW_MANUAL, RAW_CAPTURED, RAW_CLONE, GC_MANUAL, GC_CAPTURED, GC_CLONE, GRAPHS };
#define KINDS 3 /* manual, captured, clone: raw and graphcore each */
static const char *const names[GRAPHS] = {"raw manual",       "raw captured",       "raw clone",
                                         "graphcore manual", "graphcore captured", "graphcore clone"};
static const char *const kinds[KINDS] = {"manual", "captured", "clone"};

int main(void) {
    gc_context *ctx = bench_start("simple_graphs");
    gc_stream *gs[3];
    gc_event *gev[3];
    CUstream rs[3];
    CUevent ev[3];
    gc_pool *pool;
    gc_module *module;
    gc_function *sum;
    CUfunction raw_sum;
    for (int i = 0; i < 3; i++) {
        TRY(gc_stream_create(ctx, &gs[i]));
        TRY(gc_event_create(ctx, GC_EVENT_DISABLE_TIMING, &gev[i]));
        CU(cu.StreamCreate(&rs[i], BENCH_CU_STREAM_NON_BLOCKING));
        CU(cu.EventCreate(&ev[i], BENCH_CU_EVENT_DISABLE_TIMING));
    }
    TRY(gc_pool_create(ctx, NULL, &pool));
    TRY(gc_module_load(ctx, PTX, sizeof PTX - 1, &module));
    TRY(gc_module_function(module, "gc_bench_sum", &sum));
    TRY(gc_function_raw(sum, (void **)&raw_sum));
    TRY(gc_host_alloc(ctx, (size_t)N * sizeof(float), (void **)&in_h));
    TRY(gc_host_alloc(ctx, sizeof(double), (void **)&result_h));
    TRY(gc_pool_alloc(pool, (size_t)N * sizeof(float), &in_d));
    TRY(gc_pool_alloc(pool, BLOCKS * sizeof(double), &partial_d));
    TRY(gc_pool_alloc(pool, sizeof(double), &result_d));
    seen.result_h = result_h;
    double cpu = 0.0;
    for (uint32_t i = 0; i < N; i++) {
        in_h[i] = (float)((i * 7919u) % 1024u) / 1024.0f;
        cpu += in_h[i];
    }

    CUgraph raw_graph[KINDS] = {raw_manual(raw_sum), raw_captured(raw_sum, rs, ev), NULL};
    CU(cu.GraphClone(&raw_graph[2], raw_graph[1]));
    gc_graph *gc_graph_of[KINDS] = {gc_manual(ctx, sum), gc_captured(sum, gs, gev), NULL};
    TRY(gc_graph_clone(gc_graph_of[1], &gc_graph_of[2]));
    CUgraphExec raw_exec[KINDS];
    gc_exec *gc_exec_of[KINDS];
    size_t nodes[KINDS];
    int wrong = 0;

    /* gc_graph_wrap: a raw graph adopted (graphcore destroys it) runs and
     * sums; one borrowed reads back as many nodes as graphcore captured. */
    {
        CUgraph raw_copy;
        gc_graph *adopted, *borrowed;
        gc_exec *e;
        size_t n_borrowed, n_captured;
        CU(cu.GraphClone(&raw_copy, raw_graph[0]));
        TRY(gc_graph_wrap(ctx, raw_copy, GC_GRAPH_WRAP_ADOPT, &adopted));
        TRY(gc_graph_instantiate(adopted, 0, &e));
        wrong += check_once("adopted raw graph", e, gs[0], cpu);
        TRY(gc_exec_destroy(e));
        TRY(gc_graph_destroy(adopted)); /* destroys raw_copy */
        TRY(gc_graph_wrap(ctx, raw_graph[1], GC_GRAPH_WRAP_BORROW, &borrowed));
        TRY(gc_graph_node_count(borrowed, &n_borrowed));
        TRY(gc_graph_node_count(gc_graph_of[1], &n_captured));
        TRY(gc_graph_destroy(borrowed)); /* raw_graph[1] stays ours */
        if (n_borrowed != n_captured) {
            fprintf(stderr, "simple_graphs: the borrowed raw captured graph has %zu nodes, graphcore's %zu\n",
                    n_borrowed, n_captured);
            wrong++;
        }
    }

    for (int i = 0; i < KINDS; i++) {
        CU(cu.GraphInstantiateWithFlags(&raw_exec[i], raw_graph[i], 0));
        TRY(gc_graph_instantiate(gc_graph_of[i], 0, &gc_exec_of[i]));
        TRY(gc_graph_node_count(gc_graph_of[i], &nodes[i]));
    }

    static double us[GRAPHS][ROUNDS];
    for (int r = -1; r < ROUNDS; r++) { /* one warm-up round */
        for (int k = 0; k < GRAPHS; k++) {
            int g = (k + (r < 0 ? 0 : r)) % GRAPHS; /* rotate the order */
            int calls = seen.calls;
            *result_h = -1.0;
            double t0 = bench_now_ns();
            if (g < GC_MANUAL) {
                CU(cu.GraphLaunch(raw_exec[g], rs[0]));
                CU(cu.StreamSynchronize(rs[0]));
            } else {
                TRY(gc_exec_launch(gc_exec_of[g - GC_MANUAL], gs[0]));
                TRY(gc_stream_synchronize(gs[0]));
            }
            double t1 = bench_now_ns();
            if (r >= 0) us[g][r] = (t1 - t0) / 1e3;
            if (seen.calls != calls + 1 || seen.sum != cpu) {
                fprintf(stderr, "simple_graphs: %s: sum %.1f (host node ran %d times), CPU sum %.1f\n", names[g],
                        seen.sum, seen.calls - calls, cpu);
                wrong++;
            }
        }
    }
    double med[GRAPHS];
    for (int g = 0; g < GRAPHS; g++) med[g] = bench_median(us[g], ROUNDS);

    FILE *json = bench_json_open(ctx, "simple_graphs.json", "simple_graphs");
    if (json)
        fprintf(json,
                "  \"method\": \"simpleCudaGraphs reduction of %u floats (%u blocks of %u threads), launch+sync, "
                "median of %d\",\n  \"cpu_sum\": %.1f,\n  \"sums_match\": %s,\n  \"units\": \"us\",\n"
                "  \"rows\": [\n",
                N, BLOCKS, THREADS, ROUNDS, cpu, wrong ? "false" : "true");
    printf("simpleCudaGraphs reduction, %u floats, CPU sum %.1f: %s\n", N, cpu,
           wrong ? "SUMS DIFFER" : "all six graphs give the CPU's sum");
    printf("%-10s %6s %12s %14s %8s\n", "graph", "nodes", "raw us", "graphcore us", "ratio");
    for (int i = 0; i < KINDS; i++) {
        const char *kind = kinds[i];
        double raw = med[RAW_MANUAL + i], ours = med[GC_MANUAL + i];
        printf("%-10s %6zu %12.1f %14.1f %7.3fx\n", kind, nodes[i], raw, ours, ours / raw);
        if (json)
            fprintf(json,
                    "    {\"graph\": \"%s\", \"nodes\": %zu, \"raw_launch_sync_us\": %.2f, "
                    "\"graphcore_launch_sync_us\": %.2f, \"ratio\": %.4f}%s\n",
                    kind, nodes[i], raw, ours, ours / raw, i == KINDS - 1 ? "" : ",");
    }
    if (json) {
        fprintf(json, "  ]\n}\n");
        fclose(json);
    }

    for (int i = 0; i < KINDS; i++) {
        CU(cu.GraphExecDestroy(raw_exec[i]));
        CU(cu.GraphDestroy(raw_graph[i]));
        TRY(gc_exec_destroy(gc_exec_of[i]));
        TRY(gc_graph_destroy(gc_graph_of[i]));
    }
    TRY(gc_pool_free(pool, in_d));
    TRY(gc_pool_free(pool, partial_d));
    TRY(gc_pool_free(pool, result_d));
    TRY(gc_host_free(ctx, in_h));
    TRY(gc_host_free(ctx, result_h));
    TRY(gc_function_destroy(sum));
    TRY(gc_module_destroy(module));
    TRY(gc_pool_destroy(pool));
    for (int i = 0; i < 3; i++) {
        CU(cu.EventDestroy(ev[i]));
        TRY(gc_event_destroy(gev[i]));
        CU(cu.StreamDestroy(rs[i]));
        TRY(gc_stream_destroy(gs[i]));
    }
    TRY(gc_context_destroy(ctx));
    return wrong ? 1 : 0;
}
