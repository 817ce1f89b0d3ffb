/* Where the host's time goes in graph calls on the real driver, sampled:
 * which share of building, capturing and updating a graph, and of pool
 * pairs, is graphcore's own code, the driver's (libcuda), or the C
 * library's (the driver's malloc, free and locks). The no-op driver
 * (perf/noop_driver) measures graphcore's instructions alone; this
 * measures them among the driver's, on the machine the ratios come from.
 *
 * Method: a timer aimed at this thread (CLOCK_MONOTONIC, every 100 us)
 * raises SIGPROF; the handler records the interrupted program counter
 * and a short backtrace. Phases of one operation each (raw CUDA and
 * graphcore alternating, 3 rounds of PROF_SECS / 3 seconds) run in turn;
 * identical stacks are counted once. The one-node phases (build1,
 * capture1, instantiate1, each with its destroy) price making graph and
 * exec objects. `host_profile cold` sweeps 4 MiB of memory before each
 * operation, neither timed nor sampled, so that each call finds its code
 * and data out of the L2 as between heavy driver calls, and times each
 * operation alone. Writes $OUT/host_profile.txt (cold: host_profile_cold.txt):
 *   M <date> <CUDA driver version> <GPU name>           the machine
 *   O <index> <object> <load base> <lowest> <highest>   loaded objects
 *   R <phase> <round> <operations> <ns per operation>  loop timings
 *   S <count> <phase> <object>:<offset> ...             stacks, leaf first
 * The offsets are symbolized where the unstripped library is:
 *   python3 perf/host_profile.py <host_profile.txt> target/release/libgraphcore.so
 * which writes perf/results/host_profile.json (the table in docs/results.md). */
#define _GNU_SOURCE
#include "bench.h"
#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define LEN 100 /* nodes per graph, launches per capture */
#define POOL_PAIRS 1000
#define MAX_SAMPLES 400000
#define DEPTH 8

/* One sample: its phase, its depth and its frames (leaf first). */
typedef struct {
    uintptr_t frame[DEPTH];
    int phase, depth;
} sample;
static sample samples[MAX_SAMPLES];
static volatile sig_atomic_t sample_count;
static volatile sig_atomic_t current_phase = -1;

/* The interrupted program counter. */
static uintptr_t interrupted_pc(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static void on_sample(int sig, siginfo_t *info, void *ucv) {
    (void)sig;
    (void)info;
    int phase = current_phase;
    if (phase < 0 || sample_count >= MAX_SAMPLES) return;
    sample *s = &samples[sample_count++];
    void *bt[DEPTH + 2];
    /* backtrace() from a signal handler: its unwinder is loaded before
     * the timer starts (main), and this thread only runs the phases. */
    int d = backtrace(bt, DEPTH + 2);
    s->frame[0] = interrupted_pc(ucv);
    s->depth = 1;
    for (int j = 2; j < d && s->depth < DEPTH; j++) s->frame[s->depth++] = (uintptr_t)bt[j];
    s->phase = phase;
}

static gc_context *ctx;
static gc_stream *stream;
static gc_function *fn;
static CUstream raw_stream;
static CUfunction raw_fn;
static gc_pool *pool;
static uint32_t tag = 1;
static void *args[] = {&tag};

static void raw_build_len(int len) { CU(cu.GraphDestroy(bench_raw_chain(raw_fn, args, len))); }

static void gc_build_len(int len) { TRY(gc_graph_destroy(bench_build_chain(ctx, fn, len, tag))); }

static CUgraph raw_captured_len(uint32_t t, int len) {
    void *a[] = {&t};
    CUgraph g;
    CU(cu.StreamBeginCapture(raw_stream, BENCH_CU_CAPTURE_THREAD_LOCAL));
    for (int i = 0; i < len; i++) CU(cu.LaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, a, NULL));
    CU(cu.StreamEndCapture(raw_stream, &g));
    return g;
}

static gc_graph *gc_captured_len(uint32_t t, int len) { return bench_capture_chain(stream, fn, len, t); }

static CUgraph raw_captured(uint32_t t) { return raw_captured_len(t, LEN); }

static gc_graph *gc_captured(uint32_t t) { return gc_captured_len(t, LEN); }

static void raw_capture(void) { CU(cu.GraphDestroy(raw_captured(1))); }

static void gc_capture(void) { TRY(gc_graph_destroy(gc_captured(1))); }

static void raw_build(void) { raw_build_len(LEN); }

static void gc_build(void) { gc_build_len(LEN); }

