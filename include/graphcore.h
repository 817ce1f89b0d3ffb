/*
 * graphcore: a CUDA Graph runtime - the C API of libgraphcore.so.
 *
 * Generated from ffi/ by cbindgen (ffi/cbindgen.toml) and tests/header.rs,
 * which groups the items into sections; do not edit. Regenerate with
 * `make header`.
 *
 * Conventions: every fallible call returns gc_status; results go through
 * out-parameters, written only on success; gc_last_error() says what went
 * wrong. Each function's doc has an `Errors:` paragraph listing the
 * statuses it returns and when; `Errors: common, ...` includes the common
 * errors stated once in the status section below (or in the section's own
 * banner). Handles are opaque and checked: NULL is
 * GC_ERROR_INVALID_ARGUMENT, a destroyed handle or one of another kind is
 * GC_ERROR_INVALID_HANDLE. gc_<thing>_destroy(NULL) is a no-op. Option and
 * result structs start with size_t struct_size: set it to sizeof the
 * struct; NULL options mean defaults.
 *
 * Sections, by object: status and version, device and context, stream,
 * event, pool, allocator, host memory and copies, module and function,
 * launch, capture, graph, conditional nodes, exec, runner, cache. Each opens
 * with a banner; each handle type's doc states its ownership and thread safety
 * (which calls may run at once on one handle, and which the caller must
 * serialize). The built-in ops (gc_op_*) and the list of built-in kernels
 * are in graphcore_ops.h, which this header includes at its end.
 */

#ifndef GRAPHCORE_H
#define GRAPHCORE_H

#include <stddef.h>
#include <stdint.h>

/* The handle types, declared first so every section may name them (each is
 * documented in its own section). */
struct gc_cache;
struct gc_context;
struct gc_event;
struct gc_exec;
struct gc_function;
struct gc_graph;
struct gc_module;
struct gc_pool;
struct gc_runner;
struct gc_stream;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/* ==========================================================================
 * Status and version
 *
 * Status codes. Every fallible call returns a gc_status; results go
 * through out-parameters, written only on success. gc_last_error() gives
 * the calling thread's message for its last failure (which call, which
 * argument, the CUDA error's name and text), gc_last_cuda_result() the
 * CUresult behind it.
 *
 * Errors lists: each function's doc has a paragraph starting with
 * `Errors:` naming the statuses it returns besides GC_SUCCESS, each with
 * when. One status is left out of those lists because any call may return
 * it: GC_ERROR_PANIC, a bug inside graphcore caught at the boundary (please
 * report it; the library stays usable).
 *
 * Common errors: a list that starts with `common` ("Errors: common, and
 * ...") also holds these, written once here instead of in every function:
 * GC_ERROR_INVALID_ARGUMENT (a handle is NULL, or a pointer argument that
 * the function's doc does not allow to be NULL; or two handles are of
 * different contexts), GC_ERROR_INVALID_HANDLE (a handle was destroyed, is
 * of another kind, or was never valid), GC_ERROR_CUDA (a driver call
 * failed; gc_last_cuda_result() gives its CUresult), GC_ERROR_DEVICE_FAULT
 * (work on the device faulted, now or before: see below). A section whose
 * banner has a `Common errors:` paragraph of its own (the built-in ops, in
 * graphcore_ops.h) means that one instead. A list that does not start
 * with `common` is complete as written.
 *
 * Which error wins when two apply: a call stops at its first failing check
 * and returns that status. It first checks what needs no object: NULL
 * pointers, unknown flags, values wrong in themselves (a size of 0, an
 * unknown type) and its handles (destroyed, of another kind):
 * GC_ERROR_INVALID_ARGUMENT or GC_ERROR_INVALID_HANDLE, in no promised
 * order among them. Only then come the checks that need the
 * objects or the driver (handles of one context, a node of the graph, a
 * range against its memory, the objects' state, the driver's version and
 * its own refusals), in the order the work meets them. So a bad pointer,
 * flag or handle is always reported before GC_ERROR_INVALID_STATE,
 * GC_ERROR_NOT_SUPPORTED, GC_ERROR_CAPTURE, GC_ERROR_OUT_OF_MEMORY or
 * GC_ERROR_CUDA.
 *
 * Wrong `struct_size`: an option or result struct whose struct_size is
 * smaller than the struct's first version, or more than 4096 bytes larger
 * than this library's struct, is GC_ERROR_INVALID_ARGUMENT and nothing is
 * read or written. A larger struct from a newer header is accepted when
 * the bytes this library does not know are zero (options) and gets only
 * the fields it knows written (results).
 *
 * After GC_ERROR_DEVICE_FAULT (a kernel faulted: illegal address, trap,
 * misaligned access, ...): CUDA makes the error sticky. The device's
 * primary context, which graphcore shares with the CUDA runtime in the
 * process, is unusable, and every later call that reaches it returns
 * GC_ERROR_DEVICE_FAULT again. graphcore cannot repair this: it does not
 * reset the primary context (that would pull memory, streams and modules
 * from under every other user of it in the process), and
 * gc_context_create on that device returns the same broken context while
 * any graphcore object of the device is alive. What to do: stop
 * submitting work, destroy the graphcore objects of that device (destroys
 * neither hang nor crash; they may report the fault), and restart the
 * process: CUDA documents that after a sticky error the process must be
 * relaunched to use CUDA again.
 *
 * Thread safety: all calls of this section may run concurrently from any
 * threads; the last error is per thread.
 *
 * Library version: the GC_VERSION_* macros, gc_version() and the SONAME
 * (libgraphcore.so.MAJOR) agree (a test checks it).
 * ========================================================================== */

/**
 * The result of every fallible call. The values are stable: new codes are
 * only ever added, never renumbered.
 */
typedef enum gc_status {
    /**
     * The call succeeded.
     */
    GC_SUCCESS = 0,
    /**
     * An argument was NULL, zero, too large, misaligned or inconsistent.
     */
    GC_ERROR_INVALID_ARGUMENT = 1,
    /**
     * A handle was destroyed, is of another kind, or was never valid.
     */
    GC_ERROR_INVALID_HANDLE = 2,
    /**
     * Device or pinned host memory ran out, or a pool reached its max_bytes.
     */
    GC_ERROR_OUT_OF_MEMORY = 3,
    /**
     * No CUDA driver (libcuda.so) could be loaded on this machine.
     */
    GC_ERROR_NO_DRIVER = 4,
    /**
     * The driver loaded but the machine has no CUDA device. (A device
     * ordinal out of range is GC_ERROR_INVALID_ARGUMENT.)
     */
    GC_ERROR_NO_DEVICE = 5,
    /**
     * The driver or the device lacks a feature this call needs.
     */
    GC_ERROR_NOT_SUPPORTED = 6,
    /**
     * A CUDA call failed; gc_last_cuda_result() gives its CUresult.
     */
    GC_ERROR_CUDA = 7,
    /**
     * A stream capture was invalidated, left unjoined, or misused.
     */
    GC_ERROR_CAPTURE = 8,
    /**
     * The call is not valid in the object's current state.
     */
    GC_ERROR_INVALID_STATE = 9,
    /**
     * A name (built-in kernel, function of a module) was not found.
     */
    GC_ERROR_NOT_FOUND = 10,
    /**
     * gc_exec_update was given a graph of another topology, or an update
     * or gc_exec_set_kernel_args would change a fused chain.
     */
    GC_ERROR_UPDATE_MISMATCH = 11,
    /**
     * A runner was asked for more rows than its largest bucket holds, or
     * has no bucket yet.
     */
    GC_ERROR_NO_BUCKET = 12,
    /**
     * A kernel faulted; the device context is unusable (sticky CUDA error):
     * see "After GC_ERROR_DEVICE_FAULT" in the status section.
     */
    GC_ERROR_DEVICE_FAULT = 13,
    /**
     * A panic inside graphcore was caught; the library is in a safe state.
     */
    GC_ERROR_PANIC = 14,
} gc_status;

/**
 * The name of a status constant ("GC_ERROR_INVALID_ARGUMENT"), or
 * "GC_UNKNOWN_STATUS" for a value that is not a gc_status. The string is
 * static; never free it.
 * Errors: none.
 */
const char *gc_status_name(int status);

/**
 * This thread's message for its last failed graphcore call: the function,
 * what was wrong (which argument, which sizes), and for CUDA failures the
 * CUDA error's name and text. Empty if no call has failed on this thread.
 * The string belongs to graphcore and stays valid until the next failing
 * call on this thread; never free it. A successful call leaves it as it was.
 * Errors: none.
 */
const char *gc_last_error(void);

/**
 * The raw CUresult behind this thread's last failure (0, CUDA_SUCCESS, when
 * the last failure did not come from CUDA).
 * Errors: none.
 */
int gc_last_cuda_result(void);

/**
 * Major version; the SONAME is libgraphcore.so.MAJOR.
 */
#define GC_VERSION_MAJOR 0

/**
 * Minor version: additions that keep the ABI.
 */
#define GC_VERSION_MINOR 1

/**
 * Patch version: fixes.
 */
#define GC_VERSION_PATCH 0

/**
 * The library's version as major * 10000 + minor * 100 + patch, to compare
 * with the GC_VERSION_* macros of the header a program was built with.
 * Needs no driver.
 * Errors: none.
 */
uint32_t gc_version(void);

/* ==========================================================================
 * Device and context
 *
 * Devices and contexts. A gc_context is a device's primary context, the
 * one the CUDA runtime API uses too, so device pointers, streams
 * (cudaStream_t) and functions (cudaFunction_t) pass freely between
 * graphcore and runtime-API code in the same process.
 *
 * The calling thread's current context: every graphcore call that reaches
 * the driver first makes its object's context current on the calling
 * thread (cuCtxSetCurrent) and leaves it current when it returns. The
 * exceptions are launches on a non-NULL stream and captures, which run in
 * the stream's context whichever is current: gc_exec_launch,
 * gc_runner_replay, gc_launch, gc_capture_begin and gc_capture_end need no
 * current context and leave the thread's as it was, and so do the kernel
 * launches of the gc_op_* calls (a gc_op_* call still makes its context
 * current for what else it asks of the driver: the first one on a context
 * loads the built-in kernels). gc_capture_begin, gc_capture_begin_into and
 * gc_capture_end leave the thread's current context as it was in every
 * case, failures included: a context they make current for their own
 * calls (capturing into a conditional body, cleaning up a failed capture)
 * is put back before they return (none, if none was current). Do not rely
 * on a launch or a capture to make a device current. (Checked on CUDA 13
 * drivers: a driver that still wants a current context for these makes
 * them fail with GC_ERROR_CUDA on a thread where none is; make one current
 * first, e.g. with any call that binds.) For the runtime API a call that binds
 * is as if it ran cudaSetDevice on its device. An
 * engine that drives several GPUs from one thread with cudaSetDevice must
 * call cudaSetDevice again after a graphcore call on another device's
 * objects, before runtime calls that use the current device (cudaMalloc,
 * kernel launches, cudaStreamCreate, library handles). Code that keeps one
 * device per thread, or passes explicit streams everywhere, is unaffected.
 * ========================================================================== */

/**
 * A device's primary context (shared with the CUDA runtime API).
 *
 * Ownership: gc_context_create returns a handle the caller destroys with
 * gc_context_destroy. Everything made from it (streams, pools, modules,
 * functions, graphs, execs, runners) holds the context too, so
 * the handle may be destroyed before them; the primary context is released
 * when the last of them goes, and with it any gc_host_alloc memory not
 * freed. Two handles of one device share one state.
 *
 * Memory a context keeps: beyond the objects made from it, a device's
 * context holds graphcore's built-in kernels, loaded on first use (the
 * conditional setters, linked with libcudadevrt, on the first use of
 * one), and the kernels fusion generated (GC_INSTANTIATE_FUSE_ELEMENTWISE)
 * for execs that are gone, until the next gc_context_synchronize (or
 * another call that waits for the whole device). CUDA keeps memory of its
 * own per context too (such as local memory sized for the largest kernel
 * run). So free device memory read after destroying objects, with a
 * context of the device alive, stays below what it was before their first
 * use, by a steady amount (a few MiB), not one that grows. All of it goes
 * when the device's last gc_context handle and every object made from it
 * are destroyed: graphcore unloads its kernels and releases its retain of
 * the primary context (CUDA frees the context's own memory once nothing
 * else, such as the CUDA runtime, retains it).
 *
 * Thread safety: every call may run concurrently with any other on the
 * same handle, except gc_context_destroy, which must not race with other
 * calls on that handle (objects made from it are unaffected).
 */
typedef struct gc_context gc_context;

/**
 * Facts about a context's device, filled in by gc_context_info.
 */
typedef struct gc_device_info {
    /**
     * Set to sizeof(gc_device_info) before the call.
     */
    size_t struct_size;
    /**
     * Device name, NUL-terminated.
     */
    char name[256];
    /**
     * Device ordinal.
     */
    int ordinal;
    /**
     * Compute capability, major part.
     */
    int cc_major;
    /**
     * Compute capability, minor part.
     */
    int cc_minor;
    /**
     * Number of multiprocessors.
     */
    int sm_count;
    /**
     * Total device memory in bytes.
     */
    uint64_t total_bytes;
    /**
     * Free device memory in bytes at the time of the call.
     */
    uint64_t free_bytes;
    /**
     * The driver's CUDA version, 1000*major + 10*minor (12040 is 12.4).
     */
    int driver_version;
} gc_device_info;

/**
 * Writes the number of CUDA devices to *count. Needs no context; valid
 * ordinals for gc_context_create are 0 to *count - 1.
 * Errors: GC_ERROR_INVALID_ARGUMENT (count is NULL), GC_ERROR_NO_DRIVER (no
 * libcuda.so; never a crash), GC_ERROR_NOT_SUPPORTED (a driver older than
 * CUDA 12.0), GC_ERROR_NO_DEVICE (the driver loaded but found no device),
 * GC_ERROR_CUDA (cuInit or cuDeviceGetCount failed otherwise).
 */
enum gc_status gc_device_count(int *count);

/**
 * Creates a context on device `device` (its primary context, retained).
 * The caller destroys the handle with gc_context_destroy.
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx is NULL, or device is negative or
 * not below gc_device_count), GC_ERROR_NO_DRIVER (no libcuda.so),
 * GC_ERROR_NOT_SUPPORTED (a driver older than CUDA 12.0), GC_ERROR_NO_DEVICE
 * (the machine has no CUDA device), GC_ERROR_OUT_OF_MEMORY (too many live
 * handles), GC_ERROR_CUDA (the driver refused the device or its context),
 * GC_ERROR_DEVICE_FAULT (the device's context is broken by an earlier fault).
 */
enum gc_status gc_context_create(int device, struct gc_context **ctx);

/**
 * Fills *info (set info->struct_size = sizeof(gc_device_info) first).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a wrong struct_size),
 * GC_ERROR_DEVICE_FAULT (reading free memory failed).
 */
enum gc_status gc_context_info(struct gc_context *ctx, struct gc_device_info *info);

/**
 * Waits for all work on the context's device. While a graphcore capture is
 * open in the context this is GC_ERROR_INVALID_STATE and nothing happens:
 * a device-wide synchronize from any thread invalidates every capture on
 * the device (synchronize the streams you need instead).
 * Errors: common, and GC_ERROR_INVALID_STATE (a graphcore capture is open in
 * the context), GC_ERROR_DEVICE_FAULT (work on the device faulted),
 * GC_ERROR_CUDA (another failure of the wait).
 */
enum gc_status gc_context_synchronize(struct gc_context *ctx);

/**
 * Drops this handle. Objects made from the context (streams, pools,
 * modules, graphs) keep it alive until they are destroyed. NULL is a no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (ctx already destroyed, or not a context).
 */
enum gc_status gc_context_destroy(struct gc_context *ctx);

/* ==========================================================================
 * Stream
 *
 * Streams: graphcore's own (gc_stream_create) or borrowed CUstream /
 * cudaStream_t handles (gc_stream_wrap). Work on a stream runs in the
 * order it was enqueued; gc_stream_raw hands the CUstream to your own
 * kernels and libraries, and gc_stream_wait_stream orders two streams
 * (also across a capture: fork and join). To wait on an event of your own,
 * wrap it (gc_event_wrap) and use gc_stream_wait_event (Event section).
 * ========================================================================== */

/**
 * A CUDA stream: created by graphcore, or a borrowed CUstream/cudaStream_t.
 *
 * Ownership: the caller destroys the handle with gc_stream_destroy. A
 * stream graphcore created is destroyed once the handle and graphcore's
 * own references to it are gone (work already enqueued still finishes); a
 * borrowed one stays the caller's and is never destroyed by graphcore.
 * Destroying a stream that is capturing ends and discards its capture (the
 * capture's pool is rolled back). The runner's
 * stream handed to a gc_record_fn belongs to the runner.
 *
 * Thread safety: work may be enqueued on one stream from several threads
 * at once (it runs in the order the calls happen). gc_capture_begin and
 * gc_capture_end on a stream are serialized inside, but the caller orders
 * them (one capture at a time per stream). gc_stream_destroy must not race
 * with other calls on the same handle.
 */
typedef struct gc_stream gc_stream;

/**
 * Creates a non-blocking stream owned by graphcore; destroy it with
 * gc_stream_destroy.
 * Errors: common, and GC_ERROR_OUT_OF_MEMORY (the driver or the handle table
 * is out of memory).
 */
enum gc_status gc_stream_create(struct gc_context *ctx, struct gc_stream **stream);