/* The one-node forms, where graph_perf_scaling finds graphcore's making of
 * its graph and exec objects above the checked side (issue 15): a graph
 * created with one node and destroyed; one captured and destroyed; a
 * captured one-node graph (gc_g1, raw_g1) instantiated and its exec
 * destroyed. */
static CUgraph raw_g1;
static gc_graph *gc_g1;

static void raw_build1(void) { raw_build_len(1); }

static void gc_build1(void) { gc_build_len(1); }

static void raw_capture1(void) { CU(cu.GraphDestroy(raw_captured_len(1, 1))); }

static void gc_capture1(void) { TRY(gc_graph_destroy(gc_captured_len(1, 1))); }

static void raw_instantiate1(void) {
    CUgraphExec e;
    CU(cu.GraphInstantiateWithFlags(&e, raw_g1, 0));
    CU(cu.GraphExecDestroy(e));
}

static void gc_instantiate1(void) {
    gc_exec *e;
    TRY(gc_graph_instantiate(gc_g1, 0, &e));
    TRY(gc_exec_destroy(e));
}

/* Two graphs whose every node differs, and an exec of the first. */
static CUgraph raw_g[2];
static CUgraphExec raw_e;
static gc_graph *gc_g[2];
static gc_exec *gc_e;

static void raw_update(void) {
    bench_update_info info;
    CU(cu.GraphExecUpdate(raw_e, raw_g[1], &info));
    CU(cu.GraphExecUpdate(raw_e, raw_g[0], &info));
}

static void gc_update(void) {
    TRY(gc_exec_update(gc_e, gc_g[1]));
    TRY(gc_exec_update(gc_e, gc_g[0]));
}

static void gc_pool_pairs(void) {
    for (int i = 0; i < POOL_PAIRS; i++) {
        void *p;
        TRY(gc_pool_alloc(pool, 4096, &p));
        TRY(gc_pool_free(pool, p));
    }
}

/* Each phase: its name, one operation, and what the ns are per. */
static const struct {
    const char *name;
    void (*op)(void);
    int per;
} phases[] = {
    {"raw_build", raw_build, LEN},     {"gc_build", gc_build, LEN},     {"raw_capture", raw_capture, LEN},
    {"gc_capture", gc_capture, LEN},   {"raw_update", raw_update, 2},   {"gc_update", gc_update, 2},
    {"gc_pool", gc_pool_pairs, POOL_PAIRS}, {"raw_build1", raw_build1, 1},     {"gc_build1", gc_build1, 1},
    {"raw_capture1", raw_capture1, 1},      {"gc_capture1", gc_capture1, 1}, {"raw_instantiate1", raw_instantiate1, 1},
    {"gc_instantiate1", gc_instantiate1, 1},
};
#define PHASES ((int)(sizeof phases / sizeof phases[0]))

/* Loaded objects: name, load base and address range. */
typedef struct {
    char name[256];
    uintptr_t base, lo, hi;
} object;
static object objects[512];
static int object_count;

static int add_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (object_count >= 512) return 0;
    object *o = &objects[object_count++];
    o->base = info->dlpi_addr;
    o->lo = UINTPTR_MAX;
    o->hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < o->lo) o->lo = a;
        if (a + ph->p_memsz > o->hi) o->hi = a + ph->p_memsz;
    }
    snprintf(o->name, sizeof o->name, "%s", info->dlpi_name[0] ? info->dlpi_name : "(program)");
    return 0;
}

static int object_of(uintptr_t a) {
    for (int j = 0; j < object_count; j++)
        if (a >= objects[j].lo && a < objects[j].hi) return j;
    return -1;
}

static int by_stack(const void *pa, const void *pb) {
    const sample *a = pa, *b = pb;
    if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
    if (a->depth != b->depth) return a->depth < b->depth ? -1 : 1;
    for (int k = 0; k < a->depth; k++)
        if (a->frame[k] != b->frame[k]) return a->frame[k] < b->frame[k] ? -1 : 1;
    return 0;
}

/* Cold mode: what the caches hold when a call comes between heavy driver
 * calls, as in graph_perf_scaling's rounds. Before each operation (not
 * timed, not sampled) a sweep writes every line of 4 MiB, past the L2. */
static int cold;
static unsigned char *sweep_buf;
#define SWEEP_BYTES (4u << 20)

static void sweep(void) {
    for (size_t i = 0; i < SWEEP_BYTES; i += 64) sweep_buf[i]++;
}