/**
 * Creates a non-blocking stream owned by graphcore, as gc_stream_create,
 * whose work the GPU schedules by `priority`: lower numbers are higher
 * priorities, from gc_stream_priority_range's `least` (the default, 0 on
 * current GPUs) to its `greatest` (e.g. -5). When blocks of several
 * kernels wait for free SMs, those of higher-priority streams start first;
 * running blocks are not preempted. Kernels captured on the stream keep its
 * priority as a node attribute, which an exec instantiated with
 * GC_INSTANTIATE_USE_NODE_PRIORITY uses (otherwise every node runs at the
 * priority of the stream the exec is launched on). Typical use: a
 * high-priority stream for collectives (NCCL) that overlap a GEMM.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (priority outside the device's
 * range; the message gives the range), GC_ERROR_OUT_OF_MEMORY (the driver or
 * the handle table is out of memory).
 */
enum gc_status gc_stream_create_with_priority(struct gc_context *ctx,
                                              int priority,
                                              struct gc_stream **stream);

/**
 * Writes the stream priorities of ctx's device: *least (the default
 * priority, 0 on current GPUs) and *greatest (the highest priority, the
 * lowest number, e.g. -5), for gc_stream_create_with_priority.
 * Errors: common.
 */
enum gc_status gc_stream_priority_range(struct gc_context *ctx, int *least, int *greatest);

/**
 * Borrows `raw`, a CUstream or cudaStream_t of ctx's device that the
 * caller owns and keeps alive while graphcore uses it (graphcore never
 * destroys it; gc_stream_destroy drops only the handle). NULL is the
 * legacy default stream, and so is CU_STREAM_LEGACY (cudaStreamLegacy,
 * the value 0x1), taken as NULL. The per-thread default stream,
 * CU_STREAM_PER_THREAD (cudaStreamPerThread, 0x2, also what stream 0
 * means in code built with --default-stream per-thread), is refused
 * (GC_ERROR_INVALID_ARGUMENT): it names a different stream on each
 * thread, while a gc_stream is one stream whatever thread uses it, and
 * CUDA gives no handle of a thread's per-thread stream to wrap instead.
 * Use a stream of your own (cudaStreamCreate, then wrap it) or
 * gc_stream_create, and order it with the per-thread stream through
 * events where both are used. graphcore cannot check that raw is a stream
 * of ctx's device: a stream of another device is undefined behaviour in
 * CUDA.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (raw is
 * CU_STREAM_PER_THREAD), GC_ERROR_OUT_OF_MEMORY (the handle table),
 * GC_ERROR_DEVICE_FAULT (creating the stream's event failed).
 */
enum gc_status gc_stream_wrap(struct gc_context *ctx, void *raw, struct gc_stream **stream);

/**
 * Writes the underlying CUstream (usable as a cudaStream_t) to *raw, so
 * your own kernels and libraries (cuBLAS, ...) can work on the stream.
 * The CUstream stays valid while the gc_stream lives; do not destroy it.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or raw is NULL),
 * GC_ERROR_INVALID_HANDLE (stream destroyed).
 */
enum gc_status gc_stream_raw(struct gc_stream *stream, void **raw);

/**
 * Makes `stream` wait for the work enqueued on `other` so far (an event
 * recorded on other, waited on by stream). Capture-safe: a stream that
 * waits on a capturing stream joins its capture (fork); the capturing
 * stream must wait on it again before gc_capture_end (join). Both streams
 * must be of one context. Waiting on itself is a no-op.
 * Errors: common, and GC_ERROR_CAPTURE (CUDA refused the wait under capture,
 * e.g. joining two captures; the capture is invalid now).
 */
enum gc_status gc_stream_wait_stream(struct gc_stream *stream, struct gc_stream *other);

/**
 * Blocks until the stream's work is done. On a capturing stream this fails
 * with GC_ERROR_CAPTURE and invalidates the capture (as CUDA does); the
 * error of gc_capture_end then names this call.
 * Errors: common, and GC_ERROR_CAPTURE (the stream is capturing),
 * GC_ERROR_DEVICE_FAULT (work on the stream faulted), GC_ERROR_CUDA (another
 * failure of the work or the wait).
 */
enum gc_status gc_stream_synchronize(struct gc_stream *stream);

/**
 * Destroys the handle; an owned stream is destroyed once work that
 * graphcore objects still reference it for is gone (a borrowed one is
 * never destroyed). A capture still open on it is ended and discarded,
 * and its pool rolled back. NULL is a no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (stream already destroyed, or not a
 * stream).
 */
enum gc_status gc_stream_destroy(struct gc_stream *stream);

/* ==========================================================================
 * Event
 *
 * Events: mark a point in a stream's work (gc_event_record), make another
 * stream wait for it (gc_stream_wait_event), wait for it on the host
 * (gc_event_synchronize, gc_event_query) and time the work between two
 * records (gc_event_elapsed_ms). gc_event_wrap borrows a cudaEvent_t you
 * already have, so a graphcore stream can wait on your own events.
 *
 * Under capture (CUDA's rules, cuEventRecord and cuStreamWaitEvent during
 * stream capture): a plain record on a capturing stream marks a point of
 * the capture, and a stream that waits on that event joins the capture
 * (fork; the capturing stream must wait on it again before gc_capture_end,
 * join); no node is made and the event itself is not recorded by replays.
 * With GC_EVENT_EXTERNAL the capture gets an event record node (each replay
 * records the event: time graph work, or order other streams after it) or
 * an event wait node (each replay waits for the event's latest record:
 * order a graph after eager work). A graph captured by gc_capture_begin
 * keeps the events of the event nodes made on its capturing stream alive
 * (destroying their handles is safe); for an event node made on a stream
 * that joined the capture, keep the event until the graph's execs are
 * gone. Querying, synchronizing on or timing an event whose latest record
 * (gc_event_record without GC_EVENT_EXTERNAL) was made in a capture still
 * open is GC_ERROR_CAPTURE: graphcore refuses it before asking CUDA, so
 * the capture stays valid and can end. (A record made with the CUDA API on
 * the raw event is not seen: CUDA then refuses the call, as GC_ERROR_CUDA
 * or GC_ERROR_CAPTURE, and may invalidate the capture, which
 * gc_capture_end then reports.)
 * ========================================================================== */

/**
 * A CUDA event: created by graphcore, or a borrowed CUevent/cudaEvent_t.
 *
 * Ownership: the caller destroys the handle with gc_event_destroy. An
 * event graphcore created is destroyed once the handle is gone (records
 * already enqueued still complete); a borrowed one stays the caller's and
 * is never destroyed by graphcore.
 *
 * Thread safety: every call may run concurrently with any other on the
 * same event (recording it on two streams at once leaves it standing for
 * either record, as in CUDA), except gc_event_destroy, which must not race
 * with other calls on the handle.
 */
typedef struct gc_event gc_event;

/**
 * Flags of gc_event_create (OR them; 0 is the default: an event that
 * records times).
 */
typedef uint32_t gc_event_flags;

/**
 * An event without timing: cheaper to record and wait on, but
 * gc_event_elapsed_ms refuses it.
 */
#define GC_EVENT_DISABLE_TIMING 1

/**
 * Flags of gc_event_record and gc_stream_wait_event (0 or this).
 */
typedef uint32_t gc_event_capture_flags;

/**
 * While the stream captures, make an event record (or wait) node instead
 * of an in-capture dependency; ignored when the stream is not capturing.
 */
#define GC_EVENT_EXTERNAL 1

/**
 * Creates an event owned by graphcore (flags: GC_EVENT_DISABLE_TIMING, or
 * 0 for an event that records times); destroy it with gc_event_destroy.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags),
 * GC_ERROR_OUT_OF_MEMORY (the driver or the handle table is out of memory).
 */
enum gc_status gc_event_create(struct gc_context *ctx,
                               gc_event_flags flags,
                               struct gc_event **event);

/**
 * Borrows `raw`, a CUevent or cudaEvent_t of ctx's device that the caller
 * owns and keeps alive while graphcore uses it (graphcore never destroys
 * it; gc_event_destroy drops only the handle). graphcore cannot check
 * that raw is a live event of ctx's device: anything else is undefined
 * behaviour in CUDA. Whether it records times is the caller's choice at
 * creation; gc_event_elapsed_ms reports GC_ERROR_CUDA if it does not.
 * Errors: common, and GC_ERROR_OUT_OF_MEMORY (the handle table),
 * GC_ERROR_DEVICE_FAULT (making ctx current).
 */
enum gc_status gc_event_wrap(struct gc_context *ctx, void *raw, struct gc_event **event);

/**
 * Writes the underlying CUevent (usable as a cudaEvent_t) to *raw, for
 * CUDA calls graphcore does not wrap. It stays valid while the gc_event
 * lives; do not destroy it.
 * Errors: GC_ERROR_INVALID_ARGUMENT (event or raw is NULL),
 * GC_ERROR_INVALID_HANDLE (event destroyed).
 */
enum gc_status gc_event_raw(struct gc_event *event, void **raw);

/**
 * Records `event` on `stream`: the event then stands for the work
 * enqueued on the stream so far (a later record replaces it). flags: 0, or
 * GC_EVENT_EXTERNAL to make an event record node while the stream
 * captures (see this section's text for records under capture). Event and
 * stream must be of one context.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags),
 * GC_ERROR_CAPTURE (CUDA refused the record under capture; the capture is
 * invalid now).
 */
enum gc_status gc_event_record(struct gc_event *event,
                               struct gc_stream *stream,
                               gc_event_capture_flags flags);

/**
 * Makes `stream` wait for the work `event`'s latest record stands for (an
 * event never recorded: no wait). The event may be a borrowed one the
 * caller records with the CUDA API. flags: 0, or GC_EVENT_EXTERNAL to make
 * an event wait node while the stream captures (a plain wait under
 * capture must be on an event recorded in the same capture: a fork or a
 * join). Event and stream must be of one context.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags),
 * GC_ERROR_CAPTURE (CUDA refused the wait under capture, e.g. a plain wait on
 * an event recorded outside it; the capture is invalid now).
 */
enum gc_status gc_stream_wait_event(struct gc_stream *stream,
                                    struct gc_event *event,
                                    gc_event_capture_flags flags);

/**
 * Blocks until the work the event's latest record stands for is done (at
 * once for an event never recorded).
 * Errors: common, and GC_ERROR_CAPTURE (its latest record was made in a
 * capture still open), GC_ERROR_DEVICE_FAULT (the work faulted), GC_ERROR_CUDA
 * (another failure).
 */
enum gc_status gc_event_synchronize(struct gc_event *event);

/**
 * Writes 1 to *done when the work the event's latest record stands for is
 * done (or it was never recorded), 0 when it is still running; never
 * blocks.
 * Errors: common, and GC_ERROR_CAPTURE (its latest record was made in a
 * capture still open), GC_ERROR_DEVICE_FAULT (the work faulted), GC_ERROR_CUDA
 * (another failure).
 */
enum gc_status gc_event_query(struct gc_event *event, int *done);

/**
 * Writes the milliseconds from `start`'s latest record to `end`'s to *ms
 * (about half a microsecond resolution; negative when end was recorded
 * first). Both must record times, be of one context, and be done.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (an event made with
 * GC_EVENT_DISABLE_TIMING), GC_ERROR_INVALID_STATE (the work of either is not
 * done yet: synchronize on end first), GC_ERROR_CAPTURE (a record made in a
 * capture still open), GC_ERROR_CUDA (e.g. an event never recorded, or a
 * borrowed event without timing).
 */
enum gc_status gc_event_elapsed_ms(struct gc_event *start, struct gc_event *end, float *ms);

/**
 * Destroys the handle; an owned event is destroyed with it (records
 * already enqueued still complete), a borrowed one never is. NULL is a
 * no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (event already destroyed, or not an
 * event).
 */
enum gc_status gc_event_destroy(struct gc_event *event);

/* ==========================================================================
 * Pool
 *
 * Device memory pools: stable addresses, best-fit sub-allocation from
 * 2 MiB pages mapped on demand, PyTorch-style statistics, and memory
 * shared by the graphs captured into the pool.
 *
 * Captures: while a thread has a capture open into a pool
 * (gc_capture_begin with the pool), that thread's gc_pool_alloc calls
 * allocate for the capture. Blocks the capture frees may be reused later
 * in the same capture and by later captures into the same pool: that is
 * how several graphs share memory, so graphs sharing a pool must not run
 * concurrently (order their launches on one stream, or wait between
 * them); graphcore does not detect it. While a graph that used some pool
 * memory is alive, eager allocations never get that memory.
 *
 * Reuse: a block freed outside any capture (up to 8 of them) is kept whole
 * and handed out first to the next allocation of the same size (rounded
 * to 256 bytes) outside a capture, the cheapest path; any other
 * allocation, capture or trim first merges those blocks back into free
 * space, so placement and growth always see all of it.
 *
 * A block allocated during a capture and not freed in it stays allocated
 * after gc_capture_end: it is the caller's (typically an output the graph
 * writes on each launch), not the graph's. Destroying the graph does not
 * free it; free it with gc_pool_free. After that free, later captures into
 * the pool may reuse its space, so do not rely on its contents from a
 * graph launched afterwards.
 *
 * A failed capture leaves the pool as it was before gc_capture_begin:
 * allocated_bytes, reserved_bytes, block and segment counts and the
 * layout (pages mapped for the capture are unmapped). The cumulative
 * statistics are not rolled back: peak_allocated_bytes and
 * peak_reserved_bytes may have risen, and alloc_count and free_count count
 * the capture's allocations and their release.
 * ========================================================================== */

/**
 * A device memory pool: stable addresses, shared by graphs, with
 * PyTorch-style statistics.
 *
 * Ownership: gc_pool_create returns a handle the caller destroys with
 * gc_pool_destroy. Graphs and execs that hold memory of the pool, and
 * runners using it, keep the pool alive after that; its device memory is
 * released when the last of them goes, after a wait for the pool's device
 * and for each peer granted access (gc_pool_enable_peer_access), skipped
 * on a device whose context has a capture open (a wait would break it):
 * then the caller must have waited for the work that uses the memory.
 * Blocks come from gc_pool_alloc and go back with gc_pool_free; blocks
 * still live when the pool goes die with it.
 *
 * Thread safety: every call may run concurrently with any other on the
 * same pool (allocations and gc_pool_enable_peer_access are serialized
 * inside), except gc_pool_destroy,
 * which must not race with other calls on the handle. Graphs sharing a
 * pool must not run concurrently (see the section above).
 */
typedef struct gc_pool gc_pool;

/**
 * Options of gc_pool_create (NULL means all defaults).
 */
typedef struct gc_pool_options {
    /**
     * Set to sizeof(gc_pool_options).
     */
    size_t struct_size;
    /**
     * Bytes to reserve (map) at creation, rounded up to the 2 MiB page
     * size; like PyTorch's CUDAGraphPool(device, size). Default 0. This is
     * a head start, not a floor: gc_pool_trim releases these pages too
     * when they hold nothing.
     */
    uint64_t initial_bytes;
    /**
     * Hard cap on reserved bytes: an allocation that would pass it fails
     * with GC_ERROR_OUT_OF_MEMORY and the pool is unchanged. 0 (default)
     * means no cap.
     */
    uint64_t max_bytes;
} gc_pool_options;

/**
 * A pool's statistics, named as PyTorch names them.
 */
typedef struct gc_pool_statistics {
    /**
     * Set to sizeof(gc_pool_statistics) before calling gc_pool_stats.
     */
    size_t struct_size;
    /**
     * Bytes in live blocks (memory_allocated).
     */
    uint64_t allocated_bytes;
    /**
     * Bytes of device memory mapped by the pool (memory_reserved).
     */
    uint64_t reserved_bytes;
    /**
     * Highest allocated_bytes so far (max_memory_allocated).
     */
    uint64_t peak_allocated_bytes;
    /**
     * Highest reserved_bytes so far (max_memory_reserved).
     */
    uint64_t peak_reserved_bytes;
    /**
     * Contiguous runs of mapped memory.
     */
    uint64_t segment_count;
    /**
     * Live blocks.
     */
    uint64_t block_count;
    /**
     * Free blocks on mapped memory.
     */
    uint64_t free_block_count;
    /**
     * Allocations made so far.
     */
    uint64_t alloc_count;
    /**
     * Frees made so far.
     */
    uint64_t free_count;
} gc_pool_statistics;

/**
 * Creates a pool on ctx's device (options may be NULL: no initial bytes,
 * no cap). Graphs captured into one pool share its memory and must not run
 * concurrently: order their launches (one stream, or a wait between
 * them); graphcore does not detect overlapping launches.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a wrong options->struct_size,
 * initial_bytes over max_bytes or over the device's memory),
 * GC_ERROR_NOT_SUPPORTED (the device lacks virtual memory management),
 * GC_ERROR_OUT_OF_MEMORY (mapping initial_bytes, or reserving the address
 * range, failed).
 */
enum gc_status gc_pool_create(struct gc_context *ctx,
                              const struct gc_pool_options *options,
                              struct gc_pool **pool);

/**
 * Allocates `bytes` (rounded up to 256; the address is 256-byte aligned).
 * On a thread capturing into this pool (gc_capture_begin with this pool),
 * the block belongs to the capture (see the section above for what that
 * means and who frees it). The caller frees the block with gc_pool_free.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (bytes is 0 or overflows),
 * GC_ERROR_OUT_OF_MEMORY (past max_bytes or the device's memory; the pool is
 * unchanged), GC_ERROR_DEVICE_FAULT (mapping new pages failed; the pool is
 * unchanged).
 */
enum gc_status gc_pool_alloc(struct gc_pool *pool, size_t bytes, void **ptr);

/**
 * Returns a block to the pool. The block may be reused by the next
 * allocation at once: order its last use before that (same stream, or
 * synchronize). A pointer this pool did not hand out, or one already
 * freed, is GC_ERROR_INVALID_ARGUMENT and nothing changes. Needs no
 * driver call.
 * Errors: GC_ERROR_INVALID_ARGUMENT (pool is NULL, or ptr is not a live
 * block of this pool), GC_ERROR_INVALID_HANDLE (pool destroyed).
 */
enum gc_status gc_pool_free(struct gc_pool *pool, void *ptr);

/**
 * Fills *stats (set stats->struct_size = sizeof(gc_pool_statistics)).
 * Errors: GC_ERROR_INVALID_ARGUMENT (pool or stats is NULL, or a wrong
 * struct_size), GC_ERROR_INVALID_HANDLE (pool destroyed).
 */
enum gc_status gc_pool_stats(struct gc_pool *pool, struct gc_pool_statistics *stats);

/**
 * Returns device memory that holds no live block and no live graph's
 * memory to the driver (waits for the device first), including the pages
 * of initial_bytes: reserved_bytes may drop below it. Addresses handed out
 * stay valid. While a capture begun with gc_capture_begin or
 * gc_runner_capture is open in the context (into any pool or none) this is
 * GC_ERROR_INVALID_STATE and nothing changes, even with nothing to trim (a
 * device-wide wait would invalidate the capture).
 * Errors: common, and GC_ERROR_INVALID_STATE (a capture is open in the
 * context), GC_ERROR_DEVICE_FAULT (the wait found faulted work).
 */
enum gc_status gc_pool_trim(struct gc_pool *pool);

/**
 * Grants the device of `peer` read and write access to the pool's memory:
 * every page mapped now and every page the pool maps later as it grows
 * (cuMemSetAccess on each). Afterwards copies and sets on peer's streams
 * (gc_memcpy_async, gc_memset_async, ...) and copy and set nodes of
 * peer's graphs may use the pool's blocks; without it they are
 * GC_ERROR_INVALID_ARGUMENT naming both devices. Calling it again for
 * the same device is a no-op; access stays on for the pool's life. The
 * pool keeps a reference to peer's device context. On failure the pool is
 * unchanged. Kernels of peer's device do not get pool pointers through
 * graphcore's checks (kernel pointer arguments must be memory of the
 * kernel's own device).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (peer is a context of the
 * pool's own device), GC_ERROR_NOT_SUPPORTED (peer's device has no peer path
 * to the pool's: cuDeviceCanAccessPeer says no).
 */
enum gc_status gc_pool_enable_peer_access(struct gc_pool *pool, struct gc_context *peer);

/**
 * Drops this handle. Live blocks die with the pool; graphs, execs and
 * runners that use the pool keep its memory until the last of them is
 * destroyed. NULL is a no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (pool already destroyed, or not a pool).
 */
enum gc_status gc_pool_destroy(struct gc_pool *pool);

/* ==========================================================================
 * Allocator (pluggable alloc and free over pools)
 *
 * graphcore as an engine's allocator: alloc and free exports with the
 * signatures allocator interfaces plug in, backed by graphcore pools, so
 * an engine (or PyTorch, through CUDAPluggableAllocator) allocates from a
 * pool without changing how it calls its allocator.
 *
 * Two pairs. gc_torch_alloc / gc_torch_free have PyTorch's pluggable
 * allocator signatures (`void *alloc(size_t size, int device,
 * cudaStream_t stream)`, `void free(void *ptr, size_t size, int device,
 * cudaStream_t stream)`) and allocate from the pool set for `device` with
 * gc_allocator_set_pool. gc_engine_alloc / gc_engine_free take a user
 * pointer first, for interfaces that carry one (a struct of function
 * pointers and a `void *user`): pass a gc_pool handle as `user` to
 * allocate from that pool, or NULL for the pool set for `device`.
 *
 * No status: these calls return a pointer (or nothing), as the interfaces
 * they plug into expect. A failed alloc returns NULL and sets the calling
 * thread's gc_last_error() (and gc_last_cuda_result()); PyTorch turns the
 * NULL into its out-of-memory error. A failed free (a pointer no pool of
 * the device handed out, a double free) changes nothing and sets
 * gc_last_error(). Panics never cross: they are caught and reported the
 * same way. Without a pool for the device, an alloc returns NULL and the
 * last error says so: GC_ERROR_NO_DRIVER's message on a machine without
 * the driver, GC_ERROR_INVALID_ARGUMENT's for a device that does not
 * exist, GC_ERROR_INVALID_STATE's ("no pool set for device N") otherwise.
 * gc_last_error() names the export and the status (for example
 * "gc_torch_alloc: GC_ERROR_NO_DRIVER: ...").
 *
 * Size 0: an alloc of 0 bytes returns NULL and sets no error (PyTorch
 * allocates nothing for an empty tensor); freeing NULL is a no-op.
 *
 * What "stream-ordered" means here: graphcore's pool frees at once. The
 * block goes back to the pool when the free is called and may be handed
 * to the very next allocation, whatever its stream; the `stream`
 * arguments are accepted for the interface and not used. That is safe
 * when the work that used the block and the work of the next allocation
 * run in order: on one stream (PyTorch's usual case: one current stream
 * per device), or on streams the caller has ordered (an event, a
 * synchronize). It is not PyTorch's caching allocator's per-stream reuse:
 * work still running on another stream may see its memory handed out
 * again, and graphcore does not record streams (Tensor.record_stream has
 * no effect through these exports). Use one stream per pool, or order the
 * streams before freeing.
 *
 * Captures: an allocation made on a thread that has a capture open into
 * the pool (gc_capture_begin with that pool, or a gc_runner_capture into
 * it) belongs to that capture, exactly as gc_pool_alloc's does (see the
 * pool section: blocks freed in the capture are reused by later captures
 * into the pool; blocks kept at its end are the caller's). A capture that
 * CUDA or another library opened without graphcore (torch.cuda.graph's
 * own) is not seen: allocations during it are eager ones.
 *
 * Thread safety: every call may run from any thread at once;
 * gc_allocator_set_pool may run concurrently with allocations (an
 * allocation uses the pool set before or after it, never a mix).
 * ========================================================================== */

/**
 * The most devices the allocator tracks (ordinals 0 to this - 1).
 */
#define GC_ALLOCATOR_MAX_DEVICES 64

/**
 * Sets the pool that gc_torch_alloc (and gc_engine_alloc with a NULL
 * `user`) allocate from on device `device`; NULL unsets it (later
 * allocations on the device return NULL). The allocator holds the pool:
 * the handle may be destroyed afterwards, and the pool lives until it is
 * unset or replaced. Blocks allocated from a pool that is then replaced
 * or unset may still be freed with gc_torch_free: the allocator keeps
 * that pool until the blocks it handed out from it are all freed.
 * Setting the pool already set is a no-op. Needs no driver to unset.
 * Errors: GC_ERROR_INVALID_ARGUMENT (device is negative or not below
 * GC_ALLOCATOR_MAX_DEVICES, or the pool is of another device),
 * GC_ERROR_INVALID_HANDLE (pool destroyed, or not a pool).
 * Thread safety: may run concurrently with allocations and frees.
 */
enum gc_status gc_allocator_set_pool(int device, struct gc_pool *pool);

/**
 * PyTorch's pluggable allocator alloc: `size` bytes (rounded up to 256,
 * 256-byte aligned) from the pool set for `device` with
 * gc_allocator_set_pool. `stream` (a cudaStream_t) is not used: see
 * "stream-ordered" in the section above. On a thread capturing into that
 * pool the block belongs to the capture, as with gc_pool_alloc. Returns
 * the block, NULL for size 0 (no error set), or NULL on failure with
 * gc_last_error() saying why: no driver (GC_ERROR_NO_DRIVER), no such
 * device or a size that overflows (GC_ERROR_INVALID_ARGUMENT), no pool
 * set (GC_ERROR_INVALID_STATE), the pool's max_bytes or the device's
 * memory reached (GC_ERROR_OUT_OF_MEMORY). The caller frees the block with
 * gc_torch_free (or gc_pool_free on its pool). Thread safety: any thread,
 * concurrently.
 *
 * Errors: none.
 */
void *gc_torch_alloc(size_t size, int device, void *stream);

/**
 * PyTorch's pluggable allocator free: returns `ptr` to the pool of
 * `device` it came from (the pool set now, or one set before and replaced
 * while the block was live). The block may be handed out again by the
 * next allocation at once (see "stream-ordered" above); `size` and
 * `stream` are not used. NULL is a no-op. A pointer no such pool handed
 * out, or one freed already, changes nothing and sets gc_last_error()
 * (GC_ERROR_INVALID_ARGUMENT). Thread safety: any thread, concurrently.
 *
 * Errors: none.
 */
void gc_torch_free(void *ptr, size_t size, int device, void *stream);

/**
 * The generic alloc, for allocator interfaces that pass a user pointer:
 * `user` is a gc_pool handle to allocate from (then `device` must be the
 * pool's device or -1), or NULL for the pool set for `device` with
 * gc_allocator_set_pool. Otherwise as gc_torch_alloc: `stream` is not
 * used, a capture into the pool on this thread owns the block, NULL for
 * size 0 (no error) or on failure (gc_last_error() says why; a `user`
 * that is not a live pool handle is GC_ERROR_INVALID_HANDLE's message).
 * Free the block with gc_engine_free (same `user`) or gc_pool_free.
 * Thread safety: any thread, concurrently.
 *
 * Errors: none.
 */
void *gc_engine_alloc(void *user, size_t size, int device, void *stream);

/**
 * The generic free: returns `ptr` to the pool `user` (a gc_pool handle),
 * or with a NULL `user` as gc_torch_free does for `device`. `size` and
 * `stream` are not used; NULL is a no-op; a pointer the pool did not hand
 * out, or one freed already, changes nothing and sets gc_last_error()
 * (a `user` that is not a live pool handle: GC_ERROR_INVALID_HANDLE's
 * message). Thread safety: any thread, concurrently.
 *
 * Errors: none.
 */
void gc_engine_free(void *user, void *ptr, size_t size, int device, void *stream);

/* ==========================================================================
 * Host memory and copies
 *
 * Pinned host memory and asynchronous copies and sets.
 *
 * Ownership: gc_host_alloc returns memory the caller frees with
 * gc_host_free on the same context; memory still allocated when the
 * context's last user goes is freed then. Copies and sets work on the
 * caller's memory and own nothing.
 *
 * Thread safety: all calls may run concurrently, on any streams and
 * contexts; the caller orders gc_host_free after the last work that uses
 * the memory.
 * ========================================================================== */

/**
 * Allocates `bytes` of pinned (page-locked) host memory, the kind copies
 * and graph memcpy nodes need. Free it with gc_host_free on the same
 * context; memory not freed is freed when the context's last user goes.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (bytes is 0),
 * GC_ERROR_OUT_OF_MEMORY (the driver could not pin that much).
 */
enum gc_status gc_host_alloc(struct gc_context *ctx, size_t bytes, void **ptr);

/**
 * Frees memory from gc_host_alloc. A pointer that is not a live
 * allocation of this context (never allocated, or freed twice) is
 * GC_ERROR_INVALID_ARGUMENT and nothing happens. The memory must not be
 * in use by work still running (synchronize first).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (ptr is not a live allocation
 * of this context).
 */
enum gc_status gc_host_free(struct gc_context *ctx, void *ptr);

/**
 * Copies `bytes` from `src` to `dst` on `stream`, in any direction (device
 * or host on either side: unified addressing). Asynchronous when host
 * memory is pinned. Zero bytes is a no-op. A range that starts in a live
 * pool block and runs past its end is refused, as is one that wraps around
 * the address space. Pool memory of another device needs that pool's peer
 * access for the stream's device (gc_pool_enable_peer_access). Recorded,
 * not run, when the stream captures.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a range overruns its pool
 * block or the address space, or is pool memory of another device without peer
 * access for the stream's device, naming both devices), GC_ERROR_CAPTURE (CUDA
 * refused the copy under capture, e.g. from pageable host memory; the capture
 * is invalid now), GC_ERROR_CUDA (e.g. an address CUDA does not know).
 */
enum gc_status gc_memcpy_async(struct gc_stream *stream, void *dst, const void *src, size_t bytes);

/**
 * Sets `bytes` bytes of device memory at `dst` to the byte `value` on
 * `stream`. Zero bytes is a no-op. A range that starts in a live pool block
 * and runs past its end is refused. Recorded, not run, when the stream
 * captures.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (the range overruns its pool
 * block or the address space, or is pool memory of another device without peer
 * access), GC_ERROR_CAPTURE (CUDA refused it under capture), GC_ERROR_CUDA
 * (e.g. dst is not device memory).
 */
enum gc_status gc_memset_async(struct gc_stream *stream, void *dst, int value, size_t bytes);

/**
 * Sets `count` elements of `elem_size` bytes (1, 2 or 4) of device memory
 * at `dst` to `value` (its low elem_size bytes) on `stream`, as
 * cuMemsetD8/D16/D32Async do. dst must be aligned to elem_size and value
 * must fit in an element. Zero elements is a no-op. A range that starts in
 * a live pool block and runs past its end is refused. Recorded, not run,
 * when the stream captures. gc_memset_async is this with elem_size 1.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (elem_size is not 1, 2 or 4,
 * dst is not aligned to it, value does not fit in an element, the range
 * overruns its pool block or the address space, or is pool memory of another
 * device without peer access), GC_ERROR_CAPTURE (CUDA refused it under
 * capture), GC_ERROR_CUDA (e.g. dst is not device memory).
 */
enum gc_status gc_memset_async_elem(struct gc_stream *stream,
                                    void *dst,
                                    uint32_t value,
                                    uint32_t elem_size,
                                    size_t count);

/* ==========================================================================
 * Module and function
 *
 * Modules and functions: load a PTX, cubin or fatbin image and look up
 * its kernels, wrap a CUfunction / cudaFunction_t you already have, or
 * take one of graphcore's built-in kernels by name. A gc_function runs
 * with gc_launch or as a graph node (gc_graph_add_kernel).
 * ========================================================================== */

/**
 * A loaded module image (PTX, cubin or fatbin).
 *
 * Ownership: gc_module_load returns a handle the caller destroys with
 * gc_module_destroy. Functions looked up in the module keep it loaded, so
 * it unloads only when the handle and all its functions (and the graphs
 * using them) are gone.
 *
 * Thread safety: every call may run concurrently with any other on the
 * same module, except gc_module_destroy, which must not race with other
 * calls on the handle.
 */
typedef struct gc_module gc_module;

/**
 * A kernel: from a module, a built-in, or a wrapped CUfunction.
 *
 * Ownership: the caller destroys the handle with gc_function_destroy.
 * Graphs with a node of the function keep it (and its module) loaded, so
 * the handle may go first: nodes added with gc_graph_add_kernel, and
 * launches with gc_launch on a stream capturing through graphcore (a
 * launch on another stream joined to the capture is not seen: keep the
 * function until the graph's execs are gone). A wrapped CUfunction stays
 * the caller's: keep its module loaded while graphcore uses it.
 *
 * Thread safety: a function may be launched and added to graphs from many
 * threads at once; gc_function_destroy must not race with other calls on
 * the handle.
 */
typedef struct gc_function gc_function;

/**
 * Three dimensions of a grid or a block.
 */
typedef struct gc_dim3 {
    /**
     * x extent (at least 1).
     */
    uint32_t x;
    /**
     * y extent (at least 1).
     */
    uint32_t y;
    /**
     * z extent (at least 1).
     */
    uint32_t z;
} gc_dim3;

/**
 * Loads a module from an image of `size` bytes: PTX text (NUL-terminated
 * or not), a cubin (ELF) or a fatbin. Malformed PTX is GC_ERROR_CUDA with
 * the JIT compiler's log in gc_last_error(). graphcore copies what it
 * needs: the image may be freed when this returns.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (size is 0), GC_ERROR_CUDA
 * (the driver refused the image: malformed, for another architecture, or PTX
 * newer than the driver), GC_ERROR_OUT_OF_MEMORY.
 */
enum gc_status gc_module_load(struct gc_context *ctx,
                              const void *image,
                              size_t size,
                              struct gc_module **module);

/**
 * Looks up the extern "C" kernel `name` in a module. The function keeps
 * the module loaded; destroy it with gc_function_destroy.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (name is not UTF-8),
 * GC_ERROR_NOT_FOUND (no kernel of that name).
 */
enum gc_status gc_module_function(struct gc_module *module,
                                  const char *name,
                                  struct gc_function **function);

/**
 * Wraps a CUfunction, or a cudaFunction_t from cudaGetFuncBySymbol (the
 * same handle), that the caller keeps loaded while graphcore uses it.
 * `name` (may be NULL) labels it in messages and DOT output. raw must be
 * a function of ctx's device; graphcore checks that the driver knows it
 * as a function.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (name is not UTF-8),
 * GC_ERROR_CUDA (raw is not a usable CUfunction).
 */
enum gc_status gc_function_wrap(struct gc_context *ctx,
                                void *raw,
                                const char *name,
                                struct gc_function **function);