int main(int argc, char **argv) {
    cold = argc > 1 && !strcmp(argv[1], "cold");
    if (argc > 1 && !cold) {
        fprintf(stderr, "usage: host_profile [cold]\n");
        return 2;
    }
    sweep_buf = calloc(SWEEP_BYTES, 1);
    if (!sweep_buf) return 1;
    ctx = bench_start("host_profile");
    gc_module *module = bench_empty_kernel(ctx, &stream, &fn, &raw_stream, &raw_fn);
    TRY(gc_pool_create(ctx, NULL, &pool));
    for (int i = 0; i < 2; i++) {
        raw_g[i] = raw_captured(1 + (uint32_t)i);
        gc_g[i] = gc_captured(1 + (uint32_t)i);
    }
    raw_g1 = raw_captured_len(1, 1);
    gc_g1 = gc_captured_len(1, 1);
    CU(cu.GraphInstantiateWithFlags(&raw_e, raw_g[0], 0));
    TRY(gc_graph_instantiate(gc_g[0], 0, &gc_e));
    void *warm[4];
    backtrace(warm, 4);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    /* A wall-clock timer aimed at this thread: POSIX CPU-time timers tick
     * only at the scheduler's rate, and the driver's own threads must not
     * take the signal. */
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif
    sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) {
        perror("host_profile: timer_create");
        return 1;
    }
    struct itimerspec every = {{0, 100000}, {0, 100000}};
    if (timer_settime(timer, 0, &every, NULL) != 0) {
        perror("host_profile: timer_settime");
        return 1;
    }

    const char *secs_env = getenv("PROF_SECS");
    double secs = secs_env ? atof(secs_env) : 3.0;
    const char *out = getenv("OUT");
    char path[4096];
    snprintf(path, sizeof path, "%s/host_profile%s.txt", out ? out : ".", cold ? "_cold" : "");
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "host_profile: cannot write %s\n", path);
        return 1;
    }
    gc_device_info info;
    char date[32];
    bench_machine(ctx, &info, date);
    fprintf(f, "M %s %d %s\n", date, info.driver_version, info.name);
    printf("host_profile%s: %d phases, 3 rounds of %.1f s each, a sample every 100 us\n", cold ? " (cold)" : "",
           PHASES, secs / 3);
    for (int round = 0; round < 3; round++)
        for (int p = 0; p < PHASES; p++) {
            long ops = 0;
            double t0 = bench_now_ns(), busy = 0;
            if (!cold) current_phase = p;
            while (bench_now_ns() - t0 < secs / 3 * 1e9) {
                if (cold) {
                    sweep(); /* not sampled, not timed */
                    double a = bench_now_ns();
                    current_phase = p;
                    phases[p].op();
                    current_phase = -1;
                    busy += bench_now_ns() - a;
                } else {
                    phases[p].op();
                }
                ops++;
            }
            current_phase = -1;
            if (!cold) busy = bench_now_ns() - t0;
            double ns = busy / ((double)ops * phases[p].per);
            fprintf(f, "R %s %d %ld %.1f\n", phases[p].name, round, ops, ns);
            printf("  %-12s round %d: %8.1f ns per %s\n", phases[p].name, round, ns,
                   phases[p].per == LEN ? "node" : phases[p].per == 2 ? "update" : phases[p].per == 1 ? "op" : "pair");
        }
    timer_delete(timer);
    dl_iterate_phdr(add_object, NULL);
    for (int i = 0; i < object_count; i++)
        fprintf(f, "O %d %s %lx %lx %lx\n", i, objects[i].name, (unsigned long)objects[i].base,
                (unsigned long)objects[i].lo, (unsigned long)objects[i].hi);
    int n = sample_count;
    qsort(samples, (size_t)n, sizeof *samples, by_stack);
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && by_stack(&samples[i], &samples[j]) == 0) j++;
        fprintf(f, "S %d %s", j - i, phases[samples[i].phase].name);
        for (int k = 0; k < samples[i].depth; k++) {
            uintptr_t a = samples[i].frame[k];
            int o = object_of(a);
            fprintf(f, " %d:%lx", o, (unsigned long)(o >= 0 ? a - objects[o].base : a));
        }
        fprintf(f, "\n");
        i = j;
    }
    fclose(f);
    free(sweep_buf);
    printf("host_profile: %d samples in %s\n", n, path);
    TRY(gc_exec_destroy(gc_e));
    CU(cu.GraphExecDestroy(raw_e));
    for (int i = 0; i < 2; i++) {
        TRY(gc_graph_destroy(gc_g[i]));
        CU(cu.GraphDestroy(raw_g[i]));
    }
    TRY(gc_graph_destroy(gc_g1));
    CU(cu.GraphDestroy(raw_g1));
    TRY(gc_pool_destroy(pool));
    TRY(gc_module_destroy(module));
    TRY(gc_stream_destroy(stream));
    return 0;
}