/**
 * A built-in kernel by name (the list, with each kernel's arguments, is
 * the "Built-in kernels" list that ends graphcore_ops.h). Unknown names
 * are GC_ERROR_NOT_FOUND. The built-in modules load on first use (in relaxed
 * capture mode, so a first use during a capture does not break it).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (name is not UTF-8),
 * GC_ERROR_NOT_FOUND (no built-in of that name), GC_ERROR_NOT_SUPPORTED (a
 * kernel this machine cannot load: a conditional-handle setter (gc_cond_*)
 * with a driver older than CUDA 12.3 or no libcudadevrt.a found, see
 * Conditional nodes; or a kernel for a newer GPU), GC_ERROR_CUDA (loading
 * the built-in modules failed).
 */
enum gc_status gc_kernel_builtin(struct gc_context *ctx,
                                 const char *name,
                                 struct gc_function **function);

/**
 * Writes the underlying CUfunction (usable as a cudaFunction_t) to *raw.
 * It stays valid while the gc_function (or a graph using it) lives; do not
 * unload or destroy it.
 * Errors: GC_ERROR_INVALID_ARGUMENT (function or raw is NULL),
 * GC_ERROR_INVALID_HANDLE (function destroyed).
 */
enum gc_status gc_function_raw(struct gc_function *function, void **raw);

/**
 * Drops a function handle; graphs using the function keep it. NULL is a
 * no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (function already destroyed, or not a
 * function).
 */
enum gc_status gc_function_destroy(struct gc_function *function);

/**
 * Drops a module handle; the module unloads when no function of it is
 * left. NULL is a no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (module already destroyed, or not a
 * module).
 */
enum gc_status gc_module_destroy(struct gc_module *module);

/* ==========================================================================
 * Launch
 *
 * Launches: any gc_function on a stream (gc_launch), and a host function
 * in stream order (gc_launch_host_func). The typed gc_op_* calls of the
 * built-in kernels are in graphcore_ops.h.
 *
 * Kernel arguments (gc_launch, gc_graph_add_kernel,
 * gc_exec_set_kernel_args) follow cuLaunchKernel: `void **args` holds one
 * pointer per kernel parameter, in order, each to a value of that
 * parameter's type; there is no count. The values are copied before the
 * call returns, so the caller's storage may go away afterwards. args may
 * be NULL only for a kernel without parameters. graphcore cannot check
 * the count or the types of a kernel from a module or gc_function_wrap:
 * too few pointers is undefined behaviour, as with cuLaunchKernel. For a
 * built-in kernel the layout is known (listed at the end of
 * graphcore_ops.h) and graphcore reads exactly those parameters.
 * ========================================================================== */

/**
 * A host callback (of gc_launch_host_func and graph host nodes): called
 * with the user data given, on a CPU thread of the driver. It must not
 * call CUDA or graphcore.
 */
typedef void (*gc_host_fn)(void *user_data);

/**
 * Launches `function` on `stream` with `args` as cuLaunchKernel takes them
 * (one pointer per kernel parameter; the values are copied before this
 * returns). A zero or over-limit grid or block dimension is
 * GC_ERROR_INVALID_ARGUMENT and nothing is launched. Recorded, not run,
 * when the stream captures. function and stream must be of one context.
 * On a non-NULL stream the launch needs no current context and leaves
 * the thread's as it was ("Device and context").
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a zero or over-limit
 * dimension, or more than 1024 threads a block), GC_ERROR_CAPTURE (CUDA
 * refused the launch under capture; the capture is invalid now), GC_ERROR_CUDA
 * (the driver refused the launch, e.g. too much shared memory).
 */
enum gc_status gc_launch(struct gc_function *function,
                         struct gc_stream *stream,
                         struct gc_dim3 grid,
                         struct gc_dim3 block,
                         uint32_t shared_bytes,
                         void **args);

/**
 * Enqueues a call of `func(user_data)` on `stream` (cuLaunchHostFunc): it
 * runs on a CPU thread of the driver once the work enqueued before it is
 * done, and work enqueued after it waits until it returns. It must not
 * call CUDA or graphcore. Recorded as a host node when the stream
 * captures (then it runs at each replay: user_data must stay valid while
 * any exec of the graph may run).
 * Errors: common, and GC_ERROR_CAPTURE (CUDA refused it under capture; the
 * capture is invalid now).
 */
enum gc_status gc_launch_host_func(struct gc_stream *stream, gc_host_fn func, void *user_data);

/* ==========================================================================
 * Capture
 *
 * Stream capture: between gc_capture_begin and gc_capture_end, the work
 * enqueued on a stream is recorded into a graph instead of run. With a
 * pool, the capture's allocations come from that pool (see the Pool
 * section for who owns them and what a failed capture leaves).
 *
 * Thread safety: one capture at a time per stream. End a capture on the
 * thread that began it: CUDA requires it in the thread-local and global
 * modes, and in every mode the pool gives the capture the allocations of
 * the beginning thread only (other threads' gc_pool_alloc calls on the
 * pool stay eager). Different streams may capture concurrently on
 * different threads. While any capture is open in a context,
 * gc_context_synchronize and gc_pool_trim refuse to run (they would
 * invalidate it).
 * ========================================================================== */

/**
 * How a capture treats potentially unsafe CUDA calls (cudaMalloc, a
 * synchronize...) made while it is open; CUDA's stream capture modes. Any
 * other value is GC_ERROR_INVALID_ARGUMENT at gc_capture_begin.
 */
typedef uint32_t gc_capture_mode;

/**
 * Unsafe calls from the capturing thread invalidate the capture (default).
 */
#define GC_CAPTURE_THREAD_LOCAL 0

/**
 * Unsafe calls from any thread invalidate the capture.
 */
#define GC_CAPTURE_GLOBAL 1

/**
 * No call is checked.
 */
#define GC_CAPTURE_RELAXED 2

/**
 * Begins capturing `stream`: all work enqueued on it (graphcore's
 * kernels and copies, your own kernels and cuBLAS calls on the raw
 * stream, and streams that join through gc_stream_wait_stream) is recorded,
 * not run. With a pool (may be NULL), gc_pool_alloc on the calling thread
 * allocates for the capture until gc_capture_end; blocks it frees are
 * reused within the capture and by later captures into the same pool.
 * A stream that is already capturing (through graphcore or the CUDA API)
 * is GC_ERROR_INVALID_STATE. The pool must be of the stream's context.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (mode is not a
 * gc_capture_mode), GC_ERROR_INVALID_STATE (the stream is capturing already,
 * or this thread has a capture open into the pool), GC_ERROR_CAPTURE (CUDA
 * cannot capture the stream, e.g. the legacy default stream). Nothing is begun
 * on failure.
 */
enum gc_status gc_capture_begin(struct gc_stream *stream,
                                struct gc_pool *pool,
                                gc_capture_mode mode);

/**
 * Ends the capture begun on `stream` and writes the captured graph to
 * *graph. If the capture was invalidated, the error names the first
 * graphcore call that broke it (GC_ERROR_CAPTURE). A capture invalidated
 * by a call outside graphcore (another library's synchronize, a query of
 * the capturing stream; in GC_CAPTURE_GLOBAL mode also an unsafe call on
 * any other thread) is reported as such, with graphcore's first call on
 * the stream that found it invalid: CUDA does not say which call
 * invalidated a capture (cuStreamGetCaptureInfo reports only that it
 * is). GC_CAPTURE_THREAD_LOCAL, the mode of graphcore's own captures
 * (runners, caches) and the C++ and Python defaults, lets unrelated work
 * on other threads run during a capture. A stream that joined
 * and did not rejoin is GC_ERROR_CAPTURE too; either way the stream is
 * usable for eager work and the pool is as it was before
 * gc_capture_begin. Without a begin: GC_ERROR_INVALID_STATE. The caller
 * destroys the graph with gc_graph_destroy; it holds the pool memory its
 * capture used. Ending costs what CUDA's own end does: the graph's nodes
 * are read back only by the first call that needs them (DOT, adding nodes
 * or edges, fusion, gc_exec_set_kernel_args, an update compared node by
 * node), and its node count by the first that needs it
 * (gc_graph_node_count, gc_exec_stats; instantiating asks CUDA only
 * whether the graph has a node).
 * Errors: common (a NULL graph leaves the capture open), and
 * GC_ERROR_INVALID_STATE (no graphcore capture is open on the stream),
 * GC_ERROR_CAPTURE (the capture was invalidated, e.g. by a call CUDA
 * refused while it was open, such as a query of a captured event made
 * with the CUDA API; a joined stream did not rejoin; or the end came from
 * another thread),
 * GC_ERROR_OUT_OF_MEMORY.
 */
enum gc_status gc_capture_end(struct gc_stream *stream, struct gc_graph **graph);

/**
 * Declares the device range ptr .. ptr + bytes an argument of the graph
 * `stream` is capturing (between gc_capture_begin and gc_capture_end),
 * and writes its index to *index; the graph gc_capture_end returns
 * carries it, as if declared with gc_graph_declare_arg (see there for how
 * uses are found, GC_ARG_EXACT and what cannot be covered). Typically the
 * input and output buffers of a captured model, declared in the same order
 * in each bucket's capture of a runner (gc_runner_replay_with binds them
 * by index; a record function also runs eagerly for the warm-ups, so it
 * declares only while gc_stream_is_capturing says 1). Declaring does not
 * break the capture. flags: GC_ARG_EXACT, GC_ARG_ROWS (the range holds
 * the rows of a runner's exact-size capture: see gc_runner_capture_exact).
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, ptr or index is NULL, bytes
 * is 0, an unknown flag, ptr is not device memory of the stream's device
 * or holds fewer than bytes bytes, or the range overlaps an argument
 * declared before in the capture, or the stream captures into a
 * conditional body: declare arguments on the graph that is instantiated),
 * GC_ERROR_INVALID_HANDLE (stream destroyed), GC_ERROR_INVALID_STATE (no
 * graphcore capture is open on the stream).
 */
enum gc_status gc_capture_arg(struct gc_stream *stream,
                              const void *ptr,
                              size_t bytes,
                              uint32_t flags,
                              size_t *index);

/**
 * Declares a scalar argument, marked by the `size` bytes at `marker`,
 * of the graph `stream` is capturing (between gc_capture_begin and
 * gc_capture_end), and writes its index to *index (numbered with the
 * range arguments of gc_capture_arg); the graph gc_capture_end returns
 * carries it as if declared with gc_graph_declare_scalar_arg (see there
 * for the marker, the exact matching rule and how a binding gives the
 * value). Typically: declare a learning rate's marker, launch the kernels
 * that take it with the marker as their value, end the capture, and bind
 * the real value at each gc_exec_launch_with. The marker's bytes are
 * copied. Declaring does not break the capture. Declare from the
 * capturing thread, as gc_capture_arg (the capture is the stream's).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (marker or index is NULL,
 * size is 0 or above 8, the marker is all zero bytes or was declared
 * before in the capture with the same size, or the stream captures into a
 * conditional body), GC_ERROR_INVALID_STATE (no graphcore capture is open
 * on the stream).
 */
enum gc_status gc_capture_scalar_arg(struct gc_stream *stream,
                                     const void *marker,
                                     size_t size,
                                     size_t *index);

/**
 * Writes 1 to *capturing while the stream captures (through graphcore or
 * not, including a stream that joined a capture), else 0.
 * Errors: common.
 */
enum gc_status gc_stream_is_capturing(struct gc_stream *stream, int *capturing);

/* ==========================================================================
 * Graph
 *
 * Graphs: built node by node (gc_graph_create, gc_graph_add_*), or
 * captured from a stream (gc_capture_end). A graph is a description; to
 * run it, instantiate it into a gc_exec (Exec section).
 * ========================================================================== */

/**
 * A CUDA graph being built, or captured from a stream.
 *
 * Ownership: gc_graph_create, gc_graph_clone, gc_graph_wrap and
 * gc_capture_end return a handle the caller destroys with
 * gc_graph_destroy (a graph wrapped with GC_GRAPH_WRAP_BORROW leaves the
 * CUgraph to the caller). The graph keeps the functions of its
 * kernel nodes loaded and holds the pool memory its capture (and its child
 * graphs' captures) used, and the events of the event nodes its capture
 * made on the capturing stream; execs instantiated from it keep what they
 * need,
 * so the graph may be destroyed before them. gc_graph_add_child copies the
 * child, which stays the caller's.
 *
 * Thread safety: building calls on one graph are serialized inside, but
 * the order of the nodes is the caller's: build each graph from one
 * thread. Different graphs may be built concurrently (the driver calls
 * that change, clone, instantiate or destroy graphs and execs are made one
 * at a time inside, process-wide: the driver shares state between a graph,
 * its copies and its execs, so they do not run in parallel). Reading calls
 * (gc_graph_node_count, gc_graph_write_dot, gc_graph_instantiate...) may
 * run concurrently with each other. gc_graph_destroy must not race with
 * other calls on the handle.
 */
typedef struct gc_graph gc_graph;

/**
 * A node of a graph: the graph's id and the node's index in it (nodes are
 * numbered from 0 in the order they were added; a captured graph's nodes
 * in a dependency order). Plain data: copy it freely.
 */
typedef struct gc_node {
    /**
     * The id of the graph the node belongs to.
     */
    uint64_t graph;
    /**
     * The node's index in that graph.
     */
    uint32_t index;
} gc_node;

/**
 * gc_graph_declare_arg and gc_capture_arg flag: find the argument's uses
 * only where they are known exactly (graphcore's built-in kernels' pointer
 * parameters, memcpy and memset endpoints); do not scan other kernels'
 * parameters (no false positives; foreign kernels' uses are then not
 * rebound).
 */
#define GC_ARG_EXACT 1

/**
 * gc_capture_arg flag: the range holds the rows of a runner's exact-size
 * capture (gc_runner_capture_exact): its bytes are the bucket's rows times
 * a row's bytes, and gc_runner_replay_exact of n rows may bind it to a
 * range of n rows. Every kernel that uses it must read the row count the
 * record function was given (else the bucket takes no exact-size replay).
 * In other captures it changes nothing; gc_graph_declare_arg refuses it.
 */
#define GC_ARG_ROWS 2

/**
 * Declares the device range ptr .. ptr + bytes an argument of `graph`
 * and writes its index to *index (arguments are numbered from 0 in
 * declaration order; a captured graph's arguments declared with
 * gc_capture_arg come first). An exec instantiated later finds every
 * place the range's addresses occur in its nodes, and gc_exec_launch_with
 * binds the argument to another range, patching those places:
 * built-in kernels' pointer parameters exactly; other kernels' (a
 * module's, a wrapped or captured foreign kernel such as cuBLAS) by a
 * scan of their parameters for 8-byte-aligned 8-byte values inside the
 * range (the parameters are bounded with the driver's cuFuncGetParamInfo,
 * CUDA 12.4 and later; older drivers scan no such kernel); memcpy and
 * memset endpoints; child graphs, recursively. An address inside the range
 * (base + offset) moves with the base. A scanned integer that happens to
 * hold an address inside the range is rebound too (a false positive):
 * GC_ARG_EXACT opts out of scanning. Addresses a kernel computes on the
 * device or reads from device memory cannot be found; gc_exec_arg_info
 * says how many uses were found. Execs instantiated before the
 * declaration do not see it. The range stays the caller's memory.
 * Which memory: a graphcore pool block, or memory the engine allocated
 * itself (cudaMalloc, cuMemAlloc, or a VMM range it mapped with cuMemCreate
 * and cuMemMap), with the same checks: the range must be device memory of
 * the graph's device (pageable or pinned host memory and memory of another
 * device are refused), hold `bytes` bytes (inside one live pool block; for
 * other memory, inside the allocation CUDA reports around ptr, which for
 * a VMM range is the one mapping that holds ptr), and be alive (a freed
 * pool block is refused; memory freed with cudaFree or cuMemFree is
 * refused while the driver does not know the address, that is unless a
 * later allocation got it). Bindings (gc_exec_launch_with) are checked
 * the same way, except that an exec remembers the last 8 allocations
 * outside graphcore's pools that bindings were checked against and does
 * not ask the driver again for ranges inside them: binding memory freed
 * after such a check is not detected. Kernel parameters rebind across
 * kinds (engine memory to pool memory and back); a copy node's endpoint
 * keeps its kind (see gc_exec_launch_with).
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph, ptr or index is NULL, bytes
 * is 0, an unknown flag, ptr is not device memory of the graph's device or
 * holds fewer than bytes bytes, or the range overlaps an argument declared
 * before), GC_ERROR_INVALID_HANDLE (graph destroyed),
 * GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
 */
enum gc_status gc_graph_declare_arg(struct gc_graph *graph,
                                    const void *ptr,
                                    size_t bytes,
                                    uint32_t flags,
                                    size_t *index);

/**
 * Declares a scalar argument of `graph`: a kernel parameter's value,
 * marked by the `size` bytes at `marker` (1 to 8 bytes, not all zero;
 * the bytes are copied), and writes its index to *index (numbered with
 * the range arguments of gc_graph_declare_arg, in declaration order). An
 * exec instantiated later takes as uses exactly the kernel parameters of
 * `size` bytes whose bytes equal the marker, each at the offset and size
 * of the kernel's parameter layout: graphcore's built-in kernels' scalar
 * parameters (from their table), and any other kernel's parameters where
 * the driver gives the layout (cuFuncGetParamInfo, CUDA 12.4 and later;
 * older drivers find no use in such kernels). Nothing else is looked at:
 * not unaligned words, not a parameter of another size (a 4-byte marker
 * does not match the low half of an 8-byte parameter), not copies or sets;
 * a parameter in which a range argument's address was found is not a
 * scalar use. So: give the launches you capture or add the marker as the
 * scalar's value (a value no other parameter of that size holds, such as
 * a NaN payload or an unlikely integer), and check gc_exec_arg_info: 0
 * uses means the marker matched nothing (wrong value or wrong size).
 * Values graphcore's ops hand to cuBLASLt are not kernel parameters of
 * theirs and are never uses: where gc_op_linear_backend gives cuBLASLt,
 * the weight update of gc_op_linear_weight_sgd and of the training steps
 * passes -lr to cuBLASLt, so a learning-rate marker there binds only the
 * bias update (graphcore's kernel); list the uses (gc_exec_arg_uses) to
 * see which launches took the marker, and rebind such a learning rate
 * only where those calls run graphcore's kernels (GC_LINEAR_GRAPHCORE in
 * the steps' _flags forms).
 * gc_exec_launch_with then binds it: a gc_binding whose `ptr` holds the
 * new value's bytes (memcpy them into ptr's first `size` bytes, the rest
 * zero: on the little-endian targets CUDA supports this is the value
 * zero-extended) and whose `bytes` is 0 or `size`; the parameters are
 * patched as address bindings patch theirs. The same marker with the same
 * size declared twice is refused; a marker equal to an address inside a
 * range argument is allowed (a parameter holding it is an address use).
 * From several threads: declarations on one graph are serialized with its
 * other changes, as the building calls are (see gc_graph_create).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (marker or index is NULL,
 * size is 0 or above 8, the marker is all zero bytes or was declared
 * before with the same size), GC_ERROR_INVALID_STATE (body rules: see
 * Conditional nodes).
 */
enum gc_status gc_graph_declare_scalar_arg(struct gc_graph *graph,
                                           const void *marker,
                                           size_t size,
                                           size_t *index);

/**
 * Creates an empty graph on ctx's device; destroy it with
 * gc_graph_destroy.
 * Errors: common, and GC_ERROR_OUT_OF_MEMORY.
 */
enum gc_status gc_graph_create(struct gc_context *ctx, struct gc_graph **graph);

/**
 * Adds a kernel node launching `function` with `grid`, `block` and
 * `shared_bytes` after the `ndeps` nodes in `deps`. `args` is as for
 * gc_launch; the values are copied now. The new node goes to *node (which
 * may be NULL). A node of another graph in `deps` is
 * GC_ERROR_INVALID_ARGUMENT. See the Launch section for `args`. Adding
 * costs about what CUDA's own add does: graphcore keeps the node's
 * dependencies, and its kind and parameters are read back from CUDA by the
 * first call that needs them, as a captured graph's are (see
 * gc_capture_end).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a zero or over-limit
 * dimension, deps is NULL with ndeps > 0, or a dependency of another graph or
 * out of range), GC_ERROR_INVALID_STATE (body rules: see Conditional
 * nodes), GC_ERROR_CUDA (the driver refused the node). The graph is
 * unchanged on failure.
 */
enum gc_status gc_graph_add_kernel(struct gc_graph *graph,
                                   struct gc_function *function,
                                   struct gc_dim3 grid,
                                   struct gc_dim3 block,
                                   uint32_t shared_bytes,
                                   void **args,
                                   const struct gc_node *deps,
                                   size_t ndeps,
                                   struct gc_node *node);

/**
 * Adds a copy of `bytes` bytes from `src` to `dst`, in any direction.
 * Host memory must be pinned (gc_host_alloc): a pageable host pointer is
 * GC_ERROR_INVALID_ARGUMENT here, not a failure at launch. Pool memory of
 * another device needs that pool's peer access for the graph's device
 * (gc_pool_enable_peer_access).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (bytes is 0, pageable or
 * unknown host memory, a range overrunning its pool block, pool memory of
 * another device without peer access, naming both, or a bad dependency as for
 * gc_graph_add_kernel), GC_ERROR_INVALID_STATE (body rules: see Conditional
 * nodes).
 */
enum gc_status gc_graph_add_memcpy(struct gc_graph *graph,
                                   void *dst,
                                   const void *src,
                                   size_t bytes,
                                   const struct gc_node *deps,
                                   size_t ndeps,
                                   struct gc_node *node);

/**
 * Adds a node setting `bytes` bytes of device memory at `dst` to the byte
 * `value`.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (bytes is 0, dst is not device
 * memory, the range overruns its pool block or is pool memory of another
 * device without peer access, or a bad dependency as for gc_graph_add_kernel),
 * GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
 */
enum gc_status gc_graph_add_memset(struct gc_graph *graph,
                                   void *dst,
                                   int value,
                                   size_t bytes,
                                   const struct gc_node *deps,
                                   size_t ndeps,
                                   struct gc_node *node);

/**
 * Adds a node setting `count` elements of `elem_size` bytes (1, 2 or 4)
 * of device memory at `dst` to `value` (its low elem_size bytes): a
 * cuMemsetD16/D32-style node. dst must be aligned to elem_size and value
 * must fit in an element. gc_graph_add_memset is this with elem_size 1.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (count is 0, elem_size is not
 * 1, 2 or 4, dst is not aligned to it, value does not fit in an element, dst
 * is not device memory, the range overruns its pool block or the address
 * space, or a bad dependency as for gc_graph_add_kernel),
 * GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
 */
enum gc_status gc_graph_add_memset_elem(struct gc_graph *graph,
                                        void *dst,
                                        uint32_t value,
                                        uint32_t elem_size,
                                        size_t count,
                                        const struct gc_node *deps,
                                        size_t ndeps,
                                        struct gc_node *node);

/**
 * Adds a node calling `func(user_data)` when it runs (on a CPU thread of
 * the driver; it must not call CUDA or graphcore). user_data must stay
 * valid while any exec of the graph may run.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a bad dependency as for
 * gc_graph_add_kernel), GC_ERROR_INVALID_STATE (body rules: see Conditional
 * nodes).
 */
enum gc_status gc_graph_add_host(struct gc_graph *graph,
                                 gc_host_fn func,
                                 void *user_data,
                                 const struct gc_node *deps,
                                 size_t ndeps,
                                 struct gc_node *node);

/**
 * Adds a node running a copy of `child` (later changes to child do not
 * affect it; child's pool memory stays alive with this graph).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (child is the graph itself or
 * empty, or a bad dependency as for gc_graph_add_kernel),
 * GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
 */
enum gc_status gc_graph_add_child(struct gc_graph *graph,
                                  struct gc_graph *child,
                                  const struct gc_node *deps,
                                  size_t ndeps,
                                  struct gc_node *node);

/**
 * Adds a node that does nothing: a join point for dependencies.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a bad dependency as for
 * gc_graph_add_kernel), GC_ERROR_INVALID_STATE (body rules: see Conditional
 * nodes).
 */
enum gc_status gc_graph_add_empty(struct gc_graph *graph,
                                  const struct gc_node *deps,
                                  size_t ndeps,
                                  struct gc_node *node);

/**
 * Makes `to` run after `from`. A node of another graph, a self-loop, an
 * edge already there, or an edge that would close a cycle is
 * GC_ERROR_INVALID_ARGUMENT with a message, and the graph is unchanged.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (the edge is refused as above,
 * or a node is out of range), GC_ERROR_INVALID_STATE (body rules: see
 * Conditional nodes).
 */
enum gc_status gc_graph_add_dependency(struct gc_graph *graph,
                                       struct gc_node from,
                                       struct gc_node to);

/**
 * Makes `to` depend on `from` through a programmatic edge (programmatic
 * dependent launch, CUDA 12.3, compute capability 9.0 or newer): kernel
 * node `to` may start launching once every block of kernel node `from`
 * has executed `griddepcontrol.launch_dependents`
 * (`cudaTriggerProgrammaticLaunchCompletion()`) or exited, so its launch
 * and prologue overlap `from`'s tail. `to` must call
 * `griddepcontrol.wait` (`cudaGridDependencySynchronize()`) before it
 * reads anything `from` writes: graphcore's built-in kernels do (on
 * compute capability 9.0 they run their compute_90 PTX, which waits
 * first), so either end may be one; a user kernel that does not wait
 * must not be `to`. The edge is kept by
 * gc_graph_clone, by fusion and in DOT output (dashed), and edges of this
 * kind in captured graphs are read back as such; gc_exec_update refuses a
 * graph whose edge kinds differ from the exec's. Refused edges leave the
 * graph unchanged. Below compute capability 9.0, or with a driver older
 * than CUDA 12.3 (checked at run time), the edge is added as a full one
 * (as gc_graph_add_dependency): `to` runs after `from` ends, with the
 * same results and no overlap, so one program serves every GPU.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a node of another graph or
 * out of range; a self-loop, an edge already there or one closing a cycle;
 * `from` or `to` not a kernel node), GC_ERROR_INVALID_STATE (body rules:
 * see Conditional nodes).
 */
enum gc_status gc_graph_add_programmatic_dependency(struct gc_graph *graph,
                                                    struct gc_node from,
                                                    struct gc_node to);

/**
 * Makes a new graph with the same nodes, parameters and edges as `graph`
 * (CUDA's clone; node i of the clone copies node i of graph, so gc_node
 * values carry over with the clone's id). The clone keeps graph's
 * functions and pool memory alive as graph does; later changes to either
 * leave the other as it is. Destroy it with gc_graph_destroy.
 * Errors: common, and GC_ERROR_INVALID_STATE (body rules: see Conditional
 * nodes), GC_ERROR_OUT_OF_MEMORY.
 */
enum gc_status gc_graph_clone(struct gc_graph *graph, struct gc_graph **clone);

/**
 * Flags of gc_graph_wrap: who destroys the CUgraph.
 */
typedef uint32_t gc_graph_wrap_flags;

/**
 * Borrow: the caller keeps the CUgraph alive while graphcore (the graph
 * and execs made from it) uses it, and destroys it afterwards.
 */
#define GC_GRAPH_WRAP_BORROW 0

/**
 * Adopt: graphcore destroys the CUgraph once the handle and the execs
 * made from it are gone, or when gc_graph_wrap fails counting its nodes (when it
 * fails on its arguments - a NULL or destroyed handle, unknown flags - the
 * CUgraph stays the caller's).
 */
#define GC_GRAPH_WRAP_ADOPT 1

/**
 * Wraps `raw`, a CUgraph (cudaGraph_t) of ctx's device built with the
 * CUDA API or captured outside graphcore. As for a captured graph, only its
 * node count is read now; its nodes and edges are read back by the first
 * call that needs them (nodes numbered in a dependency order). flags: GC_GRAPH_WRAP_BORROW or GC_GRAPH_WRAP_ADOPT (see them for
 * who destroys it). Do not change raw with the CUDA API afterwards (the
 * description graphcore keeps would go stale); the functions and memory
 * its nodes use stay the caller's to keep alive. graphcore cannot check
 * that raw is a live graph: anything else is undefined behaviour in CUDA.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags),
 * GC_ERROR_OUT_OF_MEMORY, GC_ERROR_DEVICE_FAULT (counting the nodes failed).
 */
enum gc_status gc_graph_wrap(struct gc_context *ctx,
                             void *raw,
                             gc_graph_wrap_flags flags,
                             struct gc_graph **graph);

/**
 * Writes the number of nodes to *count. A captured graph's count is read
 * from CUDA by the first call that needs it (this one, or gc_exec_stats),
 * not when the capture ends.
 * Errors: common (GC_ERROR_CUDA: reading a captured graph's count failed),
 * and GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
 */
enum gc_status gc_graph_node_count(struct gc_graph *graph, size_t *count);

/**
 * Writes the underlying CUgraph (a cudaGraph_t) to *raw, for CUDA calls
 * graphcore does not wrap. graphcore still owns it: do not destroy it, and
 * add nodes only through graphcore (its description would go stale).
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or raw is NULL),
 * GC_ERROR_INVALID_HANDLE (graph destroyed), GC_ERROR_INVALID_STATE (body
 * rules: see Conditional nodes).
 */
enum gc_status gc_graph_raw(struct gc_graph *graph, void **raw);

/**
 * Writes the pool bytes the graph holds to *bytes: what its capture (and
 * its child graphs' captures) allocated from the pool and had not freed
 * when the capture ended. 0 for graphs without pool memory. Those blocks
 * are the caller's to free (Pool section).
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or bytes is NULL),
 * GC_ERROR_INVALID_HANDLE (graph destroyed).
 */
enum gc_status gc_graph_pool_bytes(struct gc_graph *graph, uint64_t *bytes);

/**
 * Writes the graph to `path` in Graphviz DOT: one box per node (kernel
 * name and launch geometry, copy direction and size, ...) and its edges.
 * The file is created or replaced.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (path is not UTF-8, or the
 * file cannot be written: the message gives the OS error), GC_ERROR_CUDA
 * (reading a captured graph's nodes back failed), GC_ERROR_INVALID_STATE
 * (body rules: see Conditional nodes).
 */
enum gc_status gc_graph_write_dot(struct gc_graph *graph, const char *path);

/**
 * Drops this handle; execs made from the graph keep what they need.
 * NULL is a no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (graph already destroyed, or not a
 * graph).
 */
enum gc_status gc_graph_destroy(struct gc_graph *graph);

/* ==========================================================================
 * Conditional nodes (device-side control flow)
 *
 * Device-side control flow: conditional nodes (CUDA 12.3: IF and WHILE;
 * CUDA 12.8: IF/ELSE and SWITCH). A graph's conditional handle holds a
 * value that a kernel sets on the device (graphcore's setters,
 * gc_op_cond_*, or your own kernel calling cudaGraphSetConditional with
 * gc_cond_handle_raw); a conditional node added after that kernel runs its
 * bodies as the value says, with no round trip to the host. The bodies are
 * graphs (gc_graph handles) that you fill with the gc_graph_add_* calls or
 * by capturing into them (gc_capture_begin_into); they may hold
 * conditional nodes of their own.
 *
 * A WHILE node whose condition never becomes 0 runs forever and hangs the
 * GPU: set it at the end of the body with a setter that has an iteration
 * cap (gc_op_cond_count, or gc_op_cond_set_f32 with a counter).
 *
 * On a driver older than the version a call needs, it returns
 * GC_ERROR_NOT_SUPPORTED and the message names the version (12.3 or 12.8).
 * graphcore's setter kernels call the CUDA device runtime: they are linked
 * with libcudadevrt.a from the CUDA toolkit on first use (found through
 * GC_CUDADEVRT, CUDA_HOME, or /usr/local/cuda/lib64); without it they are
 * GC_ERROR_NOT_SUPPORTED, and your own kernels (built with nvcc -rdc=true
 * -lcudadevrt) still work.
 *
 * Updates: gc_exec_update refuses (GC_ERROR_INVALID_ARGUMENT) graphs with
 * conditional nodes, and gc_exec_set_kernel_args refuses nodes inside
 * bodies: instantiate again instead, or keep changing values in device
 * memory that the body's kernels read.
 *
 * Body rules: a body cannot change (nodes, edges, handles, a capture into
 * it) once the graph holding it was instantiated; while a capture into a
 * body is open, neither the body nor a graph holding it can be used; once
 * the graph holding a body is destroyed, the body cannot be used. Each is
 * GC_ERROR_INVALID_STATE (the error lists say "body rules").
 *
 * Thread safety: as for gc_graph. Build a graph and its bodies from one
 * thread; a body may not change once the graph holding it was instantiated.
 * While a capture into a body is open (gc_capture_begin_into until its
 * gc_capture_end), every call on that body or on a graph holding it
 * returns GC_ERROR_INVALID_STATE, and the capture keeps the holders alive
 * (their handles may be destroyed meanwhile). Once the graph holding a
 * body is destroyed, and no capture into the body is open, every call on
 * the body returns GC_ERROR_INVALID_STATE (CUDA destroyed the body with
 * its holder); only gc_graph_destroy of its handle remains to do.
 * ========================================================================== */

/**
 * A conditional handle: the graph it was made for and CUDA's handle
 * value. Plain data: copy it freely; it stays valid as long as the graph.
 */
typedef struct gc_cond_handle {
    /**
     * The id of the graph it belongs to (as gc_node.graph).
     */
    uint64_t graph;
    /**
     * CUDA's CUgraphConditionalHandle (cudaGraphConditionalHandle).
     */
    uint64_t raw;
} gc_cond_handle;

/**
 * gc_graph_conditional_handle_create flag: the handle gets its default
 * value again at every launch of the graph (else only at the first).
 */
#define GC_COND_RESET_ON_LAUNCH 1

/**
 * The kind of a conditional node.
 */
typedef uint32_t gc_cond_type;

/**
 * Runs body 0 when the value is not 0 (CUDA 12.3).
 */
#define GC_COND_IF 0

/**
 * Runs body 0 when the value is not 0, body 1 when it is 0 (CUDA 12.8).
 */
#define GC_COND_IF_ELSE 1

/**
 * Runs body 0 again and again while the value is not 0; set it inside
 * the body (CUDA 12.3).
 */
#define GC_COND_WHILE 2

/**
 * Runs body n when the value is n; none when it is >= the number of
 * cases (CUDA 12.8).
 */
#define GC_COND_SWITCH 3

/**
 * Makes a conditional handle for `graph`'s conditional nodes. With flags =
 * GC_COND_RESET_ON_LAUNCH its value is default_value at the start of
 * every launch. With flags 0 CUDA applies no default: default_value must
 * be 0, the value before a kernel first sets it is not specified by CUDA
 * (0 on the drivers tested), and a value set by one launch is seen by the
 * next. The graph owns the handle.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags, a nonzero
 * default_value with flags 0), GC_ERROR_INVALID_STATE (graph is a body whose
 * holder was instantiated or destroyed), GC_ERROR_NOT_SUPPORTED (the driver is
 * older than CUDA 12.3).
 */
enum gc_status gc_graph_conditional_handle_create(struct gc_graph *graph,
                                                  uint32_t default_value,
                                                  uint32_t flags,
                                                  struct gc_cond_handle *handle);

/**
 * Writes the CUDA handle value (a cudaGraphConditionalHandle) to *raw, for
 * your own kernel to pass to cudaGraphSetConditional.
 * Errors: GC_ERROR_INVALID_ARGUMENT (raw is NULL, or handle is zeroed: not
 * a handle gc_graph_conditional_handle_create made).
 */
enum gc_status gc_cond_handle_raw(struct gc_cond_handle handle, uint64_t *raw);

/**
 * Adds a conditional node of type `type` steered by `handle` (made for
 * this graph; one handle steers one node) after the ndeps nodes in deps,
 * and writes its B bodies to bodies[0..B): B is 1 for IF and WHILE, 2 for
 * IF/ELSE (body 1 is the else branch), `cases` for SWITCH. `cases` is the
 * SWITCH's number of cases (> 0); for the other types pass 0 or B.
 * nbodies is the number of handles bodies has room for: at least B
 * (entries from B on are left as they were). Each body is a new
 * gc_graph handle that the caller destroys with gc_graph_destroy (the body
 * itself belongs to the node: it goes when the graph does; a body handle
 * kept after that is GC_ERROR_INVALID_STATE). Fill the bodies before
 * instantiating the graph. The new node goes to *node (may be NULL).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (an unknown type, SWITCH with
 * 0 cases, cases not matching the type, nbodies too small, a handle of another
 * graph or one that already steers a node, or a bad dependency as for
 * gc_graph_add_kernel), GC_ERROR_INVALID_STATE (graph is a body whose holder
 * was instantiated or destroyed), GC_ERROR_NOT_SUPPORTED (the driver is older
 * than CUDA 12.3 for IF and WHILE, 12.8 for IF/ELSE and SWITCH),
 * GC_ERROR_OUT_OF_MEMORY. The graph is unchanged on failure.
 */
enum gc_status gc_graph_add_conditional(struct gc_graph *graph,
                                        gc_cond_type type,
                                        struct gc_cond_handle handle,
                                        uint32_t cases,
                                        const struct gc_node *deps,
                                        size_t ndeps,
                                        struct gc_node *node,
                                        struct gc_graph **bodies,
                                        size_t nbodies);

/**
 * Begins capturing `stream` into `body`, an empty conditional body: the
 * work enqueued on the stream until gc_capture_end(stream, &g) becomes the
 * body's nodes (g is then a new handle to the body, which the caller
 * destroys). With a pool, the capture's allocations belong to the
 * outermost graph holding the body (gc_graph_pool_bytes counts them), as
 * for gc_capture_begin. End the capture on the same stream.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (body is not a conditional
 * body or not empty, mode is not a gc_capture_mode), GC_ERROR_INVALID_STATE
 * (the stream is capturing already, a capture into the body is open, or its
 * holder was instantiated or destroyed), GC_ERROR_NOT_SUPPORTED (the driver is
 * older than CUDA 12.3), GC_ERROR_CAPTURE (CUDA cannot capture the stream).
 * Nothing is begun on failure.
 */
enum gc_status gc_capture_begin_into(struct gc_stream *stream,
                                     struct gc_graph *body,
                                     struct gc_pool *pool,
                                     gc_capture_mode mode);

/**
 * gc_op_cond_set_f32 comparison: *x < threshold.
 */
#define GC_CMP_LT 0

/**
 * gc_op_cond_set_f32 comparison: *x <= threshold.
 */
#define GC_CMP_LE 1

/**
 * gc_op_cond_set_f32 comparison: *x > threshold.
 */
#define GC_CMP_GT 2

/**
 * gc_op_cond_set_f32 comparison: *x >= threshold.
 */
#define GC_CMP_GE 3

/**
 * Sets conditional handle `handle` to the uint32 at `value` (device
 * memory, 4-byte aligned; for a SWITCH, the case to run). One thread; put
 * it before the conditional node it steers (capture it, or add it with
 * gc_graph_add_kernel via gc_kernel_builtin). Needs CUDA 12.3 and
 * libcudadevrt.a (Conditional section).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (value not 4-byte aligned),
 * GC_ERROR_NOT_SUPPORTED (a driver older than CUDA 12.3, or no libcudadevrt.a
 * to link the setters with), GC_ERROR_CAPTURE (the stream's capture refused
 * the launch), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (linking or loading the
 * setters, or the launch, failed).
 */
enum gc_status gc_op_cond_set_u32(struct gc_stream *stream,
                                  struct gc_cond_handle handle,
                                  const uint32_t *value);

/**
 * Adds 1 to the uint32 at `counter` and sets `handle` to (*counter <
 * limit). A WHILE's iteration cap: zero the counter before the node
 * (gc_graph_add_memset or a captured memset), launch this at the end of
 * the body, and the body runs at most `limit` times. (A WHILE whose value
 * never becomes 0 hangs the GPU.) Needs CUDA 12.3 and libcudadevrt.a.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (counter not 4-byte aligned,
 * limit 0), GC_ERROR_NOT_SUPPORTED and GC_ERROR_CAPTURE as gc_op_cond_set_u32,
 * GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (linking or loading the setters, or
 * the launch, failed).
 */
enum gc_status gc_op_cond_count(struct gc_stream *stream,
                                struct gc_cond_handle handle,
                                uint32_t *counter,
                                uint32_t limit);

/**
 * Sets `handle` to (*x cmp threshold), cmp one of GC_CMP_* (a NaN compares
 * false): e.g. a WHILE running while the loss of gc_op_mse is >= eps
 * (GC_CMP_GE). With a counter (may be NULL), also adds 1 to *counter and
 * sets 0 once *counter >= limit: the WHILE's iteration cap. x and counter
 * are device memory, 4-byte aligned. Needs CUDA 12.3 and libcudadevrt.a.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a pointer not 4-byte aligned,
 * an unknown cmp, counter given with limit 0, x and counter overlapping),
 * GC_ERROR_NOT_SUPPORTED and GC_ERROR_CAPTURE as gc_op_cond_set_u32,
 * GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (linking or loading the setters, or
 * the launch, failed).
 */
enum gc_status gc_op_cond_set_f32(struct gc_stream *stream,
                                  struct gc_cond_handle handle,
                                  const float *x,
                                  float threshold,
                                  uint32_t cmp,
                                  uint32_t *counter,
                                  uint32_t limit);

/* ==========================================================================
 * Exec
 *
 * Executable graphs: instantiate a graph (gc_graph_instantiate), then
 * upload, launch, update and patch it. Execs of graphs captured into one
 * pool share memory: they must not run concurrently (launch them on one
 * stream, or wait between them); graphcore does not detect it.
 * ========================================================================== */

/**
 * An instantiated, launchable graph.
 *
 * Ownership: gc_graph_instantiate returns a handle the caller destroys
 * with gc_exec_destroy. The exec keeps its graph's functions and pool
 * memory alive (the graph handle may go first); launches already enqueued
 * complete after the destroy.
 *
 * Thread safety: gc_exec_launch and gc_exec_launch_with may be called
 * from several threads at once, on the same or different execs, without
 * allocation (launches of one exec run one after another, as CUDA orders
 * them). Each launch runs with one whole set of bindings: the bindings a
 * gc_exec_launch_with sets are the ones its own launch uses, and a
 * gc_exec_launch runs with the last complete set (an exec whose graph
 * declares arguments takes an internal lock for this; one that declares
 * none takes no lock). gc_exec_update and gc_exec_set_kernel_args must
 * not race with a launch of the same exec, nor with each other; the
 * caller serializes them. gc_exec_destroy must not race with other calls
 * on the handle.
 */
typedef struct gc_exec gc_exec;

/**
 * gc_graph_instantiate flag: upload the graph to the device while
 * instantiating, so the first launch is as cheap as the next.
 */
#define GC_INSTANTIATE_UPLOAD 1

/**
 * gc_graph_instantiate flag: CUDA's AUTO_FREE_ON_LAUNCH (for graphs with
 * memory allocation nodes).
 */
#define GC_INSTANTIATE_AUTO_FREE_ON_LAUNCH 2

/**
 * gc_graph_instantiate flag: launch nodes in the order of their priority.
 */
#define GC_INSTANTIATE_USE_NODE_PRIORITY 4

/**
 * gc_graph_instantiate flag: fuse chains of graphcore's elementwise
 * kernels (fill, copy, scale, add_scalar, relu, chain) that work along one
 * buffer into launches of the fused chain kernel (up to 8 operations each)
 * before instantiating. Results are bitwise equal to the unfused graph's;
 * gc_exec_stats reports what was fused. Off by default: the exec's nodes
 * then no longer match the graph's one to one (profilers show the chain
 * kernel), which only this flag opts into.
 */
#define GC_INSTANTIATE_FUSE_ELEMENTWISE 8

/**
 * Instantiates `graph` (flags: GC_INSTANTIATE_*, or 0). An empty graph or
 * an unknown flag is GC_ERROR_INVALID_ARGUMENT. The exec keeps the graph's
 * functions and pool memory alive; the graph handle may be destroyed.
 * Execs of graphs captured into one pool must not run concurrently (they
 * share memory; graphcore does not detect it). When the driver refuses,
 * the message (gc_last_error) names the node CUDA blames, as "node 3
 * (kernel `name`)" (the index is the node's in the graph, as DOT output
 * numbers them; the name is the function's, cuFuncGetName's for foreign
 * kernels on CUDA 12.3 drivers and newer), and CUDA's instantiate result
 * (cuGraphInstantiateWithParams' CUgraphInstantiateResult), where CUDA
 * gives them.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (an empty graph, an unknown
 * flag, or a conditional body: instantiate the graph holding it),
 * GC_ERROR_INVALID_STATE (body rules: see Conditional nodes),
 * GC_ERROR_OUT_OF_MEMORY, GC_ERROR_CUDA (the driver refused to instantiate
 * or upload).
 */
enum gc_status gc_graph_instantiate(struct gc_graph *graph, uint32_t flags, struct gc_exec **exec);

/**
 * Uploads the exec's work to the device on `stream` ahead of its first
 * launch (stream of the exec's context).
 * Errors: common, and GC_ERROR_CAPTURE (the stream captures and CUDA refused).
 */
enum gc_status gc_exec_upload(struct gc_exec *exec, struct gc_stream *stream);

/**
 * Launches the exec on `stream` (any stream of its context). No heap
 * allocation and no lock another thread's launch could wait on, and no
 * change of the thread's current context unless stream is the legacy
 * default stream. Graphs sharing a pool must not run concurrently: order
 * their launches (graphcore does not detect overlap).
 * Errors: common, and GC_ERROR_CAPTURE (CUDA refused the launch under
 * capture).
 */
enum gc_status gc_exec_launch(struct gc_exec *exec, struct gc_stream *stream);

/**
 * One binding for gc_exec_launch_with and gc_runner_replay_with:
 * argument `index` (as gc_graph_declare_arg or gc_capture_arg numbered
 * it) now lives at `ptr`, a device range of `bytes` bytes. `bytes` 0
 * means "as large as the memory at ptr": graphcore then checks that the
 * declared size fits in ptr's allocation (or pool block). For a scalar
 * argument (gc_graph_declare_scalar_arg, gc_capture_scalar_arg), `ptr`
 * holds the new value's bytes instead (memcpy the value into its first
 * bytes, the rest zero) and `bytes` is 0 or the scalar's size: one array
 * binds addresses and scalars together, through the same patching.
 */
typedef struct gc_binding {
    /**
     * The argument's index.
     */
    size_t index;
    /**
     * The new first address (device memory of the exec's device).
     */
    void *ptr;
    /**
     * Bytes available at ptr (at least the declared size), or 0.
     */
    size_t bytes;
} gc_binding;

/**
 * Binds arguments to new ranges, then launches the exec on `stream` as
 * gc_exec_launch does: `bindings` holds n gc_binding (n may be 0:
 * bindings may be NULL, and this is gc_exec_launch). Only the nodes whose
 * values change are patched (CUDA's exec setters); binding an argument to
 * the address it has now costs nothing. Bindings persist: gc_exec_launch
 * and later calls keep the last ones; gc_exec_update keeps them too (the
 * uses are found again in the updating graph, at the declared ranges'
 * addresses, and set to the bound ones). A binding applies to launches
 * made after it: a launch of the exec already enqueued or running uses
 * the addresses it was launched with (CUDA documents its exec setters so).
 * The caller owns the memory a binding names: it must stay valid while
 * launches using it may run and, since bindings persist, for as long as
 * plain launches may follow, that is until the argument is bound
 * elsewhere or the exec is destroyed (graphcore cannot tell when memory
 * it does not own is freed or reused; the Python package's Exec and
 * Runner keep the objects bound alive that long). Any bad binding is
 * GC_ERROR_INVALID_ARGUMENT naming it (a block given back with
 * gc_pool_free included), and the exec is unchanged and not launched. No
 * heap allocation. An argument that is an endpoint of a copy node (from
 * gc_memcpy_async captured, or gc_graph_add_memcpy) binds only to memory
 * of the kind it was declared on: graphcore pool memory to pool memory,
 * memory allocated otherwise (cudaMalloc, cuMemAlloc) to such memory
 * (CUDA refuses the change of kind; graphcore refuses it first,
 * GC_ERROR_INVALID_ARGUMENT). Uses: exact for built-in kernels, copies and sets
 * (addresses inside the range); for other kernels every 8-byte-aligned
 * parameter word inside the range, or one past its end (the end of a
 * (begin, end) pair), is patched, so a scalar parameter that happens to
 * equal such an address is patched too (gc_exec_arg_info counts it among
 * the uses found). The way out: declare the argument with GC_ARG_EXACT
 * (then only built-in kernels, copies and sets are rebound for it, no
 * other kernel's parameters), or keep such scalars out of the values of
 * declared ranges.
 * A scalar argument's binding is checked for its size only: `bytes` 0 or
 * the scalar's size, and no bits in ptr above that size (an address given
 * for a 4-byte scalar, most likely); its value is not checked otherwise.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (bindings NULL while n is not
 * 0, an exec whose graph declared no arguments, an unknown argument index, an
 * argument bound twice, a NULL, host or other device's address, a freed pool
 * block, or a range smaller than declared; for a scalar argument, bytes
 * neither 0 nor its size, or value bits above its size), GC_ERROR_CAPTURE (as
 * gc_exec_launch), GC_ERROR_CUDA (the driver refused a new value: the old
 * bindings are back).
 */
enum gc_status gc_exec_launch_with(struct gc_exec *exec,
                                   struct gc_stream *stream,
                                   const struct gc_binding *bindings,
                                   size_t n);

/**
 * Writes to *uses how many uses of argument `index` the exec found in its
 * nodes (kernel parameters, memcpy and memset endpoints, child graphs'
 * included; for a scalar argument, the kernel parameters holding its
 * marker): a caller checks that a captured library was covered (0 means
 * binding the argument changes nothing: for a scalar, a marker that
 * matched no parameter of its size).
 * Errors: GC_ERROR_INVALID_ARGUMENT (exec or uses is NULL, or index is
 * not a declared argument), GC_ERROR_INVALID_HANDLE (exec destroyed).
 */
enum gc_status gc_exec_arg_info(struct gc_exec *exec, size_t index, size_t *uses);

/**
 * What a use of a declared argument is (gc_arg_use's `kind`).
 */
typedef uint32_t gc_arg_use_kind;

/**
 * A kernel parameter (`offset` is its byte offset in the parameters).
 */
#define GC_ARG_USE_KERNEL 0

/**
 * A copy node's destination.
 */
#define GC_ARG_USE_MEMCPY_DST 1

/**
 * A copy node's source.
 */
#define GC_ARG_USE_MEMCPY_SRC 2

/**
 * A memset node's destination.
 */
#define GC_ARG_USE_MEMSET 3

/**
 * One use of a declared argument, filled in by gc_exec_arg_uses (a plain
 * array entry: no struct_size).
 */
typedef struct gc_arg_use {
    /**
     * The node's index in the graph the exec was instantiated from (DOT's
     * node `n<index>`, the index errors name); SIZE_MAX for a fused
     * chain's kernel.
     */
    size_t node;
    /**
     * A gc_arg_use_kind.
     */
    uint32_t kind;
    /**
     * 1 when the use is inside the child graph that node `node` runs.
     */
    uint32_t nested;
    /**
     * For a kernel, the byte offset of the patched 8-byte word in its
     * parameter buffer; 0 otherwise.
     */
    size_t offset;
    /**
     * The used address minus the argument's first address.
     */
    uint64_t delta;
    /**
     * The kernel's name, NUL-terminated (cut to 63 bytes); "" otherwise.
     */
    char kernel[64];
} gc_arg_use;

/**
 * Lists the uses of argument `index` that gc_exec_arg_info counts, in
 * node order: writes the first min(*count, capacity) to `uses` and the
 * number of uses to *count (call with capacity 0 and uses NULL to size
 * the array; more uses than capacity is not an error). An engine checks
 * that the scan found the uses it expected (the node, the kernel and the
 * parameter offset) and nothing else. The caller owns the array.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (uses NULL while capacity
 * is not 0, count NULL, or index is not a declared argument).
 * Thread safety: may run from any thread, concurrently with
 * gc_exec_launch_with of the same exec (both take the exec's argument
 * lock).
 */
enum gc_status gc_exec_arg_uses(struct gc_exec *exec,
                                size_t index,
                                struct gc_arg_use *uses,
                                size_t capacity,
                                size_t *count);

/**
 * Updates the exec in place with the parameters of `graph`, a graph of
 * the same topology (same node kinds in the same order, same edges). A
 * different topology is GC_ERROR_UPDATE_MISMATCH naming the first
 * differing node; the exec is unchanged and stays usable. A kernel node's
 * function is one of its parameters: it may change to another function of
 * the context, within CUDA's limits for cuGraphExecUpdate (not to one using
 * dynamic parallelism or device-side graph launches where the old one did
 * not: the driver's refusal is GC_ERROR_UPDATE_MISMATCH or GC_ERROR_CUDA).
 * A refusal names the node as gc_graph_instantiate's errors do, with
 * CUDA's reason (cuGraphExecUpdate's result info).
 * Graphs with conditional nodes are not updated: either the exec's graph
 * or `graph` having one is GC_ERROR_INVALID_ARGUMENT (instantiate again).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (the exec's graph or graph
 * has conditional nodes), GC_ERROR_INVALID_STATE (body rules: see
 * Conditional nodes), GC_ERROR_UPDATE_MISMATCH (another topology, or for a
 * fused exec other chains).
 */
enum gc_status gc_exec_update(struct gc_exec *exec, struct gc_graph *graph);

/**
 * Sets new argument values for the kernel node `node` of the graph the
 * exec was instantiated from; later launches use them. `args` is as for
 * gc_launch: one pointer per kernel parameter, in order, no count (the
 * kernel's own parameter list decides; see the Launch section); the
 * values are copied now. graphcore checks that node is a kernel node of
 * that graph; it cannot check the count or types of a module's or wrapped
 * kernel's arguments, while for a built-in kernel it reads exactly its
 * known parameters. A node fused into a chain
 * (GC_INSTANTIATE_FUSE_ELEMENTWISE) may change only its constants; other
 * changes are GC_ERROR_UPDATE_MISMATCH.
 * Use the nodes of the instantiated graph even after gc_exec_update (the
 * updating graph's nodes are of another graph; they correspond by index).
 * Nodes inside conditional bodies cannot be set in an exec (they are
 * nodes of another graph, the body): set them in the body before
 * instantiating.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (node is of another graph, a
 * conditional body's included, out of range, or not a kernel node),
 * GC_ERROR_UPDATE_MISMATCH (the change would
 * alter a fused chain), GC_ERROR_CUDA (the driver refused the parameters). The
 * exec is unchanged on failure.
 */
enum gc_status gc_exec_set_kernel_args(struct gc_exec *exec, struct gc_node node, void **args);

/**
 * What an exec holds, filled in by gc_exec_stats.
 */
typedef struct gc_exec_statistics {
    /**
     * Set to sizeof(gc_exec_statistics) before the call.
     */
    size_t struct_size;
    /**
     * Nodes of the graph the exec was instantiated from.
     */
    uint64_t graph_nodes;
    /**
     * Nodes removed by GC_INSTANTIATE_FUSE_ELEMENTWISE.
     */
    uint64_t fused_away;
    /**
     * Nodes of the graph that was instantiated.
     */
    uint64_t instantiated_nodes;
    /**
     * Elementwise chains fused.
     */
    uint64_t chains;
} gc_exec_statistics;

/**
 * Fills *stats (set stats->struct_size = sizeof(gc_exec_statistics)):
 * node counts before and after fusion.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a wrong struct_size),
 * GC_ERROR_CUDA (reading the node count of the captured graph the exec was
 * instantiated or last updated from, which no call had read yet).
 */
enum gc_status gc_exec_stats(struct gc_exec *exec, struct gc_exec_statistics *stats);

/**
 * Writes the graph that was instantiated (after fusion, if any) to `path`
 * in Graphviz DOT. The file is created or replaced.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (path is not UTF-8, or the
 * file cannot be written: the message gives the OS error), GC_ERROR_CUDA
 * (reading a captured graph's nodes back failed).
 */
enum gc_status gc_exec_write_dot(struct gc_exec *exec, const char *path);

/**
 * Writes the underlying CUgraphExec (a cudaGraphExec_t) to *raw, for CUDA
 * calls graphcore does not wrap. graphcore still owns it: do not destroy it.
 * Errors: GC_ERROR_INVALID_ARGUMENT (exec or raw is NULL),
 * GC_ERROR_INVALID_HANDLE (exec destroyed).
 */
enum gc_status gc_exec_raw(struct gc_exec *exec, void **raw);

/**
 * Destroys the exec (work already launched completes). NULL is a no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (exec already destroyed, or not an exec).
 */
enum gc_status gc_exec_destroy(struct gc_exec *exec);

/* ==========================================================================
 * Runner
 *
 * Bucketed graphs: one graph per batch size, all sharing one pool, as
 * PyTorch serves a model with one CUDA graph per batch size. A replay
 * picks the smallest bucket that holds the rows asked for; the caller pads
 * its input to that size.
 * ========================================================================== */

/**
 * A family of graphs keyed by batch size, sharing one pool.
 *
 * Ownership: gc_runner_create returns a handle the caller destroys with
 * gc_runner_destroy, which destroys the runner's graphs (their pool memory
 * returns to the pool), its stream, and the row-count tables of
 * gc_runner_capture_exact (blocks of its pool). The runner holds its pool: a pool
 * passed in stays the caller's handle and may be destroyed before the
 * runner.
 *
 * Thread safety: gc_runner_replay, gc_runner_replay_with and
 * gc_runner_stats may run from several threads at once on one runner
 * (a plain replay must not race with a replay with bindings of the same
 * bucket: as for gc_exec_launch_with; gc_runner_replay_exact is a replay
 * with bindings here, and replays of one bucket of gc_runner_capture_exact
 * bind its row count one at a time). gc_runner_capture and
 * gc_runner_capture_exact exclude them: they wait until it returns. The buckets share the runner's pool, so the GPU
 * work of two replays must not overlap: replay on one stream, or order
 * the streams (graphcore does not detect it). gc_runner_destroy must not
 * race with other calls on the handle.
 */
typedef struct gc_runner gc_runner;

/**
 * Most buckets one runner holds.
 */
#define GC_RUNNER_MAX_BUCKETS 16

/**
 * Records one bucket's work on `stream` for `batch` rows (graphcore's
 * gc_op_* calls, gc_launch, your own kernels on gc_stream_raw(stream)...).
 * Called for the warm-up runs, then once under capture, always on the
 * thread that called gc_runner_capture, before that call returns. The
 * stream is the runner's (do not destroy it; synchronizing it under
 * capture breaks the capture); while it
 * captures, gc_pool_alloc on the runner's pool from this thread allocates
 * for the capture. It must not call gc_runner_* on the same runner (that
 * would deadlock). Return GC_SUCCESS, or the failing call's status to
 * abort gc_runner_capture.
 */
typedef enum gc_status (*gc_record_fn)(struct gc_stream *stream, uint32_t batch, void *user_data);

/**
 * Records one bucket's work for an exact-size capture
 * (gc_runner_capture_exact): as gc_record_fn, and `rows` is the device
 * address of a uint32_t row count holding `batch` (in the warm-ups and in
 * the capture) that the ops recorded read when they run (gc_op_linear_rows,
 * gc_op_mlp_rows, or your own kernels given it): gc_runner_replay_exact
 * binds it to the rows asked for. Declare the ranges whose rows the ops
 * read or write (the input, the output) with gc_capture_arg and
 * GC_ARG_ROWS, sized for `batch` rows.
 */
typedef enum gc_status (*gc_record_rows_fn)(struct gc_stream *stream,
                                            uint32_t batch,
                                            const uint32_t *rows,
                                            void *user_data);

/**
 * Fallback flag: run the record function eagerly on the caller's stream
 * instead of replaying a graph (gc_runner_set_fallback, gc_cache_options,
 * gc_cache_set_fallback). The environment variable GRAPHCORE_DISABLE=1
 * (read once per process) turns it on for every runner and cache.
 */
#define GC_FALLBACK_EAGER 1

/**
 * Fallback flag: hard fail. Where the object would run its record
 * function eagerly (GC_FALLBACK_EAGER or GRAPHCORE_DISABLE=1), the call
 * fails with GC_ERROR_INVALID_STATE instead and runs nothing.
 */
#define GC_FALLBACK_HARD_FAIL 2

/**
 * One bucket in gc_runner_statistics.
 */
typedef struct gc_runner_bucket {
    /**
     * Rows the bucket's graph was captured for.
     */
    uint32_t batch;
    /**
     * Nodes in its graph.
     */
    uint32_t node_count;
    /**
     * Microseconds from the start of its capture to its uploaded exec.
     */
    double capture_us;
    /**
     * Pool bytes its capture allocated and still held when it ended.
     */
    uint64_t pool_bytes;
} gc_runner_bucket;

/**
 * A runner's statistics: its buckets, smallest first, and its pool's.
 */
typedef struct gc_runner_statistics {
    /**
     * Set to sizeof(gc_runner_statistics) before calling gc_runner_stats.
     */
    size_t struct_size;
    /**
     * Buckets in use in `buckets`.
     */
    uint32_t bucket_count;
    /**
     * The buckets.
     */
    struct gc_runner_bucket buckets[GC_RUNNER_MAX_BUCKETS];
    /**
     * The shared pool's statistics.
     */
    struct gc_pool_statistics pool;
    /**
     * Eager runs made instead of replays (fallback; see
     * gc_runner_set_fallback). Added after the struct's first version: a
     * caller built with an older header (a smaller struct_size) gets the
     * fields before it only.
     */
    uint64_t eager_runs;
    /**
     * Bit i set: `buckets[i]`'s graph takes exact-size replays
     * (gc_runner_replay_exact). Added after eager_runs, as it was.
     */
    uint32_t exact_buckets;
} gc_runner_statistics;

/**
 * Creates a runner whose graphs share `pool` (NULL: a new pool of its own,
 * no initial bytes, no cap), with a stream of its own for warm-ups and
 * captures.
 * Errors: common, and GC_ERROR_NOT_SUPPORTED (a new pool needs virtual memory
 * management), GC_ERROR_OUT_OF_MEMORY.
 */
enum gc_status gc_runner_create(struct gc_context *ctx,
                                struct gc_pool *pool,
                                struct gc_runner **runner);

/**
 * Captures one graph per bucket size in `buckets` (`n` of them, at most
 * GC_RUNNER_MAX_BUCKETS in all): `record` runs `warmup_runs` times per
 * bucket eagerly on the runner's side stream, then once per bucket under
 * capture, largest first, into the shared pool; each graph is instantiated
 * and uploaded. `record` runs on the calling thread. gc_runner_capture
 * waits for the warm-up work before the first capture and for each upload,
 * so all its work is done when it returns. If `record` fails or breaks a
 * capture, this call fails with that error, adds no bucket, and leaves no
 * pool growth behind: the blocks the failed capture allocated are freed
 * (and if the pool grew, it is trimmed as by gc_pool_trim). Blocks `record`
 * allocates in warm-up runs (eagerly) or keeps in a successful capture are
 * the caller's to free.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (n is 0, a size is 0 or given
 * twice or already a bucket, or more than GC_RUNNER_MAX_BUCKETS buckets in
 * all), GC_ERROR_CAPTURE (a capture broke), GC_ERROR_OUT_OF_MEMORY, or any
 * status `record` returned (its message kept in gc_last_error()).
 */
enum gc_status gc_runner_capture(struct gc_runner *runner,
                                 const uint32_t *buckets,
                                 size_t n,
                                 gc_record_fn record,
                                 void *user_data,
                                 uint32_t warmup_runs);

/**
 * gc_runner_capture for exact-size replays (gc_runner_replay_exact):
 * `record` also gets `rows`, the device address of a uint32_t row count
 * holding the bucket's rows; the ops it records read their row count there
 * (gc_op_linear_rows, gc_op_mlp_rows), and it declares the ranges whose
 * rows they read or write with gc_capture_arg and GC_ARG_ROWS (sized for
 * the bucket's rows). The runner declares the row count as the last
 * argument of each capture, after the record function's. A bucket's graph
 * takes exact-size replays when some kernel reads the row count and every
 * use of a GC_ARG_ROWS range is a kernel (not in a child graph) that reads
 * it too, and each such range's bytes are a multiple of the bucket's rows;
 * otherwise the bucket is added all the same (for gc_runner_replay and
 * gc_runner_replay_with) and gc_runner_replay_exact of it is
 * GC_ERROR_INVALID_STATE, naming the use that stops it
 * (gc_runner_statistics.exact_buckets tells which buckets take them). The
 * row counts are a table of uint32_t (0 to the largest bucket of the call)
 * that the runner allocates from its pool before the warm-ups and frees
 * when it is destroyed. Otherwise as gc_runner_capture (warm-ups, order,
 * rollback, record's rules).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (n is 0, a size is 0 or
 * given twice or already a bucket, or more than GC_RUNNER_MAX_BUCKETS
 * buckets in all), GC_ERROR_CAPTURE (a capture broke),
 * GC_ERROR_OUT_OF_MEMORY (also: the row-count table), or any status
 * `record` returned (its message kept in gc_last_error()).
 */
enum gc_status gc_runner_capture_exact(struct gc_runner *runner,
                                       const uint32_t *buckets,
                                       size_t n,
                                       gc_record_rows_fn record,
                                       void *user_data,
                                       uint32_t warmup_runs);

/**
 * Sets the runner's fallback flags (GC_FALLBACK_EAGER,
 * GC_FALLBACK_HARD_FAIL, or 0) for the calls after this one. While the
 * runner runs eagerly (the flag, or GRAPHCORE_DISABLE=1): gc_runner_capture
 * records nothing (the buckets are added without graphs; no warm-up
 * runs), and gc_runner_replay, gc_runner_replay_with and
 * gc_runner_replay_exact run the record function of the last
 * gc_runner_capture (or gc_runner_capture_exact) once, on the stream given, for
 * the bucket they choose (the batch a graph would have been captured for),
 * from the calling thread, instead of replaying; bindings are not applied
 * (the record function works on the buffers it names itself: with
 * user_data, and gc_capture_arg only while gc_stream_is_capturing says so,
 * it gets the same results eagerly as replayed). Never silent: each eager
 * run counts in gc_runner_statistics.eager_runs, and the process's first
 * prints one line on stderr. With GC_FALLBACK_HARD_FAIL, each of these
 * calls fails with GC_ERROR_INVALID_STATE instead and nothing runs. A
 * bucket added while the runner ran eagerly has no graph: replaying it
 * after the flag is cleared is GC_ERROR_INVALID_STATE. The user_data of
 * the last capture must stay valid while eager replays may call it.
 * Errors: GC_ERROR_INVALID_ARGUMENT (runner is NULL, or an unknown flag),
 * GC_ERROR_INVALID_HANDLE (runner destroyed).
 */
enum gc_status gc_runner_set_fallback(struct gc_runner *runner, uint32_t flags);

/**
 * Replays the smallest bucket of at least `rows` rows on `stream` and
 * writes its size to *bucket (the caller pads its input to it). More rows
 * than the largest bucket is GC_ERROR_NO_BUCKET: run that batch eagerly.
 * A bucket of gc_runner_capture_exact replays its whole rows: its row
 * count is bound back to them, and a GC_ARG_ROWS argument that an
 * exact-size replay bound to fewer rows is refused (bind it again with
 * gc_runner_replay_with).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows is 0, or a
 * GC_ARG_ROWS argument bound to fewer rows than the bucket's; nothing is
 * launched),
 * GC_ERROR_NO_BUCKET (rows over the largest bucket, or no bucket captured
 * yet), GC_ERROR_CAPTURE (as gc_exec_launch).
 */
enum gc_status gc_runner_replay(struct gc_runner *runner,
                                uint32_t rows,
                                struct gc_stream *stream,
                                uint32_t *bucket);

/**
 * gc_runner_replay with bindings: binds the arguments in the chosen
 * bucket's exec, as gc_exec_launch_with does, then replays it and writes
 * its size to *bucket. Each bucket's capture declares its arguments with
 * gc_capture_arg on the stream the record function gets, in the same
 * order, so an index names the same argument (the input, the output...)
 * in every bucket. Bindings persist per bucket: the memory bound must
 * stay valid, as for gc_exec_launch_with, until that bucket's argument is
 * bound elsewhere or the runner is destroyed, since a plain replay that
 * chooses the bucket uses it. A bucket of gc_runner_capture_exact replays
 * its whole rows here (its row count bound back to them; every GC_ARG_ROWS
 * argument must then be bound to the bucket's rows, here or before).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (bindings NULL while n is not
 * 0, rows is 0, or a bad binding as for gc_exec_launch_with, naming the
 * bucket; nothing is launched), GC_ERROR_NO_BUCKET (rows over the largest
 * bucket, or no bucket captured yet), GC_ERROR_CAPTURE (as gc_exec_launch).
 */
enum gc_status gc_runner_replay_with(struct gc_runner *runner,
                                     uint32_t rows,
                                     struct gc_stream *stream,
                                     const struct gc_binding *bindings,
                                     size_t n,
                                     uint32_t *bucket);

/**
 * Replays the smallest bucket of at least `rows` rows with its row count
 * bound to `rows` (an exact-size request: no padding), binding `bindings`
 * (n of them) as gc_runner_replay_with does, except that a GC_ARG_ROWS
 * argument's range needs only `rows` rows (its declared bytes / the
 * bucket's rows * rows: bytes that many or more, or 0 to have the memory
 * checked for that many), and writes the bucket's size to *bucket. The
 * graph reads and writes the first `rows` rows of those ranges only, so
 * input and output tensors of exactly `rows` rows are bound as they are:
 * nothing is copied, and outputs are exactly `rows` rows. A GC_ARG_ROWS
 * argument not bound here must be bound to at least `rows` rows already
 * (a binding persists, and so does its size: after an exact-size replay of
 * fewer rows, bind it again; gc_runner_replay and gc_runner_replay_with of
 * that bucket then need its whole rows bound too, and refuse otherwise).
 * The row count is the runner's to bind: a binding of it is refused. The
 * bucket must have been captured with gc_runner_capture_exact and take
 * exact-size replays (gc_runner_statistics.exact_buckets). While the
 * runner runs eagerly (gc_runner_set_fallback) the record function runs
 * with its row count holding `rows`, on its own buffers, bindings not
 * applied (as for gc_runner_replay_with).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (bindings NULL while n is
 * not 0, rows is 0, a binding of the row count, a GC_ARG_ROWS argument
 * bound to fewer than `rows` rows, or a bad binding as for
 * gc_exec_launch_with, naming the bucket; nothing is launched),
 * GC_ERROR_INVALID_STATE (the bucket takes no exact-size replay: captured
 * with gc_runner_capture, or a use of a GC_ARG_ROWS range that does not
 * read the row count, named in gc_last_error(); nothing is launched),
 * GC_ERROR_NO_BUCKET (rows over the largest bucket, or no bucket captured
 * yet), GC_ERROR_CAPTURE (as gc_exec_launch).
 */
enum gc_status gc_runner_replay_exact(struct gc_runner *runner,
                                      uint32_t rows,
                                      struct gc_stream *stream,
                                      const struct gc_binding *bindings,
                                      size_t n,
                                      uint32_t *bucket);

/**
 * Fills *stats (set stats->struct_size = sizeof(gc_runner_statistics)):
 * per bucket its capture time, node count and pool bytes, and the pool's
 * totals.
 * Errors: GC_ERROR_INVALID_ARGUMENT (runner or stats is NULL, or a wrong
 * struct_size), GC_ERROR_INVALID_HANDLE (runner destroyed).
 */
enum gc_status gc_runner_stats(struct gc_runner *runner, struct gc_runner_statistics *stats);

/**
 * Destroys the runner, its graphs (their pool memory returns to the
 * pool) and its stream. NULL is a no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (runner already destroyed, or not a
 * runner).
 */
enum gc_status gc_runner_destroy(struct gc_runner *runner);

/* ==========================================================================
 * Cache (graphs keyed by bytes, under a budget)
 *
 * A graph cache with a budget: graphs keyed by the caller's bytes (a
 * shape signature, say), recorded on a miss by the caller's record
 * function, all in one pool of the cache's own, and evicted least
 * recently used first to stay within at most max_entries entries and
 * max_bytes bytes.
 *
 * Bytes: an entry costs the pool memory its graph keeps plus its exec's
 * estimated size. The cache's total (gc_cache_statistics.bytes) is exact
 * for the pool part: the pool pages held by live graphs (2 MiB each on
 * current GPUs; a page two entries share counts once), and estimated for
 * the execs: GC_CACHE_EXEC_BASE_BYTES plus node_bytes per node (default
 * GC_CACHE_DEFAULT_NODE_BYTES, NVIDIA CUDASTF's figure of about 10 KB per
 * kernel node: CUDA does not say what an instantiated graph costs). Per
 * entry, gc_cache_entry_info gives the most pool bytes its capture had
 * allocated at once (pages may be shared with other entries) and its
 * exec estimate. While a new entry is recorded the pool may hold more
 * for a moment; when the gc_cache_launch that added it returns, its
 * evictions are done, their memory is back in the pool, the pool is
 * trimmed (free pages go back to the driver: a wait for the device,
 * skipped while a capture is open in the context), and the cache is
 * within its budget. So an engine can size its other memory
 * after warming the cache up: the pool's reserved bytes stay within
 * max_bytes, plus any blocks the record function keeps (see below).
 *
 * Recency: a hit writes only its entry's "last used" word (when it
 * changes); the clock advances at each miss, so eviction is exactly least
 * recently used across misses, and among entries used since the same miss
 * the one recorded first goes first.
 *
 * Eager fallback: with GC_FALLBACK_EAGER set (gc_cache_set_fallback, the
 * options' flags) or GRAPHCORE_DISABLE=1 in the environment (read once per
 * process, for every cache and runner), gc_cache_launch runs the record
 * function on the caller's stream instead of launching a graph, with the
 * key given; cached entries are neither used nor dropped. Never silent:
 * each eager run is counted (eager_runs) and the first one of the process
 * prints one line on stderr. With GC_FALLBACK_HARD_FAIL set, such a
 * launch fails with GC_ERROR_INVALID_STATE instead and runs nothing. An
 * eager run does not apply bindings: the record function runs on the
 * buffers it names itself, so an engine whose record function reads its
 * buffers from user_data (and declares them with gc_capture_arg only when
 * gc_stream_is_capturing says the stream captures) gets the same results
 * eagerly as replayed. Graphs with conditional nodes: graphcore's calls
 * cannot put one into a record function's capture. Capturing into a
 * conditional body (gc_capture_begin_into) on the stream the record
 * function captures on is GC_ERROR_INVALID_STATE (the stream is already
 * capturing), which fails gc_cache_launch with the cache unchanged; the
 * other ways to a conditional node (gc_graph_add_conditional, a capture
 * into a body on another stream) make graphs of the caller's, not the
 * entry's. So no cached graph has a conditional node to fall back from,
 * and an eager run is the record function's own code on a stream that
 * does not capture: control flow there is the caller's (a record function
 * that adds a conditional node to the capture with the CUDA API itself
 * does that node's work eagerly when gc_stream_is_capturing says 0).
 *
 * Thread safety: gc_cache_launch may run from several threads at once;
 * a hit takes a read lock for the lookup and the launch, no allocation. A
 * miss records under the cache's recording lock (one at a time; other
 * keys' hits go on meanwhile, a wait for the device excepted when an
 * eviction releases memory). Entries share the pool, so the GPU work of
 * two launches must not overlap: launch on one stream, or order the
 * streams (graphcore does not detect it). gc_cache_destroy must not race
 * with other calls on the handle.
 * ========================================================================== */

/**
 * A budgeted cache of graphs keyed by bytes, sharing one pool.
 *
 * Ownership: gc_cache_create returns a handle the caller destroys with
 * gc_cache_destroy, which destroys the entries' graphs, the cache's
 * stream and its pool (unless a handle from gc_cache_pool is still
 * alive; then the pool goes with the last of them).
 *
 * Thread safety: see the section above.
 */
typedef struct gc_cache gc_cache;

/**
 * Options of gc_cache_create (NULL means all defaults).
 */
typedef struct gc_cache_options {
    /**
     * Set to sizeof(gc_cache_options).
     */
    size_t struct_size;
    /**
     * Most entries held; default 64. 0 is GC_ERROR_INVALID_ARGUMENT.
     */
    size_t max_entries;
    /**
     * Most bytes held (see the section above); default 1 GiB. 0 is
     * GC_ERROR_INVALID_ARGUMENT.
     */
    uint64_t max_bytes;
    /**
     * Eager runs of the record function before each capture; default 1.
     */
    uint32_t warmup_runs;
    /**
     * GC_FALLBACK_EAGER and GC_FALLBACK_HARD_FAIL, or 0 (default).
     */
    uint32_t flags;
    /**
     * Estimated bytes of an exec per node; 0 (default) means
     * GC_CACHE_DEFAULT_NODE_BYTES.
     */
    uint64_t node_bytes;
} gc_cache_options;

/**
 * What an exec costs besides its nodes, in the byte budget's estimate.
 */
#define GC_CACHE_EXEC_BASE_BYTES 16384

/**
 * The default estimate of an exec's bytes per node.
 */
#define GC_CACHE_DEFAULT_NODE_BYTES 10240

/**
 * gc_cache_launch's *outcome: the key's graph was cached and launched.
 */
#define GC_CACHE_HIT 0

/**
 * gc_cache_launch's *outcome: the key's graph was recorded, then launched.
 */
#define GC_CACHE_MISS 1

/**
 * gc_cache_launch's *outcome: the record function ran eagerly (fallback).
 */
#define GC_CACHE_EAGER 2

/**
 * Records one entry's work on `stream` for the key (key_len bytes at
 * `key`, as given to gc_cache_launch): graphcore's gc_op_* calls,
 * gc_launch, your own kernels on gc_stream_raw(stream)... Called on a miss
 * for the warm-up runs and once under capture on the cache's stream (do
 * not destroy or synchronize it; gc_pool_alloc on the handle from
 * gc_cache_pool allocates for the capture), and for eager runs on the
 * stream given to gc_cache_launch; always on the thread that called
 * gc_cache_launch, before it returns. It must not call gc_cache_* on the
 * same cache (that would deadlock). Blocks it allocates from the cache's
 * pool during the capture and does not free are the caller's, as with
 * gc_runner_capture; they count in the pool but in no entry. Return
 * GC_SUCCESS, or the failing call's status to fail gc_cache_launch.
 */
typedef enum gc_status (*gc_cache_record_fn)(struct gc_stream *stream,
                                             const void *key,
                                             size_t key_len,
                                             void *user_data);

/**
 * A cache's statistics.
 */
typedef struct gc_cache_statistics {
    /**
     * Set to sizeof(gc_cache_statistics) before calling gc_cache_stats.
     */
    size_t struct_size;
    /**
     * Entries held.
     */
    uint64_t entries;
    /**
     * Launches whose key was cached.
     */
    uint64_t hits;
    /**
     * Launches whose key was recorded (then launched).
     */
    uint64_t misses;
    /**
     * Entries evicted (to stay within the budget, or by gc_cache_clear).
     */
    uint64_t evictions;
    /**
     * Eager runs made instead of launches (fallback).
     */
    uint64_t eager_runs;
    /**
     * Recordings that failed (the record function failed or broke its
     * capture, or the graph alone was over the budget).
     */
    uint64_t failed_records;
    /**
     * The bytes the budget counts: pool_bytes + exec_bytes.
     */
    uint64_t bytes;
    /**
     * Pool bytes held by the entries' graphs (pages; shared ones once).
     */
    uint64_t pool_bytes;
    /**
     * The entries' exec estimates, summed.
     */
    uint64_t exec_bytes;
    /**
     * The budget: most entries.
     */
    uint64_t max_entries;
    /**
     * The budget: most bytes.
     */
    uint64_t max_bytes;
    /**
     * The cache's pool's statistics.
     */
    struct gc_pool_statistics pool;
} gc_cache_statistics;

/**
 * One entry in gc_cache_entry_info.
 */
typedef struct gc_cache_entry {
    /**
     * Set to sizeof(gc_cache_entry) before calling gc_cache_entry_info.
     */
    size_t struct_size;
    /**
     * Nodes in its graph.
     */
    uint64_t node_count;
    /**
     * The most pool bytes its capture had allocated at once.
     */
    uint64_t pool_bytes;
    /**
     * Its exec's estimated size.
     */
    uint64_t exec_bytes;
    /**
     * pool_bytes + exec_bytes.
     */
    uint64_t bytes;
    /**
     * Microseconds from the start of its capture to its uploaded exec.
     */
    double capture_us;
} gc_cache_entry;

/**
 * Creates a cache with a pool of its own (no initial bytes) and a stream
 * of its own for warm-ups and captures. options may be NULL (defaults).
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (a wrong
 * options->struct_size, max_entries or max_bytes is 0, an unknown flag),
 * GC_ERROR_NOT_SUPPORTED (pools need virtual memory management),
 * GC_ERROR_OUT_OF_MEMORY.
 */
enum gc_status gc_cache_create(struct gc_context *ctx,
                               const struct gc_cache_options *options,
                               struct gc_cache **cache);

/**
 * Looks the key (key_len bytes at `key`, compared byte for byte) up and
 * launches its graph on `stream` with `bindings` (n of them; n may be 0
 * and bindings NULL: a plain launch), as gc_exec_launch_with does; writes
 * GC_CACHE_HIT, GC_CACHE_MISS or GC_CACHE_EAGER to *outcome (outcome may
 * be NULL). On a miss, `record` runs warmup_runs times on the cache's
 * stream, then once under capture into the cache's pool; the graph is
 * instantiated and uploaded (waited for), added, and the least recently
 * used entries are evicted (never the new one) until the cache is within
 * its budget, and the pool is trimmed; then it is launched. Its arguments are those the record
 * function declared with gc_capture_arg, in order. On a hit `record` is
 * not called (it may be NULL if the caller knows the key is cached:
 * a miss with a NULL record is GC_ERROR_INVALID_ARGUMENT, nothing
 * changed). For eager runs see the section above.
 * Failures leave the cache as it was (no entry added or evicted, the
 * pool's growth given back), except that a bad binding after a miss
 * leaves the new entry cached.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (key NULL or key_len 0,
 * bindings NULL while n is not 0, a bad binding as for
 * gc_exec_launch_with, or a miss with record NULL), GC_ERROR_CAPTURE (the
 * record function broke its capture), GC_ERROR_OUT_OF_MEMORY (the new
 * graph alone is over max_bytes, or the pool or the device ran out),
 * GC_ERROR_INVALID_STATE (an eager run in hard-fail mode), or any status
 * `record` returned (its message kept in gc_last_error()).
 */
enum gc_status gc_cache_launch(struct gc_cache *cache,
                               const void *key,
                               size_t key_len,
                               struct gc_stream *stream,
                               const struct gc_binding *bindings,
                               size_t n,
                               gc_cache_record_fn record,
                               void *user_data,
                               int *outcome);

/**
 * Fills *stats (set stats->struct_size = sizeof(gc_cache_statistics)):
 * the counters, the bytes the budget counts, the budget, and the pool's
 * statistics.
 * Errors: GC_ERROR_INVALID_ARGUMENT (cache or stats is NULL, or a wrong
 * struct_size), GC_ERROR_INVALID_HANDLE (cache destroyed).
 */
enum gc_status gc_cache_stats(struct gc_cache *cache, struct gc_cache_statistics *stats);

/**
 * Fills *info (set info->struct_size = sizeof(gc_cache_entry)) for the
 * key's entry. Does not count as a use (recency is unchanged).
 * Errors: GC_ERROR_INVALID_ARGUMENT (cache, key or info is NULL, key_len
 * is 0, or a wrong struct_size), GC_ERROR_INVALID_HANDLE (cache
 * destroyed), GC_ERROR_NOT_FOUND (the key is not cached).
 */
enum gc_status gc_cache_entry_info(struct gc_cache *cache,
                                   const void *key,
                                   size_t key_len,
                                   struct gc_cache_entry *info);

/**
 * Sets the cache's fallback flags (GC_FALLBACK_EAGER,
 * GC_FALLBACK_HARD_FAIL, or 0) for the launches after this call; entries
 * stay cached while the cache runs eagerly.
 * Errors: GC_ERROR_INVALID_ARGUMENT (cache is NULL, or an unknown flag),
 * GC_ERROR_INVALID_HANDLE (cache destroyed).
 */
enum gc_status gc_cache_set_fallback(struct gc_cache *cache, uint32_t flags);

/**
 * Changes the budget; entries over the new one are evicted at once (least
 * recently used first) and the pool trimmed. A budget of 0 entries or 0
 * bytes is refused and nothing changes.
 * Errors: common, and GC_ERROR_INVALID_ARGUMENT (max_entries or max_bytes
 * is 0), GC_ERROR_OUT_OF_MEMORY (the pool still holds more than max_bytes
 * with every entry evicted: blocks the caller kept; the budget is set).
 */
enum gc_status gc_cache_set_budget(struct gc_cache *cache, size_t max_entries, uint64_t max_bytes);

/**
 * Writes a new handle to the cache's pool to *pool, for record functions
 * to allocate from (during a capture, for the capture) and for its
 * statistics. The caller destroys the handle with gc_pool_destroy; the
 * pool lives while the cache or a handle does.
 * Errors: GC_ERROR_INVALID_ARGUMENT (cache or pool is NULL),
 * GC_ERROR_INVALID_HANDLE (cache destroyed), GC_ERROR_OUT_OF_MEMORY (too
 * many live pool handles).
 */
enum gc_status gc_cache_pool(struct gc_cache *cache, struct gc_pool **pool);

/**
 * Evicts every entry (counted in evictions) and trims the pool (as
 * gc_pool_trim, which waits for the device).
 * Errors: common, and GC_ERROR_INVALID_STATE (a capture is open in the
 * context: the entries are gone, the trim is not done).
 */
enum gc_status gc_cache_clear(struct gc_cache *cache);

/**
 * Destroys the cache, its graphs and its stream, and drops its hold on
 * its pool. NULL is a no-op.
 * Errors: GC_ERROR_INVALID_HANDLE (cache already destroyed, or not a
 * cache).
 */
enum gc_status gc_cache_destroy(struct gc_cache *cache);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

/* The built-in ops: their own header, which needs the declarations above. */
#include "graphcore_ops.h"

#endif  /* GRAPHCORE_H */
