/*
 * graphcore: a CUDA Graph runtime - the C API of libgraphcore.so.
 *
 * Generated from ffi/ by cbindgen (ffi/cbindgen.toml) and tests/header.rs,
 * which groups the items into sections; do not edit. Regenerate with
 * `make header`.
 *
 * Conventions: every fallible call returns gc_status; results go through
 * out-parameters, written only on success; gc_last_error() says what went
 * wrong. Each function's doc has an `Errors:` line listing the statuses it
 * returns and when. Handles are opaque and checked: NULL is
 * GC_ERROR_INVALID_ARGUMENT, a destroyed handle or one of another kind is
 * GC_ERROR_INVALID_HANDLE. gc_<thing>_destroy(NULL) is a no-op. Option and
 * result structs start with size_t struct_size: set it to sizeof the
 * struct; NULL options mean defaults.
 *
 * Sections, by object: status and version, device and context, stream,
 * pool, host memory and copies, module and function, launch and built-in
 * ops, capture, graph, exec, runner. Each opens with a banner; each handle
 * type's doc states its ownership and thread safety (which calls may run at
 * once on one handle, and which the caller must serialize).
 */

#ifndef GRAPHCORE_H
#define GRAPHCORE_H

#include <stddef.h>
#include <stdint.h>

/* The handle types, declared first so every section may name them (each is
 * documented in its own section). */
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
 * Errors lists: each function's doc has a line starting with `Errors:`
 * naming the statuses it returns besides GC_SUCCESS, each with when. One
 * status is left out of those lists because any call may return it:
 * GC_ERROR_PANIC, a bug inside graphcore caught at the boundary (please
 * report it; the library stays usable). GC_ERROR_CUDA and
 * GC_ERROR_DEVICE_FAULT are listed for every call that reaches the driver.
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
     * see "After GC_ERROR_DEVICE_FAULT" above.
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
 * loads the built-in kernels). Capturing into a conditional body
 * (gc_capture_begin_into, and the gc_capture_end that ends it) and a
 * failed gc_capture_end do bind. Do not rely on a launch or a capture to
 * make a device current. (Checked on CUDA 13 drivers: a driver that still
 * wants a current context for these makes them fail with GC_ERROR_CUDA
 * on a thread where none is; make one current first, e.g. with any call
 * that binds.) For the runtime API a call that binds
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or info is NULL, or a wrong
 * struct_size), GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context),
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (reading free memory failed).
 */
enum gc_status gc_context_info(struct gc_context *ctx, struct gc_device_info *info);

/**
 * Waits for all work on the context's device. While a graphcore capture is
 * open in the context this is GC_ERROR_INVALID_STATE and nothing happens:
 * a device-wide synchronize from any thread invalidates every capture on
 * the device (synchronize the streams you need instead).
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx is NULL), GC_ERROR_INVALID_HANDLE
 * (ctx destroyed), GC_ERROR_INVALID_STATE (a graphcore capture is open in
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or stream is NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_OUT_OF_MEMORY (the
 * driver or the handle table is out of memory), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or stream is NULL, or priority
 * outside the device's range; the message gives the range),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_OUT_OF_MEMORY (the
 * driver or the handle table is out of memory), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT (from the driver).
 */
enum gc_status gc_stream_create_with_priority(struct gc_context *ctx,
                                              int priority,
                                              struct gc_stream **stream);

/**
 * Writes the stream priorities of ctx's device: *least (the default
 * priority, 0 on current GPUs) and *greatest (the highest priority, the
 * lowest number, e.g. -5), for gc_stream_create_with_priority.
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx, least or greatest is NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT (from the driver).
 */
enum gc_status gc_stream_priority_range(struct gc_context *ctx, int *least, int *greatest);

/**
 * Borrows `raw`, a CUstream or cudaStream_t of ctx's device that the
 * caller owns and keeps alive while graphcore uses it (graphcore never
 * destroys it; gc_stream_destroy drops only the handle). NULL is the
 * legacy default stream. graphcore cannot check that raw is a stream of
 * ctx's device: a stream of another device is undefined behaviour in CUDA.
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or stream is NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_OUT_OF_MEMORY,
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (creating the stream's event failed).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (a NULL handle, or streams of two
 * contexts), GC_ERROR_INVALID_HANDLE (a destroyed handle), GC_ERROR_CAPTURE
 * (CUDA refused the wait under capture, e.g. joining two captures; the
 * capture is invalid now), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_stream_wait_stream(struct gc_stream *stream, struct gc_stream *other);

/**
 * Blocks until the stream's work is done. On a capturing stream this fails
 * with GC_ERROR_CAPTURE and invalidates the capture (as CUDA does); the
 * error of gc_capture_end then names this call.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream is NULL),
 * GC_ERROR_INVALID_HANDLE (stream destroyed), GC_ERROR_CAPTURE (the stream
 * is capturing), GC_ERROR_DEVICE_FAULT (work on the stream faulted),
 * GC_ERROR_CUDA (another failure of the work or the wait).
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
 * gone. Querying, synchronizing on or timing an
 * event whose latest record was made in a still-open capture is refused by
 * CUDA (GC_ERROR_CAPTURE).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or event is NULL, or unknown
 * flags), GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_OUT_OF_MEMORY
 * (the driver or the handle table is out of memory), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx, raw or event is NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_OUT_OF_MEMORY (the
 * handle table), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (making ctx current).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (event or stream is NULL, unknown
 * flags, or two contexts), GC_ERROR_INVALID_HANDLE (a destroyed handle),
 * GC_ERROR_CAPTURE (CUDA refused the record under capture; the capture is
 * invalid now), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or event is NULL, unknown
 * flags, or two contexts), GC_ERROR_INVALID_HANDLE (a destroyed handle),
 * GC_ERROR_CAPTURE (CUDA refused the wait under capture, e.g. a plain wait
 * on an event recorded outside it; the capture is invalid now),
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_stream_wait_event(struct gc_stream *stream,
                                    struct gc_event *event,
                                    gc_event_capture_flags flags);

/**
 * Blocks until the work the event's latest record stands for is done (at
 * once for an event never recorded).
 * Errors: GC_ERROR_INVALID_ARGUMENT (event is NULL),
 * GC_ERROR_INVALID_HANDLE (event destroyed), GC_ERROR_CAPTURE (its latest
 * record was made in a capture still open), GC_ERROR_DEVICE_FAULT (the
 * work faulted), GC_ERROR_CUDA (another failure).
 */
enum gc_status gc_event_synchronize(struct gc_event *event);

/**
 * Writes 1 to *done when the work the event's latest record stands for is
 * done (or it was never recorded), 0 when it is still running; never
 * blocks.
 * Errors: GC_ERROR_INVALID_ARGUMENT (event or done is NULL),
 * GC_ERROR_INVALID_HANDLE (event destroyed), GC_ERROR_CAPTURE (its latest
 * record was made in a capture still open), GC_ERROR_DEVICE_FAULT (the
 * work faulted), GC_ERROR_CUDA (another failure).
 */
enum gc_status gc_event_query(struct gc_event *event, int *done);

/**
 * Writes the milliseconds from `start`'s latest record to `end`'s to *ms
 * (about half a microsecond resolution; negative when end was recorded
 * first). Both must record times, be of one context, and be done.
 * Errors: GC_ERROR_INVALID_ARGUMENT (a NULL argument, events of two
 * contexts, or an event made with GC_EVENT_DISABLE_TIMING),
 * GC_ERROR_INVALID_HANDLE (a destroyed handle), GC_ERROR_INVALID_STATE
 * (the work of either is not done yet: synchronize on end first),
 * GC_ERROR_CAPTURE (a record made in a capture still open), GC_ERROR_CUDA
 * (e.g. an event never recorded, or a borrowed event without timing),
 * GC_ERROR_DEVICE_FAULT.
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
 * released (after a wait for the device) when the last of them goes.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or pool is NULL, a wrong
 * options->struct_size, initial_bytes over max_bytes or over the device's
 * memory), GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_NOT_SUPPORTED
 * (the device lacks virtual memory management), GC_ERROR_OUT_OF_MEMORY
 * (mapping initial_bytes, or reserving the address range, failed),
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
 */
enum gc_status gc_pool_create(struct gc_context *ctx,
                              const struct gc_pool_options *options,
                              struct gc_pool **pool);

/**
 * Allocates `bytes` (rounded up to 256; the address is 256-byte aligned).
 * On a thread capturing into this pool (gc_capture_begin with this pool),
 * the block belongs to the capture (see the section above for what that
 * means and who frees it). The caller frees the block with gc_pool_free.
 * Errors: GC_ERROR_INVALID_ARGUMENT (pool or ptr is NULL, bytes is 0 or
 * overflows), GC_ERROR_INVALID_HANDLE (pool destroyed),
 * GC_ERROR_OUT_OF_MEMORY (past max_bytes or the device's memory; the pool
 * is unchanged), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (mapping new pages
 * failed; the pool is unchanged).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (pool is NULL), GC_ERROR_INVALID_HANDLE
 * (pool destroyed), GC_ERROR_INVALID_STATE (a capture is open in the
 * context), GC_ERROR_DEVICE_FAULT (the wait found faulted work),
 * GC_ERROR_CUDA.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (pool or peer is NULL, or peer is a
 * context of the pool's own device), GC_ERROR_INVALID_HANDLE (pool or
 * peer destroyed), GC_ERROR_NOT_SUPPORTED (peer's device has no peer path
 * to the pool's: cuDeviceCanAccessPeer says no), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or ptr is NULL, or bytes is 0),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_OUT_OF_MEMORY (the
 * driver could not pin that much), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_host_alloc(struct gc_context *ctx, size_t bytes, void **ptr);

/**
 * Frees memory from gc_host_alloc. A pointer that is not a live
 * allocation of this context (never allocated, or freed twice) is
 * GC_ERROR_INVALID_ARGUMENT and nothing happens. The memory must not be
 * in use by work still running (synchronize first).
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx is NULL, or ptr is not a live
 * allocation of this context), GC_ERROR_INVALID_HANDLE (ctx destroyed),
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, dst or src is NULL, a range
 * overruns its pool block or the address space, or is pool memory of
 * another device without peer access for the stream's device, naming
 * both devices),
 * GC_ERROR_INVALID_HANDLE (stream destroyed), GC_ERROR_CAPTURE (CUDA
 * refused the copy under capture, e.g. from pageable host memory; the
 * capture is invalid now), GC_ERROR_CUDA (e.g. an address CUDA does not
 * know), GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_memcpy_async(struct gc_stream *stream, void *dst, const void *src, size_t bytes);

/**
 * Sets `bytes` bytes of device memory at `dst` to the byte `value` on
 * `stream`. Zero bytes is a no-op. A range that starts in a live pool block
 * and runs past its end is refused. Recorded, not run, when the stream
 * captures.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or dst is NULL, the range
 * overruns its pool block or the address space, or is pool memory of
 * another device without peer access), GC_ERROR_INVALID_HANDLE
 * (stream destroyed), GC_ERROR_CAPTURE (CUDA refused it under capture),
 * GC_ERROR_CUDA (e.g. dst is not device memory), GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_memset_async(struct gc_stream *stream, void *dst, int value, size_t bytes);

/**
 * Sets `count` elements of `elem_size` bytes (1, 2 or 4) of device memory
 * at `dst` to `value` (its low elem_size bytes) on `stream`, as
 * cuMemsetD8/D16/D32Async do. dst must be aligned to elem_size and value
 * must fit in an element. Zero elements is a no-op. A range that starts in
 * a live pool block and runs past its end is refused. Recorded, not run,
 * when the stream captures. gc_memset_async is this with elem_size 1.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or dst is NULL, elem_size is
 * not 1, 2 or 4, dst is not aligned to it, value does not fit in an
 * element, the range overruns its pool block or the address space, or is
 * pool memory of another device without peer access),
 * GC_ERROR_INVALID_HANDLE (stream destroyed), GC_ERROR_CAPTURE (CUDA
 * refused it under capture), GC_ERROR_CUDA (e.g. dst is not device
 * memory), GC_ERROR_DEVICE_FAULT.
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
 * the handle may go first. A wrapped CUfunction stays the caller's: keep
 * its module loaded while graphcore uses it.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx, image or module is NULL, or size
 * is 0), GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_CUDA (the driver
 * refused the image: malformed, for another architecture, or PTX newer
 * than the driver), GC_ERROR_OUT_OF_MEMORY, GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_module_load(struct gc_context *ctx,
                              const void *image,
                              size_t size,
                              struct gc_module **module);

/**
 * Looks up the extern "C" kernel `name` in a module. The function keeps
 * the module loaded; destroy it with gc_function_destroy.
 * Errors: GC_ERROR_INVALID_ARGUMENT (module, name or function is NULL, or
 * name is not UTF-8), GC_ERROR_INVALID_HANDLE (module destroyed),
 * GC_ERROR_NOT_FOUND (no kernel of that name), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx, raw or function is NULL, or name
 * is not UTF-8), GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_CUDA
 * (raw is not a usable CUfunction), GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_function_wrap(struct gc_context *ctx,
                                void *raw,
                                const char *name,
                                struct gc_function **function);

/**
 * A built-in kernel by name (the list, with each kernel's arguments, is in
 * the "Built-in kernels" list that ends the Launch section). Unknown names are
 * GC_ERROR_NOT_FOUND. The built-in modules load on first use (in relaxed
 * capture mode, so a first use during a capture does not break it).
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx, name or function is NULL, or name
 * is not UTF-8), GC_ERROR_INVALID_HANDLE (ctx destroyed),
 * GC_ERROR_NOT_FOUND (no built-in of that name), GC_ERROR_CUDA (loading
 * the built-in modules failed), GC_ERROR_DEVICE_FAULT.
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
 * Launch and built-in ops
 *
 * Launches: any gc_function on a stream (gc_launch), and the typed
 * gc_op_* calls of the built-in kernels.
 *
 * Kernel arguments (gc_launch, gc_graph_add_kernel,
 * gc_exec_set_kernel_args) follow cuLaunchKernel: `void **args` holds one
 * pointer per kernel parameter, in order, each to a value of that
 * parameter's type; there is no count. The values are copied before the
 * call returns, so the caller's storage may go away afterwards. args may
 * be NULL only for a kernel without parameters. graphcore cannot check
 * the count or the types of a kernel from a module or gc_function_wrap:
 * too few pointers is undefined behaviour, as with cuLaunchKernel. For a
 * built-in kernel the layout is known (listed at the end of this section)
 * and graphcore reads exactly those parameters.
 *
 * Typed launches of the built-in kernels: each picks the launch
 * configuration, checks sizes and pointers (0, overflow, misalignment,
 * overlapping outputs: GC_ERROR_INVALID_ARGUMENT with a message, and
 * nothing is launched), and works eagerly or under capture.
 *
 * Every export here is one wrapper: its signature (spelled out for
 * cbindgen) and an `op!` body naming the typed operation of
 * `graphcore_kernels::ops` it runs; the body takes the export's name from
 * the function it is in, so the name is written once.
 *
 * Programmatic dependent launch: on GPUs of compute capability 9.0 with a
 * CUDA 12.3 driver, the kernels (their compute_90 PTX) wait on the kernel
 * before them and trigger the one after, and these exports launch them
 * with programmatic stream serialization, so a kernel's launch and weight
 * prefetch overlap the previous kernel's tail; captured, consecutive ops
 * are joined by programmatic edges. Cooperative launches (gc_op_mlp's
 * fused form, gc_op_mlp2_mse_step's first launch) and GEMMs whose grid
 * fills the SMs (gc_op_linear beyond 256 rows, and the backward and
 * weight-gradient GEMMs of large layers) stay fully ordered.
 * Results are bitwise the same either way. The environment variable
 * GC_PDL=0, read once per process, turns these launches off (plain
 * launches, full edges), e.g. for A/B measurements.
 *
 * Thread safety: any number of threads may launch on any streams.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (function or stream is NULL, a zero or
 * over-limit dimension, more than 1024 threads a block, or a function and
 * stream of two contexts), GC_ERROR_INVALID_HANDLE (a destroyed handle),
 * GC_ERROR_CAPTURE (CUDA refused the launch under capture; the capture is
 * invalid now), GC_ERROR_CUDA (the driver refused the launch, e.g. too
 * much shared memory), GC_ERROR_DEVICE_FAULT (earlier work faulted).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or func is NULL),
 * GC_ERROR_INVALID_HANDLE (stream destroyed), GC_ERROR_CAPTURE (CUDA
 * refused it under capture; the capture is invalid now), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT (earlier work faulted).
 */
enum gc_status gc_launch_host_func(struct gc_stream *stream, gc_host_fn func, void *user_data);

/**
 * One operation of gc_op_chain: an opcode (GC_CHAIN_*) and its constant.
 */
typedef struct gc_chain_op {
    /**
     * GC_CHAIN_FILL, GC_CHAIN_MUL, GC_CHAIN_ADD, GC_CHAIN_RELU, GC_CHAIN_MAX or GC_CHAIN_MIN.
     */
    uint32_t op;
    /**
     * The constant (ignored by GC_CHAIN_RELU).
     */
    float value;
} gc_chain_op;

/**
 * Chain opcode: v = value (a fill; the input is not read when first).
 */
#define GC_CHAIN_FILL 1

/**
 * Chain opcode: v = v * value (bitwise as gc_op_scale).
 */
#define GC_CHAIN_MUL 2

/**
 * Chain opcode: v = v + value (bitwise as gc_op_add_scalar).
 */
#define GC_CHAIN_ADD 3

/**
 * Chain opcode: v = max(v, 0) (bitwise as gc_op_relu).
 */
#define GC_CHAIN_RELU 4

/**
 * Chain opcode: v = max(v, value).
 */
#define GC_CHAIN_MAX 5

/**
 * Chain opcode: v = min(v, value).
 */
#define GC_CHAIN_MIN 6

/**
 * Most operations one gc_op_chain call applies.
 */
#define GC_CHAIN_MAX_OPS 8

/**
 * Applies up to GC_CHAIN_MAX_OPS operations to each of n elements in one
 * pass, in registers: `y[i] = op_last(... op_first(x[i]))`. ops holds count
 * operations (it may be NULL when count is 0: y = x); the caller keeps it,
 * and graphcore reads it only during the call.
 * Pointers: y and x are device memory of the stream's context (gc_pool_alloc
 * blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned
 * (float alignment); when both are 16-byte aligned the float4 path runs.
 * When the first operation is GC_CHAIN_FILL, x is not read and may be NULL.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or y NULL, x NULL unless the
 * first operation is a fill, ops NULL with count > 0, count >
 * GC_CHAIN_MAX_OPS (ops is then not read), an unknown opcode, n == 0 or
 * too large, a pointer not 4-byte aligned, y and x partly overlapping),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_chain(struct gc_stream *stream,
                           float *y,
                           const float *x,
                           uint64_t n,
                           const struct gc_chain_op *ops,
                           uint32_t count);

/**
 * Fills y[0..n) with value.
 * Pointers: y is device memory of the stream's context (gc_pool_alloc
 * blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned
 * (float alignment); 16-byte aligned takes the float4 path.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or y NULL, n == 0 or too
 * large, y not 4-byte aligned), GC_ERROR_INVALID_HANDLE (stream destroyed
 * or not a stream), GC_ERROR_CAPTURE (the stream's capture refused the
 * launch; the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or
 * GC_ERROR_CUDA (loading the built-in kernels on first use, or the launch,
 * failed), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_fill(struct gc_stream *stream, float *y, uint64_t n, float value);

/**
 * y = x (n floats).
 * Pointers: y and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when both are 16-byte aligned the
 * float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
 * large, a pointer not 4-byte aligned, y and x partly overlapping),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_copy(struct gc_stream *stream, float *y, const float *x, uint64_t n);

/**
 * y = alpha * x (n floats).
 * Pointers: y and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when both are 16-byte aligned the
 * float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
 * large, a pointer not 4-byte aligned, y and x partly overlapping),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_scale(struct gc_stream *stream,
                           float *y,
                           const float *x,
                           uint64_t n,
                           float alpha);

/**
 * y = x + c (n floats).
 * Pointers: y and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when both are 16-byte aligned the
 * float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
 * large, a pointer not 4-byte aligned, y and x partly overlapping),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_add_scalar(struct gc_stream *stream,
                                float *y,
                                const float *x,
                                uint64_t n,
                                float c);

/**
 * y = alpha * x + y (one fused multiply-add per element, n floats).
 * Pointers: y and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when both are 16-byte aligned the
 * float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
 * large, a pointer not 4-byte aligned, y and x partly overlapping),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_axpy(struct gc_stream *stream,
                          float *y,
                          const float *x,
                          uint64_t n,
                          float alpha);

/**
 * z = x + y (n floats).
 * Pointers: z, x and y are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when all are 16-byte aligned the
 * float4 path runs.
 * In place: z may equal x and/or y; z partly overlapping either is refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, z, x or y NULL, n == 0 or too
 * large, a pointer not 4-byte aligned, z partly overlapping an input),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_add(struct gc_stream *stream,
                         float *z,
                         const float *x,
                         const float *y,
                         uint64_t n);

/**
 * z = x * y (n floats).
 * Pointers: z, x and y are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when all are 16-byte aligned the
 * float4 path runs.
 * In place: z may equal x and/or y; z partly overlapping either is refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, z, x or y NULL, n == 0 or too
 * large, a pointer not 4-byte aligned, z partly overlapping an input),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_mul(struct gc_stream *stream,
                         float *z,
                         const float *x,
                         const float *y,
                         uint64_t n);

/**
 * y = max(x, 0) (n floats; NaN propagates, -0 becomes +0).
 * Pointers: y and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when both are 16-byte aligned the
 * float4 path runs.
 * In place: y == x is allowed; partly overlapping y and x are refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
 * large, a pointer not 4-byte aligned, y and x partly overlapping),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_relu(struct gc_stream *stream, float *y, const float *x, uint64_t n);

/**
 * dx = x > 0 ? dy : 0 (n floats).
 * Pointers: dx, dy and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when all are 16-byte aligned the
 * float4 path runs.
 * In place: dx may equal dy and/or x; dx partly overlapping either is
 * refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, dx, dy or x NULL, n == 0 or
 * too large, a pointer not 4-byte aligned, dx partly overlapping an input),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_relu_backward(struct gc_stream *stream,
                                   float *dx,
                                   const float *dy,
                                   const float *x,
                                   uint64_t n);

/**
 * w -= lr * g (one fused multiply-add per element, n floats).
 * Pointers: w and g are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); when both are 16-byte aligned the
 * float4 path runs.
 * In place: w is updated in place; w and g must not overlap at all.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, w or g NULL, n == 0 or too
 * large, a pointer not 4-byte aligned, w and g overlapping),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_sgd(struct gc_stream *stream, float *w, const float *g, uint64_t n, float lr);

/**
 * `y[r][c] = x[r][c] + b[c]` for a row-major rows x cols matrix (rows *
 * cols < 2^32).
 * Pointers: y, x and b are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); the float4 path runs when all are
 * 16-byte aligned and cols % 4 == 0.
 * In place: y == x is allowed; y partly overlapping x, or overlapping b,
 * is refused.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, y, x or b NULL, rows or cols
 * 0, rows * cols >= 2^32, a pointer not 4-byte aligned, a refused
 * overlap), GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_bias_add(struct gc_stream *stream,
                              float *y,
                              const float *x,
                              const float *b,
                              uint32_t rows,
                              uint32_t cols);

/**
 * gc_op_linear flag: ReLU after the bias.
 */
#define GC_LINEAR_RELU 1

/**
 * gc_op_linear flag: multiply on the TF32 tensor cores (compute capability
 * 8.0 or later) where the GEMM runs, and from 129 rows on where n is wide
 * enough to pay: x and W are rounded to TF32 (10 mantissa bits, to
 * nearest) and the products summed in f32, so results differ from the f32
 * path by that rounding (each product off by up to about 2^-10 of its
 * size; measured: at most 6e-5 of the sum of |products| per output).
 * Deterministic all the same. Small batches, and GPUs older than compute
 * capability 8.0 (detected at run time), compute in f32 as without the
 * flag.
 */
#define GC_LINEAR_TF32 2

/**
 * y = x * W^T + b, then ReLU with GC_LINEAR_RELU in flags: x is m x k, W
 * is n x k (PyTorch's layout), b has n floats (NULL: no bias), y is m x n,
 * all row-major. m <= 256 takes the small-batch path (K split across the
 * threads of each block; from 129 rows on only while n is too narrow for
 * the GEMM's tiles to fill the GPU); larger m the tiled GEMM, on the TF32
 * tensor cores with GC_LINEAR_TF32 (see there). On GPUs of compute
 * capability 9.0 and later, 33 to 256 rows with n * k >= 2^24, and more
 * rows where the GEMM's tiles would leave SMs idle, take a kernel that
 * splits k over the blocks of thread-block clusters (deterministic; the
 * result's bits depend on the shape and the GPU). flags: GC_LINEAR_RELU |
 * GC_LINEAR_TF32 (1 is ReLU as before the flags existed; any other bit is
 * refused). Every m * k, n * k and m * n must be below 2^32.
 * Pointers: y, x, w and b are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); float4 loads where k (and for the
 * GEMM path n) is a multiple of 4 and the pointers are 16-byte aligned.
 * In place: not allowed; y must not overlap x, w or b.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, y, x or w NULL, m, n or k 0,
 * a matrix of 2^32 elements or more, a pointer not 4-byte aligned, y
 * overlapping an input, an unknown flag), GC_ERROR_INVALID_HANDLE (stream
 * destroyed or not a stream), GC_ERROR_CAPTURE (the stream's capture
 * refused the launch; the capture is now invalid), GC_ERROR_OUT_OF_MEMORY
 * or GC_ERROR_CUDA (loading the built-in kernels on first use, or the
 * launch, failed), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the
 * context is unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_linear(struct gc_stream *stream,
                            float *y,
                            const float *x,
                            const float *w,
                            const float *b,
                            uint32_t m,
                            uint32_t n,
                            uint32_t k,
                            int flags);

/**
 * Input gradient of linear: dx = dy * W (dy m x n, W n x k, dx m x k,
 * row-major; every product of two of m, n, k below 2^32). m <= 64 takes
 * the small-batch path (except from 32 rows with n * k >= 2^24), larger m
 * (and those) the tiled GEMM; on GPUs with thread-block clusters (compute
 * capability 9.0), 33-256 rows with n * k >= 2^24 whose tiles of dx (64 x
 * 64 up to 64 rows, 128 x 64 above) fill the SMs in clusters of 2 take the
 * cluster split-K kernel instead, so its bits differ between Hopper and
 * older GPUs (each deterministic).
 * Pointers: dx, dy and w are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); float4 loads where the sizes are
 * multiples of 4 and the pointers 16-byte aligned.
 * In place: not allowed; dx must not overlap dy or w.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, dx, dy or w NULL, m, n or k 0,
 * a matrix of 2^32 elements or more, a pointer not 4-byte aligned, dx
 * overlapping an input), GC_ERROR_INVALID_HANDLE (stream destroyed or not
 * a stream), GC_ERROR_CAPTURE (the stream's capture refused the launch;
 * the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA
 * (loading the built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_linear_backward_input(struct gc_stream *stream,
                                           float *dx,
                                           const float *dy,
                                           const float *w,
                                           uint32_t m,
                                           uint32_t n,
                                           uint32_t k);

/**
 * Weight gradient of linear: dw = dy^T * x (dy m x n, x m x k, dw n x k,
 * row-major, dw overwritten; every product of two of m, n, k below 2^32).
 * Pointers: dw, dy and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); float4 loads where the sizes are
 * multiples of 4 and the pointers 16-byte aligned.
 * In place: not allowed; dw must not overlap dy or x.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, dw, dy or x NULL, m, n or k 0,
 * a matrix of 2^32 elements or more, a pointer not 4-byte aligned, dw
 * overlapping an input), GC_ERROR_INVALID_HANDLE (stream destroyed or not
 * a stream), GC_ERROR_CAPTURE (the stream's capture refused the launch;
 * the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA
 * (loading the built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_linear_backward_weight(struct gc_stream *stream,
                                            float *dw,
                                            const float *dy,
                                            const float *x,
                                            uint32_t m,
                                            uint32_t n,
                                            uint32_t k);

/**
 * Weight gradient and SGD fused: w -= lr * dy^T * x (dy m x n, x m x k, w
 * n x k, row-major), without materialising the gradient (bitwise equal to
 * gc_op_linear_backward_weight then gc_op_sgd).
 * Pointers: w, dy and x are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment); float4 loads where the sizes are
 * multiples of 4 and the pointers 16-byte aligned.
 * In place: w is updated in place; it must not overlap dy or x.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, w, dy or x NULL, m, n or k 0,
 * a matrix of 2^32 elements or more, a pointer not 4-byte aligned, w
 * overlapping an input), GC_ERROR_INVALID_HANDLE (stream destroyed or not
 * a stream), GC_ERROR_CAPTURE (the stream's capture refused the launch;
 * the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA
 * (loading the built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_linear_weight_sgd(struct gc_stream *stream,
                                       float *w,
                                       const float *dy,
                                       const float *x,
                                       uint32_t m,
                                       uint32_t n,
                                       uint32_t k,
                                       float lr);

/**
 * Bias gradient: `db[c]` = sum over rows of `dy[r][c]` (dy row-major rows x
 * cols, rows * cols < 2^32), summed in a fixed order (deterministic).
 * Pointers: db and dy are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment).
 * In place: not allowed; db must not overlap dy.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, db or dy NULL, rows or cols 0,
 * rows * cols >= 2^32, a pointer not 4-byte aligned, db overlapping dy),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_bias_grad(struct gc_stream *stream,
                               float *db,
                               const float *dy,
                               uint32_t rows,
                               uint32_t cols);

/**
 * Bias gradient and SGD fused: `b[c] -= lr *` sum over rows of `dy[r][c]`
 * (bitwise equal to gc_op_bias_grad then gc_op_sgd).
 * Pointers: b and dy are device memory of the stream's context
 * (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
 * 4-byte aligned (float alignment).
 * In place: b is updated in place; it must not overlap dy.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, b or dy NULL, rows or cols 0,
 * rows * cols >= 2^32, a pointer not 4-byte aligned, b overlapping dy),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_bias_sgd(struct gc_stream *stream,
                              float *b,
                              const float *dy,
                              uint32_t rows,
                              uint32_t cols,
                              float lr);

/**
 * Writes to *bytes the workspace gc_op_mse needs for n elements on ctx's
 * device (a pure computation: nothing is allocated or launched).
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context),
 * GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_mse_workspace_bytes(struct gc_context *ctx, uint64_t n, uint64_t *bytes);

/**
 * Sum-of-squares loss, as (pred - target).pow(2).sum(): `loss[0]` = sum of
 * `(pred[i] - target[i])^2`, and, when grad is not NULL, `grad[i] = 2 *
 * grad_scale * (pred[i] - target[i])`. workspace holds workspace_bytes >=
 * gc_op_mse_workspace_bytes(n) bytes, zeroed once before first use (the
 * kernel leaves it zeroed); do not share it between concurrent launches.
 * Deterministic: fixed-order reduction.
 * Pointers: loss, grad, pred, target and workspace are device memory of
 * the stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory;
 * not host memory), 4-byte aligned (float alignment); when pred, target
 * and grad are 16-byte aligned the float4 path runs.
 * In place: grad may equal pred or target; loss and workspace must not
 * overlap anything else.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, loss, pred, target or
 * workspace NULL, n == 0 or too large, workspace_bytes too small, a
 * pointer not 4-byte aligned, a refused overlap), GC_ERROR_INVALID_HANDLE
 * (stream destroyed or not a stream), GC_ERROR_CAPTURE (the stream's
 * capture refused the launch; the capture is now invalid),
 * GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the built-in kernels on
 * first use, or the launch, failed), GC_ERROR_DEVICE_FAULT (an earlier
 * kernel faulted; the context is unusable), GC_ERROR_PANIC (internal error
 * caught).
 */
enum gc_status gc_op_mse(struct gc_stream *stream,
                         float *loss,
                         float *grad,
                         const float *pred,
                         const float *target,
                         uint64_t n,
                         float grad_scale,
                         void *workspace,
                         uint64_t workspace_bytes);

/**
 * One layer of gc_op_mlp: y = x * W^T + b, then ReLU when relu != 0.
 */
typedef struct gc_mlp_layer {
    /**
     * W, outputs x inputs floats, row-major (as torch.nn.Linear stores it):
     * device memory of the stream's context.
     */
    const float *w;
    /**
     * b, outputs floats (device memory), or NULL for no bias.
     */
    const float *b;
    /**
     * Input width: the previous layer's outputs (the first: x's columns).
     */
    uint32_t inputs;
    /**
     * Output width.
     */
    uint32_t outputs;
    /**
     * Non-zero: ReLU after this layer.
     */
    int relu;
} gc_mlp_layer;

/**
 * gc_op_mlp flag: one fused launch where that measured at least as fast as
 * one launch per layer on an H100 (one row, 3 or 4 layers, every layer
 * after the first at most 2^17 weights: the notes' 1024-512-256-10 MLP at
 * batch 1), and only where graphcore does not launch its kernels with
 * programmatic dependent launch (below compute capability 9.0, a driver
 * older than CUDA 12.3, or GC_PDL=0): with it, one launch per layer
 * measured faster at every shape; one launch per layer elsewhere.
 */
#define GC_MLP_FUSED 1

/**
 * gc_op_mlp flag: fused wherever the fused kernel takes the layers (up to 8
 * rows, at most 2^25 multiply-adds a layer; one launch per 4 layers),
 * faster or not: for measurements. Takes precedence over GC_MLP_FUSED.
 */
#define GC_MLP_FUSED_ALWAYS 2

/**
 * Most layers one gc_op_mlp call takes.
 */
#define GC_MLP_MAX_LAYERS 64

/**
 * Writes to *bytes the workspace gc_op_mlp needs for rows rows through the
 * n_layers layers at layers (a pure computation: nothing is allocated or
 * launched; only the widths are read): 256 bytes (the fused kernel's
 * counter and epoch), then every layer's output but the last twice: as the
 * fused kernel's tagged activations (8 bytes an element) and as floats,
 * each rounded up to 256 bytes.
 * Errors: GC_ERROR_INVALID_ARGUMENT (layers or bytes NULL, n_layers 0 or
 * more than GC_MLP_MAX_LAYERS), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_mlp_workspace_bytes(uint32_t rows,
                                         const struct gc_mlp_layer *layers,
                                         uint32_t n_layers,
                                         uint64_t *bytes);

/**
 * The forward pass of an MLP: rows rows of x (rows x `layers[0].inputs`)
 * through n_layers layers (each y = x * W^T + b, then ReLU when asked) into
 * y (rows x layers[n_layers - 1].outputs), all f32 row-major. flags 0: one
 * launch per layer (the small-batch or GEMM kernel of gc_op_linear), the
 * faster form on an H100 for most shapes measured (kernels/TUNING.md).
 * GC_MLP_FUSED: fused where that pays (see the flag), one launch per
 * layer elsewhere; GC_MLP_FUSED_ALWAYS: fused wherever the fused kernel
 * takes the layers (up to 8 rows, at most 2^25 multiply-adds a layer).
 * Fused: one launch per 4 layers, a cooperative kernel with no barrier
 * between layers (each tile waits only for the
 * activations it reads, which carry a per-launch tag); a 2- to 4-layer MLP
 * is one kernel node when captured; elsewhere one launch per layer. Fused
 * outputs are bitwise those of per-layer launches with the fused kernel's
 * tiles. Results
 * are deterministic (the same bits on every run and replay) and within
 * float rounding of float64.
 * workspace holds workspace_bytes >= gc_op_mlp_workspace_bytes(rows,
 * layers, n_layers) bytes (a gc_pool_alloc block is the usual choice); its
 * first 4 bytes must be zero before its first use (gc_memset_async once;
 * every launch leaves them zero); do not share it between launches that
 * may run concurrently. The caller keeps layers; graphcore reads it only
 * during the call (a captured launch keeps the pointers in it).
 * Pointers: y, x, workspace and every layer's w and b are device memory of
 * the stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory;
 * not host memory), 4-byte aligned (float alignment); float4 loads where a
 * layer's inputs is a multiple of 4 and its x and W are 16-byte aligned
 * (workspace 16-byte aligned for the intermediates).
 * In place: not allowed; y and workspace must not overlap each other, x
 * or any weight or bias.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, y, x, layers, workspace or a
 * layer's w NULL, an unknown flag, rows, n_layers or a width 0, n_layers more than
 * GC_MLP_MAX_LAYERS (layers is then not read), a layer's inputs not the
 * previous layer's outputs, a matrix of 2^32 elements or more,
 * workspace_bytes too small, a pointer not 4-byte aligned, a refused
 * overlap), GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or the launch, failed; a device without
 * cooperative launch), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted;
 * the context is unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_mlp(struct gc_stream *stream,
                         float *y,
                         const float *x,
                         uint32_t rows,
                         const struct gc_mlp_layer *layers,
                         uint32_t n_layers,
                         void *workspace,
                         uint64_t workspace_bytes,
                         uint32_t flags);

/**
 * Writes to *bytes the workspace gc_op_linear_mse_step needs for rows rows,
 * inputs inputs and outputs outputs on ctx's device (a pure computation:
 * nothing is allocated or launched): the loss's counter and per-block sums,
 * rounded up to 256 bytes, then the output gradient (rows x outputs floats).
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context),
 * GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_linear_mse_step_workspace_bytes(struct gc_context *ctx,
                                                     uint32_t rows,
                                                     uint32_t inputs,
                                                     uint32_t outputs,
                                                     uint64_t *bytes);

/**
 * One training step of a linear layer with the summed squared error and
 * SGD, in two launches (up to 256 rows): pred = x * W^T + b (x rows x
 * inputs, W outputs x inputs as torch.nn.Linear stores it, b outputs
 * floats or NULL for no bias), `loss[0]` = sum (pred - target)^2 (PyTorch's
 * (pred - target).pow(2).sum()), dY = 2 * grad_scale * (pred - target)
 * (grad_scale 1 for the summed loss, 1 / (rows * outputs) for the mean),
 * then W -= lr * dY^T * x and b -= lr * (column sums of dY), in place. The
 * first launch is the forward pass with dY and the loss's per-block sums
 * in its epilogue, the second the weight and bias update and the loss's
 * final sum; more than 256 rows take three (GEMM, loss, update). W and b come out bitwise equal to gc_op_linear,
 * gc_op_mse, gc_op_linear_weight_sgd and gc_op_bias_sgd run one after the
 * other (on the same device); the loss is summed in another fixed order
 * (equal up to rounding). Deterministic: no float atomics, the same bits
 * on every run and replay.
 * workspace holds workspace_bytes >= gc_op_linear_mse_step_workspace_bytes
 * bytes (a gc_pool_alloc block is the usual choice); its first 4 bytes must
 * be zero before its first use (gc_memset_async once; every step leaves
 * them zero); do not share it between steps that may run concurrently. dY
 * is left in the workspace (256-byte aligned, after the loss's sums).
 * Pointers: w, b, x, target, loss and workspace are device memory of the
 * stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory; not
 * host memory), 4-byte aligned (float alignment); float4 loads when inputs
 * is a multiple of 4 and x and w are 16-byte aligned.
 * In place: w and b are updated in place; w, b, loss and workspace must
 * not overlap each other, x or target.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, w, x, target, loss or
 * workspace NULL, rows, inputs or outputs 0, a matrix of 2^32 elements or
 * more, workspace_bytes too small, a pointer not 4-byte aligned, a refused
 * overlap), GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused a launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or a launch, failed),
 * GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
 * unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_linear_mse_step(struct gc_stream *stream,
                                     float *w,
                                     float *b,
                                     const float *x,
                                     const float *target,
                                     float *loss,
                                     uint32_t rows,
                                     uint32_t inputs,
                                     uint32_t outputs,
                                     float grad_scale,
                                     float lr,
                                     void *workspace,
                                     uint64_t workspace_bytes);

/**
 * Writes to *bytes the workspace gc_op_mlp2_mse_step needs for rows rows,
 * hidden hidden units and outputs outputs on ctx's device (a pure
 * computation: nothing is allocated or launched): a 256-byte grid barrier,
 * the loss's per-block sums, then h, dP and dH (each 256-byte aligned).
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context),
 * GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_mlp2_mse_step_workspace_bytes(struct gc_context *ctx,
                                                   uint32_t rows,
                                                   uint32_t hidden,
                                                   uint32_t outputs,
                                                   uint64_t *bytes);

/**
 * One training step of a 2-layer MLP with a ReLU hidden layer, the summed
 * squared error and SGD, in two launches while rows * hidden * (inputs +
 * 2 * outputs) < 2^31 multiply-adds (e.g. 4096-wide layers up to 42 rows):
 * h = relu(x * W1^T + b1), pred =
 * h * W2^T + b2, `loss[0]` = sum (pred - target)^2, dP = 2 * grad_scale *
 * (pred - target), dH = (dP * W2) where h > 0 (else 0), then W2 -= lr *
 * dP^T * h, b2 -= lr * (column sums of dP), W1 -= lr * dH^T * x and
 * b1 -= lr * (column sums of dH), in place (x rows x inputs, W1 hidden x
 * inputs, W2 outputs x hidden as torch.nn.Linear stores them; b1, b2 may be
 * NULL).
 * The first launch is cooperative (the forward pass, the loss's per-block
 * sums, dP and dH, with a grid barrier between the phases), the second
 * the loss's final sum and both layers' updates. Larger steps, where the
 * layers' own kernels are faster, take seven launches: gc_op_linear twice,
 * gc_op_mse, gc_op_linear_backward_input, gc_op_relu_backward and each
 * layer's update. Deterministic: no float atomics, the same bits on every
 * run and replay; results within float rounding of float64.
 * workspace holds workspace_bytes >= gc_op_mlp2_mse_step_workspace_bytes
 * bytes (a gc_pool_alloc block is the usual choice); its first 4 bytes must
 * be zero before its first use (gc_memset_async once; every step leaves
 * them zero); do not share it between steps that may run concurrently.
 * Pointers: w1, b1, w2, b2, x, target, loss and workspace are device
 * memory of the stream's context (gc_pool_alloc blocks, cudaMalloc,
 * managed memory; not host memory), 4-byte aligned (float alignment);
 * float4 loads where widths are multiples of 4 and pointers 16-byte
 * aligned.
 * In place: the weights and biases are updated in place; w1, b1, w2, b2,
 * loss and workspace must not overlap each other, x or target.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, w1, w2, x, target, loss or
 * workspace NULL, rows or a width 0 or 65536 or more, workspace_bytes too
 * small, a pointer not 4-byte aligned, a refused overlap),
 * GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_CAPTURE (the stream's capture refused a launch; the capture is
 * now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
 * built-in kernels on first use, or a launch, failed; a device without
 * cooperative launch), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted;
 * the context is unusable), GC_ERROR_PANIC (internal error caught).
 */
enum gc_status gc_op_mlp2_mse_step(struct gc_stream *stream,
                                   float *w1,
                                   float *b1,
                                   float *w2,
                                   float *b2,
                                   const float *x,
                                   const float *target,
                                   float *loss,
                                   uint32_t rows,
                                   uint32_t inputs,
                                   uint32_t hidden,
                                   uint32_t outputs,
                                   float grad_scale,
                                   float lr,
                                   void *workspace,
                                   uint64_t workspace_bytes);

/*
 * Built-in kernels (gc_kernel_builtin names and their parameters, in order;
 * pass them to gc_launch or gc_graph_add_kernel as void *args[]):
 *
 * gc_fill_f32(float *y, uint64_t n, float value)
 *     y[i] = value for i < n (bitwise equal to chain opcode FILL). Launch:
 *     block 256 (any multiple of 32 up to 1024 is correct), any grid: a
 *     grid-stride loop covers all n. float4 loads/stores when every pointer is
 *     16-byte aligned (decided inside the kernel), a scalar path otherwise.
 *     In-place use (output == an input) is allowed; partly overlapping ranges
 *     are not.
 * gc_copy_f32(float *y, float *x, uint64_t n)
 *     y[i] = x[i] for i < n. Launch: block 256 (any multiple of 32 up to 1024
 *     is correct), any grid: a grid-stride loop covers all n. float4
 *     loads/stores when every pointer is 16-byte aligned (decided inside the
 *     kernel), a scalar path otherwise. In-place use (output == an input) is
 *     allowed; partly overlapping ranges are not.
 * gc_scale_f32(float *y, float *x, uint64_t n, float alpha)
 *     y[i] = alpha * x[i] (one rounding, __fmul_rn; bitwise equal to chain
 *     opcode MUL). Launch: block 256 (any multiple of 32 up to 1024 is
 *     correct), any grid: a grid-stride loop covers all n. float4 loads/stores
 *     when every pointer is 16-byte aligned (decided inside the kernel), a
 *     scalar path otherwise. In-place use (output == an input) is allowed;
 *     partly overlapping ranges are not.
 * gc_add_scalar_f32(float *y, float *x, uint64_t n, float c)
 *     y[i] = x[i] + c (__fadd_rn; bitwise equal to chain opcode ADD). Launch:
 *     block 256 (any multiple of 32 up to 1024 is correct), any grid: a
 *     grid-stride loop covers all n. float4 loads/stores when every pointer is
 *     16-byte aligned (decided inside the kernel), a scalar path otherwise.
 *     In-place use (output == an input) is allowed; partly overlapping ranges
 *     are not.
 * gc_axpy_f32(float *y, float *x, uint64_t n, float alpha)
 *     y[i] = fmaf(alpha, x[i], y[i]). Launch: block 256 (any multiple of 32 up
 *     to 1024 is correct), any grid: a grid-stride loop covers all n. float4
 *     loads/stores when every pointer is 16-byte aligned (decided inside the
 *     kernel), a scalar path otherwise. In-place use (output == an input) is
 *     allowed; partly overlapping ranges are not.
 * gc_add_f32(float *z, float *x, float *y, uint64_t n)
 *     z[i] = x[i] + y[i]. Launch: block 256 (any multiple of 32 up to 1024 is
 *     correct), any grid: a grid-stride loop covers all n. float4 loads/stores
 *     when every pointer is 16-byte aligned (decided inside the kernel), a
 *     scalar path otherwise. In-place use (output == an input) is allowed;
 *     partly overlapping ranges are not.
 * gc_mul_f32(float *z, float *x, float *y, uint64_t n)
 *     z[i] = x[i] * y[i]. Launch: block 256 (any multiple of 32 up to 1024 is
 *     correct), any grid: a grid-stride loop covers all n. float4 loads/stores
 *     when every pointer is 16-byte aligned (decided inside the kernel), a
 *     scalar path otherwise. In-place use (output == an input) is allowed;
 *     partly overlapping ranges are not.
 * gc_relu_f32(float *y, float *x, uint64_t n)
 *     y[i] = x[i] <= 0 ? +0 : x[i] (NaN propagates, as in PyTorch; bitwise
 *     equal to chain opcode RELU). Launch: block 256 (any multiple of 32 up to
 *     1024 is correct), any grid: a grid-stride loop covers all n. float4
 *     loads/stores when every pointer is 16-byte aligned (decided inside the
 *     kernel), a scalar path otherwise. In-place use (output == an input) is
 *     allowed; partly overlapping ranges are not.
 * gc_relu_backward_f32(float *dx, float *dy, float *x, uint64_t n)
 *     dx[i] = x[i] > 0 ? dy[i] : 0 (x is the ReLU's input or output). Launch:
 *     block 256 (any multiple of 32 up to 1024 is correct), any grid: a
 *     grid-stride loop covers all n. float4 loads/stores when every pointer is
 *     16-byte aligned (decided inside the kernel), a scalar path otherwise.
 *     In-place use (output == an input) is allowed; partly overlapping ranges
 *     are not.
 * gc_sgd_f32(float *w, float *g, uint64_t n, float lr)
 *     w[i] = fmaf(-lr, g[i], w[i]) (SGD step, one rounding). Launch: block 256
 *     (any multiple of 32 up to 1024 is correct), any grid: a grid-stride loop
 *     covers all n. float4 loads/stores when every pointer is 16-byte aligned
 *     (decided inside the kernel), a scalar path otherwise. In-place use
 *     (output == an input) is allowed; partly overlapping ranges are not.
 * gc_bias_add_f32(float *y, float *x, float *b, uint32_t rows, uint32_t cols)
 *     y[r, c] = x[r, c] + b[c] for row-major rows x cols x and y (rows * cols
 *     < 2^32). float4 path when cols % 4 == 0 and y, x, b are 16-byte aligned.
 *     Launch: block 256, any grid (grid-stride over the flattened matrix). y
 *     == x is allowed.
 * gc_chain_f32(float *y, float *x, uint64_t n, uint32_t ops, uint32_t count, float c0, float c1, float c2, float c3, float c4, float c5, float c6, float c7)
 *     y[i] = op_{count-1}(...op_0(x[i])...), all in registers, one pass. Op k
 *     is the 4-bit opcode (ops >> 4k) & 15 with constant ck, count <= 8: 1
 *     FILL v=c, 2 MUL v=v*c, 3 ADD v=v+c, 4 RELU, 5 MAX v=max(v,c), 6 MIN
 *     v=min(v,c) (MAX/MIN propagate a NaN in v); other opcodes leave v
 *     unchanged. Each opcode is bitwise equal to its standalone kernel (fill,
 *     scale, add_scalar, relu). When op 0 is FILL, x is not read and may be
 *     null; count == 0 copies. Launch: block 256 (any multiple of 32 up to
 *     1024 is correct), any grid: a grid-stride loop covers all n. float4
 *     loads/stores when every pointer is 16-byte aligned (decided inside the
 *     kernel), a scalar path otherwise. In-place use (output == an input) is
 *     allowed; partly overlapping ranges are not.
 * gc_linear_small_f32(float *y, float *x, float *w, float *b, uint32_t m, uint32_t n, uint32_t k, uint32_t flags, uint32_t config)
 *     Small-batch linear: y[i, j] = act(sum_r x[i, r] * W(r, j) + b[j]) with x
 *     m x k, y m x n (row-major), W(r, j) = w[j * k + r] (w is n x k, PyTorch
 *     layout) or, with flags bit 1, w[r * n + j] (w is k x n: y = x . w, for
 *     the input gradient). flags bit 0: ReLU. b may be null. config = LR | LC
 *     << 2 | LGR << 4 | LGC << 6: thread tile 2^LR x 2^LC (rows x columns; n x
 *     k layout 1x1, 1x2, 4x1, 4x4 or 8x4, k x n layout 1x4, 4x4 or 8x4; other
 *     tiles do nothing) and 2^LGR x 2^LGC tile groups per block (LGR + LGC <=
 *     3); the threads of a group split K. float4 loads when k % 4 == 0 and x,
 *     w are 16-byte aligned (k x n layout: also n % 4 == 0), scalar otherwise;
 *     deterministic fixed-order reduction (warp shuffles, then shared memory).
 *     Launch: block 256, grid (ceil(n / 2^(LC+LGC)), ceil(m / 2^(LR+LGR))), no
 *     dynamic shared memory. y must not overlap x, w or b.
 * gc_gemm_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     Tiled GEMM: C = act(alpha * op(A) . op(B) + beta * C + bias[col]), C m x
 *     n (ldc), op(A) m x k: a[i * lda + r], or a[r * lda + i] with flags bit 0
 *     (A stored k x m); op(B) k x n: b[r * ldb + j], or b[j * ldb + r] with
 *     flags bit 1 (B stored n x k). flags bit 2: ReLU. bias may be null. beta
 *     == 0: C is not read; else the result is fmaf(alpha, acc, beta * C), so
 *     alpha = -lr, beta = 1 is bitwise the SGD step on the alpha = 1, beta = 0
 *     result. Deterministic. Every rows * ld must be < 2^32. Launch: block
 *     256, 1-D grid of ceil(m / T) * ceil(n / T) blocks with T = 128 for tile
 *     0, 64 for tile 1 (each thread sums its outputs in increasing k: results
 *     do not depend on the tile), 32 for tile 2 (K split over 4 slices of the
 *     block); no dynamic shared memory. float4 loads and stores where leading
 *     dimensions are multiples of 4 and pointers 16-byte aligned. C must not
 *     overlap A, B or bias.
 * gc_gemm_wide_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     gc_gemm_f32 (same arguments and result) for the linear layer's layout
 *     only (transpose bits 2: A m x k, B n x k; other layouts do nothing), one
 *     block per SM: tile 0: 128 x 256 (rows x columns of C), tile 1: 128 x 128
 *     (both bitwise gc_gemm_f32's tiles 0 and 1), tile 2: 64 x 64 with K split
 *     over 4 slices (bitwise gc_gemm_f32's tile 2). Launch: block 256, 1-D
 *     grid of ceil(m / TM) * ceil(n / TN) blocks for the tile's TM x TN; no
 *     dynamic shared memory. C must not overlap A, B or bias.
 * gc_gemm_128x256_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     gc_gemm_wide_f32's tile 0 as a kernel of its own (same arguments, bits
 *     and launch; tile must be 0, other values do nothing): 128 x 256 tiles of
 *     C, one block per SM, with the registers that tile alone needs (faster
 *     than inside gc_gemm_wide_f32). Launch: block 256, 1-D grid of ceil(m /
 *     128) * ceil(n / 256) blocks; no dynamic shared memory. C must not
 *     overlap A, B or bias.
 * gc_gemm_mid_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     gc_gemm_f32 (same arguments, bitwise its tiles 0 and 1) for the linear
 *     layer's layout only (transpose bits 2: A m x k, B n x k; other layouts
 *     do nothing), two blocks per SM: tile 0 (the only one): 64 x 128 (rows x
 *     columns of C). Launch: block 256, 1-D grid of ceil(m / 64) * ceil(n /
 *     128) blocks; no dynamic shared memory. C must not overlap A, B or bias.
 * gc_linear_cluster_f32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     What gc_gemm_f32 computes (same arguments; the sums in another order)
 *     for the linear layer's layout (transpose bits 2: A m x k, B n x k) and,
 *     with tiles 0 and 2 only, the plain one (transpose bits 0: A m x k, B k x
 *     n; the input gradient dy . W); other layouts do nothing. K is split over
 *     the S blocks of a thread-block cluster (compute capability 9.0; it traps
 *     on older GPUs): block s of a cluster sums its slice of K chunks, the
 *     partial tiles are added in rank order through distributed shared memory
 *     (deterministic for a given shape and S). tile 0: 128 x 64 (rows x
 *     columns of C), tile 1: 64 x 64, tile 2: 64 x 64 with K chunks of 32
 *     instead of 16 (tile 1's products in the same order), tile 3: tile 2's
 *     products and bits with its chunks copied into shared memory by cp.async
 *     two stages deep where k, lda and ldb are multiples of 4 and a, b are
 *     16-byte aligned (tile 2 elsewhere). Launch: block 256, 1-D grid of S *
 *     ceil(m / TM) * ceil(n / TN) blocks with the cluster dimension (S, 1, 1),
 *     S from 1 to 8; no dynamic shared memory. C must not overlap A, B or
 *     bias.
 * gc_gemm_tf32(float *c, float *a, float *b, float *bias, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t flags, float alpha, float beta, uint32_t tile)
 *     TF32 tensor-core GEMM (compute capability 8.0 or later): C = act(alpha *
 *     A . B^T + beta * C + bias[col]) with A m x k (a[i * lda + r]) and B n x
 *     k (b[j * ldb + r]); flags as gc_gemm_f32's, whose transpose bits must be
 *     2 (B stored n x k; anything else does nothing); bias may be null; beta
 *     == 0: C is not read. A and B are rounded to TF32 (10 mantissa bits, to
 *     nearest) and multiplied with mma.sync m16n8k8, f32 sums in a fixed order
 *     (deterministic; results differ from gc_gemm_f32 by the TF32 rounding).
 *     Launch: block 256, 1-D grid of ceil(m / T) * ceil(n / T) blocks with T =
 *     128 for tile 0, 64 for tile 1; no dynamic shared memory. C must not
 *     overlap A, B or bias.
 * gc_mlp_f32(float *y, float *x, float *bar, float *act, float *w0, float *b0, float *w1, float *b1, float *w2, float *b2, float *w3, float *b3, uint32_t d01, uint32_t d23, uint32_t d4rows, uint32_t flags)
 *     Fused MLP forward, up to 4 layers in one launch: h_0 = x (rows x d0),
 *     h_{l+1} = act_l(h_l . W_l^T + b_l) (rows x d_{l+1}, W_l d_{l+1} x d_l as
 *     PyTorch stores it, b_l may be null), y = h_L. d01 = d0 | d1 << 16, d23 =
 *     d2 | d3 << 16, d4rows = d4 | rows << 16 (all below 2^16); flags bits
 *     0..3: ReLU after layer l; bits 4..6: L; bits 8 + 2 l: layer l's warp
 *     tile (0: 1 x 1, 1: 4 x 1, 2: 4 x 4, 3: 8 x 4). The grid's warps take
 *     each layer's tiles round-robin and compute them as gc_linear_small_f32's
 *     one-warp tile groups (bitwise equal to per-layer launches with those
 *     tiles and 8 groups per block). No barrier between layers: the
 *     intermediates are 64-bit tagged slots (value, launch tag) and a tile
 *     waits until the slots it reads carry this launch's tag. bar: 8 bytes, an
 *     arrival count (zero before the first launch, left zero by every launch)
 *     and the epoch (any value; each launch advances it). act: the L - 1
 *     intermediates, one after the other, each rows * d slots (8 bytes)
 *     rounded up to a multiple of 32. Launch: cooperative, block 256, any 1-D
 *     grid that is resident at once (one block per SM). y must not overlap any
 *     input or act.
 * gc_linear_mse_f32(float *grad, float *pred, float *partials, float *x, float *w, float *b, float *target, uint32_t m, uint32_t n, uint32_t k, uint32_t config, float grad_scale)
 *     Training step, launch 1 (linear layer + summed squared error): the
 *     forward pass of gc_linear_small_f32 (w n x k, no ReLU, same config and
 *     launch shape, bitwise its outputs p) with a loss epilogue: d = p -
 *     target[i, j], grad[i, j] = d * (2 * grad_scale) (bitwise gc_mse_f32's
 *     gradient), pred[i, j] = p when pred is not null, and each block's sum of
 *     d^2 (fixed order) in partials[blockIdx.y * gridDim.x + blockIdx.x],
 *     which gc_linear_sgd_f32 adds into the loss. Outputs must not overlap the
 *     inputs.
 * gc_linear_sgd_f32(float *w, float *b, float *dy, float *x, uint32_t m, uint32_t n, uint32_t k, float lr, uint32_t tile, uint32_t bias_ty, float *loss, float *partials, uint32_t parts)
 *     Training step, launch 2 (SGD of a linear layer): W (n x k) = fmaf(-lr,
 *     dy^T . x, W) and b[j] = fmaf(-lr, sum_i dy[i, j], b[j]) (b may be null)
 *     for dy m x n, x m x k, in one launch; when loss is not null, role 0
 *     writes loss[0] = the sum of partials[0 .. parts) in a fixed order
 *     (gc_linear_mse_f32's block sums). The next ceil(n / 32) roles (none when
 *     b is null) update b, bitwise gc_bias_sgd_f32 with block (32, bias_ty);
 *     the others are the output tiles of gc_gemm_f32 with tile `tile` (the
 *     fused weight-gradient SGD, bitwise; tile 3: tile 1 with the reduction,
 *     up to 64 rows, staged whole in shared memory, where n % 4 == 0, k % 4 ==
 *     0 and w, dy, x are 16-byte aligned, else tile 1; bitwise tile 1). Block
 *     b takes role b, or with bit 2 of `tile` set (4: the weight tiles handed
 *     out first) role G - 1 - b; the results do not depend on it. Launch:
 *     block 256, grid (loss ? 1 : 0) + ceil(n / 32) + ceil(n / T) * ceil(k /
 *     T) with T = 128, 64, 32, 64 for tile 0, 1, 2, 3; no dynamic shared
 *     memory. w, b and loss must not overlap dy, x or partials.
 * gc_mlp2_mse_f32(float *x, float *w1, float *b1, float *w2, float *b2, float *target, float *h, float *dp, float *dh, float *partials, float *bar, uint32_t d01, uint32_t d2m, uint32_t tiles, float grad_scale)
 *     Training step of a 2-layer MLP (ReLU hidden layer, summed squared
 *     error), launch 1: h = relu(x . W1^T + b1), then p = h . W2^T + b2 with
 *     dp = (p - target) * (2 * grad_scale) and each block's sum of (p -
 *     target)^2 in partials[blockIdx.x], then dh = h > 0 ? (dp . W2) : 0; a
 *     grid barrier (bar, 16 bytes, first 4 zero, left zero) between the
 *     phases. W1 k1 x k0, W2 k2 x k1 (PyTorch layout), x m x k0; d01 = k0 | k1
 *     << 16, d2m = k2 | m << 16 (below 2^16); tiles: bits 0-1 and 2-3 the warp
 *     tiles of the forward phases (0: 1 x 1, 1: 4 x 1, 2: 4 x 4, 3: 8 x 4),
 *     bits 4-5 the input gradient's (0: 1 x 4, 1: 4 x 4, 2: 8 x 4). Launch:
 *     cooperative, block 256, a 1-D grid of at most two blocks per SM.
 * gc_mlp2_sgd_f32(float *w1, float *b1, float *w2, float *b2, float *x, float *h, float *dp, float *dh, float *loss, float *partials, uint32_t d01, uint32_t d2m, float lr, uint32_t cfg)
 *     Training step of a 2-layer MLP, launch 2: role 0 writes loss[0] (the sum
 *     of partials[0 .. parts) in a fixed order), then layer 2's update (W2 -=
 *     lr dp^T . h, b2 -= lr colsum dp) and layer 1's (W1 -= lr dh^T . x, b1 -=
 *     lr colsum dh), each as gc_linear_sgd_f32's bias blocks and weight tiles.
 *     d01, d2m as gc_mlp2_mse_f32's; cfg: bits 0-1 layer 1's GEMM tile, bits
 *     2-3 layer 2's, bits 4-9 the column sums' TY, bit 10 roles in reverse (as
 *     gc_linear_sgd_f32's tile bit 2), bits 16-31 parts. b1 and b2 may be
 *     null. Launch: block 256, grid 1 + both layers' blocks (ceil(n / 32) bias
 *     blocks when b is not null, then ceil(n / T) * ceil(k / T) tiles).
 * gc_bias_grad_f32(float *db, float *dy, uint32_t rows, uint32_t cols)
 *     db[c] = sum over r of dy[r, c] (dy row-major rows x cols), summed in a
 *     fixed order (deterministic). Launch: block (32, TY, 1) with TY in 1..32,
 *     grid ceil(cols / 32).
 * gc_bias_sgd_f32(float *b, float *dy, uint32_t rows, uint32_t cols, float lr)
 *     b[c] = fmaf(-lr, sum over r of dy[r, c], b[c]): bitwise equal to
 *     gc_bias_grad_f32 then gc_sgd_f32 with the same block shape. Launch:
 *     block (32, TY, 1) with TY in 1..32, grid ceil(cols / 32).
 * gc_mse_f32(float *loss, float *grad, float *pred, float *target, uint64_t n, float grad_scale, float *workspace)
 *     loss[0] = sum_i (pred[i] - target[i])^2 (PyTorch's (y_pred -
 *     y).pow(2).sum()); when grad is not null, grad[i] = (pred[i] - target[i])
 *     * (2 * grad_scale). Deterministic: per-block partial sums in workspace,
 *     added in a fixed order by the last block to finish. workspace: a u32
 *     counter at byte 0 that must be zero before the first launch (the kernel
 *     leaves it zero, so replays work), partial sums from byte 16: at least 16
 *     + 4 * gridDim.x bytes. Launch: block 256, any grid. grad may equal pred
 *     or target.
 * gc_cond_set_u32(uint64_t handle, float *value)
 *     Sets conditional handle `handle` to *value (a u32 in device memory; for
 *     SWITCH the case index). Needs CUDA 12.3 and libcudadevrt (see
 *     gc_graph_conditional_handle_create). Launch: grid 1, block 1.
 * gc_cond_count(uint64_t handle, float *counter, uint32_t limit)
 *     *counter += 1, then sets `handle` to (*counter < limit): before a WHILE
 *     node (counter zeroed) and at the end of its body, the body runs at most
 *     `limit` times. Launch: grid 1, block 1.
 * gc_cond_set_f32(uint64_t handle, float *x, float threshold, uint32_t cmp, float *counter, uint32_t limit)
 *     Sets `handle` to (*x cmp threshold), cmp 0: <, 1: <=, 2: >, 3: >= (NaN
 *     compares false); when counter is not null, also *counter += 1 and the
 *     value is 0 once *counter >= limit (a WHILE's iteration cap). Launch:
 *     grid 1, block 1.
 * gc_cond_set_bucket(uint64_t handle, float *rows, float *sizes, uint32_t count)
 *     Sets `handle` to the first i < count with sizes[i] >= *rows (sizes
 *     ascending: a runner's bucket sizes), or count when none fits: the SWITCH
 *     case of the bucket for a row count held in device memory. Launch: grid
 *     1, block 1.
 */

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
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream is NULL, mode is not a
 * gc_capture_mode, or the pool is of another context),
 * GC_ERROR_INVALID_HANDLE (a destroyed handle), GC_ERROR_INVALID_STATE (the
 * stream is capturing already, or this thread has a capture open into the
 * pool), GC_ERROR_CAPTURE (CUDA cannot capture the stream, e.g. the legacy
 * default stream), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT. Nothing is begun
 * on failure.
 */
enum gc_status gc_capture_begin(struct gc_stream *stream,
                                struct gc_pool *pool,
                                gc_capture_mode mode);

/**
 * Ends the capture begun on `stream` and writes the captured graph to
 * *graph. If the capture was invalidated, the error names the first
 * graphcore call that broke it (GC_ERROR_CAPTURE); a stream that joined
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or graph is NULL; the capture
 * then stays open), GC_ERROR_INVALID_HANDLE (stream destroyed),
 * GC_ERROR_INVALID_STATE (no graphcore capture is open on the stream),
 * GC_ERROR_CAPTURE (the capture was invalidated, a joined stream did not
 * rejoin, or the end came from another thread), GC_ERROR_OUT_OF_MEMORY,
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * break the capture.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream, ptr or index is NULL, bytes
 * is 0, an unknown flag, ptr is not device memory of the stream's device
 * or holds fewer than bytes bytes, or the range overlaps an argument
 * declared before in the capture), GC_ERROR_INVALID_HANDLE (stream
 * destroyed), GC_ERROR_INVALID_STATE (no graphcore capture is open on the
 * stream).
 */
enum gc_status gc_capture_arg(struct gc_stream *stream,
                              const void *ptr,
                              size_t bytes,
                              uint32_t flags,
                              size_t *index);

/**
 * Writes 1 to *capturing while the stream captures (through graphcore or
 * not, including a stream that joined a capture), else 0.
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or capturing is NULL),
 * GC_ERROR_INVALID_HANDLE (stream destroyed), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph, ptr or index is NULL, bytes
 * is 0, an unknown flag, ptr is not device memory of the graph's device or
 * holds fewer than bytes bytes, or the range overlaps an argument declared
 * before), GC_ERROR_INVALID_HANDLE (graph destroyed).
 */
enum gc_status gc_graph_declare_arg(struct gc_graph *graph,
                                    const void *ptr,
                                    size_t bytes,
                                    uint32_t flags,
                                    size_t *index);

/**
 * Creates an empty graph on ctx's device; destroy it with
 * gc_graph_destroy.
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or graph is NULL),
 * GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_OUT_OF_MEMORY,
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or function is NULL, a zero or
 * over-limit dimension, a function of another context, deps is NULL with
 * ndeps > 0, or a dependency of another graph or out of range),
 * GC_ERROR_INVALID_HANDLE (a destroyed handle), GC_ERROR_CUDA (the driver
 * refused the node), GC_ERROR_DEVICE_FAULT. The graph is unchanged on
 * failure.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph, dst or src is NULL, bytes is 0,
 * pageable or unknown host memory, a range overrunning its pool block,
 * pool memory of another device without peer access, naming both, or
 * a bad dependency as for gc_graph_add_kernel), GC_ERROR_INVALID_HANDLE (graph destroyed),
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or dst is NULL, bytes is 0, dst
 * is not device memory, the range overruns its pool block or is pool
 * memory of another device without peer access, or a bad dependency as
 * for gc_graph_add_kernel),
 * GC_ERROR_INVALID_HANDLE (graph destroyed), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or dst is NULL, count is 0,
 * elem_size is not 1, 2 or 4, dst is not aligned to it, value does not fit
 * in an element, dst is not device memory, the range overruns its pool
 * block or the address space, or a bad dependency as for
 * gc_graph_add_kernel), GC_ERROR_INVALID_HANDLE (graph destroyed),
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or func is NULL, or a bad
 * dependency as for gc_graph_add_kernel), GC_ERROR_INVALID_HANDLE (graph
 * destroyed), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or child is NULL, child is the
 * graph itself, empty, or of another context, or a bad dependency as for
 * gc_graph_add_kernel), GC_ERROR_INVALID_HANDLE (a destroyed handle),
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
 */
enum gc_status gc_graph_add_child(struct gc_graph *graph,
                                  struct gc_graph *child,
                                  const struct gc_node *deps,
                                  size_t ndeps,
                                  struct gc_node *node);

/**
 * Adds a node that does nothing: a join point for dependencies.
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph is NULL, or a bad dependency as
 * for gc_graph_add_kernel), GC_ERROR_INVALID_HANDLE (graph destroyed),
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
 */
enum gc_status gc_graph_add_empty(struct gc_graph *graph,
                                  const struct gc_node *deps,
                                  size_t ndeps,
                                  struct gc_node *node);

/**
 * Makes `to` run after `from`. A node of another graph, a self-loop, an
 * edge already there, or an edge that would close a cycle is
 * GC_ERROR_INVALID_ARGUMENT with a message, and the graph is unchanged.
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph is NULL, or the edge is refused
 * as above, or a node is out of range), GC_ERROR_INVALID_HANDLE (graph
 * destroyed), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph is NULL; a node of another
 * graph or out of range; a self-loop, an edge already there or one
 * closing a cycle; `from` or `to` not a kernel node),
 * GC_ERROR_INVALID_STATE (the graph is a
 * conditional body of an instantiated graph), GC_ERROR_INVALID_HANDLE
 * (graph destroyed), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the
 * driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or clone is NULL),
 * GC_ERROR_INVALID_HANDLE (graph destroyed), GC_ERROR_OUT_OF_MEMORY,
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx, raw or graph is NULL, or unknown
 * flags), GC_ERROR_INVALID_HANDLE (ctx destroyed), GC_ERROR_OUT_OF_MEMORY,
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (counting the nodes failed).
 */
enum gc_status gc_graph_wrap(struct gc_context *ctx,
                             void *raw,
                             gc_graph_wrap_flags flags,
                             struct gc_graph **graph);

/**
 * Writes the number of nodes to *count. A captured graph's count is read
 * from CUDA by the first call that needs it (this one, or gc_exec_stats),
 * not when the capture ends.
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or count is NULL),
 * GC_ERROR_INVALID_HANDLE (graph destroyed), GC_ERROR_CUDA (reading a
 * captured graph's count failed).
 */
enum gc_status gc_graph_node_count(struct gc_graph *graph, size_t *count);

/**
 * Writes the underlying CUgraph (a cudaGraph_t) to *raw, for CUDA calls
 * graphcore does not wrap. graphcore still owns it: do not destroy it, and
 * add nodes only through graphcore (its description would go stale).
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or raw is NULL),
 * GC_ERROR_INVALID_HANDLE (graph destroyed).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or path is NULL, path is not
 * UTF-8, or the file cannot be written: the message gives the OS error),
 * GC_ERROR_INVALID_HANDLE (graph destroyed), GC_ERROR_CUDA (reading a
 * captured graph's nodes back failed).
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
 * Thread safety: as for gc_graph. Build a graph and its bodies from one
 * thread; a body may not change once the graph holding it was instantiated.
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
 * Makes a conditional handle for `graph`'s conditional nodes: its value
 * is default_value when the graph first runs and, with flags =
 * GC_COND_RESET_ON_LAUNCH, at every launch (flags 0: a value set by one
 * launch is seen by the next). The graph owns the handle.
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or handle is NULL, unknown
 * flags), GC_ERROR_INVALID_HANDLE (graph destroyed), GC_ERROR_INVALID_STATE
 * (graph is a body whose holder was instantiated or destroyed),
 * GC_ERROR_NOT_SUPPORTED (the driver is older than CUDA 12.3),
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * this graph; one handle steers one node) after the ndeps nodes in deps, and writes its bodies to
 * bodies[0..nbodies): 1 for IF and WHILE, 2 for IF/ELSE (body 1 is the
 * else branch), `cases` for SWITCH. `cases` is the SWITCH's number of cases
 * (> 0); for the other types pass 0 or their body count. bodies must have
 * room for that many handles (nbodies at least that). Each body is a new
 * gc_graph handle that the caller destroys with gc_graph_destroy (the body
 * itself belongs to the node: it goes when the graph does; a body handle
 * kept after that is GC_ERROR_INVALID_STATE). Fill the bodies before
 * instantiating the graph. The new node goes to *node (may be NULL).
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or bodies is NULL, an unknown
 * type, SWITCH with 0 cases, cases not matching the type, nbodies too
 * small, a handle of another graph or one that already steers a node, or
 * a bad dependency as for
 * gc_graph_add_kernel), GC_ERROR_INVALID_HANDLE (graph destroyed),
 * GC_ERROR_INVALID_STATE (graph is a body whose holder was instantiated or
 * destroyed), GC_ERROR_NOT_SUPPORTED (the driver is older than CUDA 12.3
 * for IF and WHILE, 12.8 for IF/ELSE and SWITCH), GC_ERROR_OUT_OF_MEMORY,
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver). The graph is
 * unchanged on failure.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or body NULL, body is not a
 * conditional body or not empty, mode is not a gc_capture_mode, the pool
 * or body of another context), GC_ERROR_INVALID_HANDLE (a destroyed
 * handle), GC_ERROR_INVALID_STATE (the stream is capturing already, a
 * capture into the body is open, or its holder was instantiated or
 * destroyed), GC_ERROR_NOT_SUPPORTED (the driver is older than CUDA 12.3),
 * GC_ERROR_CAPTURE (CUDA cannot capture the stream), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT. Nothing is begun on failure.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or value NULL, value not
 * 4-byte aligned), GC_ERROR_INVALID_HANDLE (stream destroyed or not a
 * stream), GC_ERROR_NOT_SUPPORTED (a driver older than CUDA 12.3, or no
 * libcudadevrt.a to link the setters with), GC_ERROR_CAPTURE (the stream's
 * capture refused the launch), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA
 * (linking or loading the setters, or the launch, failed),
 * GC_ERROR_DEVICE_FAULT, GC_ERROR_PANIC (internal error caught).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or counter NULL, counter not
 * 4-byte aligned, limit 0), GC_ERROR_INVALID_HANDLE (stream destroyed or
 * not a stream), GC_ERROR_NOT_SUPPORTED (a driver older than CUDA 12.3, or
 * no libcudadevrt.a), GC_ERROR_CAPTURE (the stream's capture refused the
 * launch), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (linking or loading the
 * setters, or the launch, failed), GC_ERROR_DEVICE_FAULT, GC_ERROR_PANIC
 * (internal error caught).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (stream or x NULL, a pointer not
 * 4-byte aligned, an unknown cmp, counter given with limit 0, x and counter
 * overlapping), GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
 * GC_ERROR_NOT_SUPPORTED (a driver older than CUDA 12.3, or no
 * libcudadevrt.a), GC_ERROR_CAPTURE (the stream's capture refused the
 * launch), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (linking or loading the
 * setters, or the launch, failed), GC_ERROR_DEVICE_FAULT, GC_ERROR_PANIC
 * (internal error caught).
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
 * Thread safety: gc_exec_launch may be called from several threads at
 * once, on the same or different execs, without locks or allocation
 * (launches of one exec run one after another, as CUDA orders them).
 * gc_exec_launch_with may be called from several threads at once on one
 * exec (its bindings are serialized inside), but it must not race with a
 * gc_exec_launch of the same exec from another thread (the caller
 * serializes them: CUDA's exec setters and launches of one exec are not).
 * gc_exec_update and gc_exec_set_kernel_args must not race with a launch
 * of the same exec, nor with each other; the caller serializes them.
 * gc_exec_destroy must not race with other calls on the handle.
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
 * share memory; graphcore does not detect it).
 * Errors: GC_ERROR_INVALID_ARGUMENT (graph or exec is NULL, an empty graph,
 * or an unknown flag), GC_ERROR_INVALID_HANDLE (graph destroyed),
 * GC_ERROR_OUT_OF_MEMORY, GC_ERROR_CUDA (the driver refused to instantiate
 * or upload), GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_graph_instantiate(struct gc_graph *graph, uint32_t flags, struct gc_exec **exec);

/**
 * Uploads the exec's work to the device on `stream` ahead of its first
 * launch (stream of the exec's context).
 * Errors: GC_ERROR_INVALID_ARGUMENT (a NULL handle, or a stream of another
 * context), GC_ERROR_INVALID_HANDLE (a destroyed handle), GC_ERROR_CAPTURE
 * (the stream captures and CUDA refused), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_exec_upload(struct gc_exec *exec, struct gc_stream *stream);

/**
 * Launches the exec on `stream` (any stream of its context). No heap
 * allocation and no lock another thread's launch could wait on, and no
 * change of the thread's current context unless stream is the legacy
 * default stream. Graphs sharing a pool must not run concurrently: order
 * their launches (graphcore does not detect overlap).
 * Errors: GC_ERROR_INVALID_ARGUMENT (a NULL handle, or a stream of another
 * context), GC_ERROR_INVALID_HANDLE (a destroyed handle), GC_ERROR_CAPTURE
 * (CUDA refused the launch under capture), GC_ERROR_CUDA,
 * GC_ERROR_DEVICE_FAULT (earlier work on the device faulted).
 */
enum gc_status gc_exec_launch(struct gc_exec *exec, struct gc_stream *stream);

/**
 * One binding for gc_exec_launch_with and gc_runner_replay_with:
 * argument `index` (as gc_graph_declare_arg or gc_capture_arg numbered
 * it) now lives at `ptr`, a device range of `bytes` bytes. `bytes` 0
 * means "as large as the memory at ptr": graphcore then checks that the
 * declared size fits in ptr's allocation (or pool block).
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
 * Memory a binding names must stay valid while launches using it may
 * run. Any bad binding is GC_ERROR_INVALID_ARGUMENT naming it, and the
 * exec is unchanged and not launched. No heap allocation.
 * Errors: GC_ERROR_INVALID_ARGUMENT (a NULL handle, bindings NULL while n
 * is not 0, a stream of another context, an exec whose graph declared no
 * arguments, an unknown argument index, an argument bound twice, a NULL,
 * host or other device's address, or a range smaller than declared),
 * GC_ERROR_INVALID_HANDLE (a destroyed handle), GC_ERROR_CAPTURE,
 * GC_ERROR_CUDA (the driver refused a new value: the old bindings are
 * back), GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_exec_launch_with(struct gc_exec *exec,
                                   struct gc_stream *stream,
                                   const struct gc_binding *bindings,
                                   size_t n);

/**
 * Writes to *uses how many uses of argument `index` the exec found in its
 * nodes (kernel parameters, memcpy and memset endpoints, child graphs'
 * included): a caller checks that a captured library was covered (0 means
 * binding the argument changes nothing).
 * Errors: GC_ERROR_INVALID_ARGUMENT (exec or uses is NULL, or index is
 * not a declared argument), GC_ERROR_INVALID_HANDLE (exec destroyed).
 */
enum gc_status gc_exec_arg_info(struct gc_exec *exec, size_t index, size_t *uses);

/**
 * Updates the exec in place with the parameters of `graph`, a graph of
 * the same topology (same node kinds in the same order, same edges). A
 * different topology is GC_ERROR_UPDATE_MISMATCH naming the first
 * differing node; the exec is unchanged and stays usable. A kernel node's
 * function is one of its parameters: it may change to another function of
 * the context, within CUDA's limits for cuGraphExecUpdate (not to one using
 * dynamic parallelism or device-side graph launches where the old one did
 * not: the driver's refusal is GC_ERROR_UPDATE_MISMATCH or GC_ERROR_CUDA).
 * Errors: GC_ERROR_INVALID_ARGUMENT (a NULL handle, or a graph of another
 * context), GC_ERROR_INVALID_HANDLE (a destroyed handle),
 * GC_ERROR_UPDATE_MISMATCH (another topology, or for a fused exec other
 * chains), GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT (from the driver).
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (exec is NULL, or node is of another
 * graph, out of range, or not a kernel node), GC_ERROR_INVALID_HANDLE (exec destroyed),
 * GC_ERROR_UPDATE_MISMATCH (the change would alter a fused chain),
 * GC_ERROR_CUDA (the driver refused the parameters), GC_ERROR_DEVICE_FAULT.
 * The exec is unchanged on failure.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (exec or stats is NULL, or a wrong
 * struct_size), GC_ERROR_INVALID_HANDLE (exec destroyed), GC_ERROR_CUDA
 * (reading the node count of the captured graph the exec was instantiated
 * or last updated from, which no call had read yet).
 */
enum gc_status gc_exec_stats(struct gc_exec *exec, struct gc_exec_statistics *stats);

/**
 * Writes the graph that was instantiated (after fusion, if any) to `path`
 * in Graphviz DOT. The file is created or replaced.
 * Errors: GC_ERROR_INVALID_ARGUMENT (exec or path is NULL, path is not
 * UTF-8, or the file cannot be written: the message gives the OS error),
 * GC_ERROR_INVALID_HANDLE (exec destroyed), GC_ERROR_CUDA (reading a
 * captured graph's nodes back failed).
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
 * returns to the pool) and its stream. The runner holds its pool: a pool
 * passed in stays the caller's handle and may be destroyed before the
 * runner.
 *
 * Thread safety: gc_runner_replay, gc_runner_replay_with and
 * gc_runner_stats may run from several threads at once on one runner
 * (a plain replay must not race with a replay with bindings of the same
 * bucket: as for gc_exec_launch_with). gc_runner_capture excludes them: they
 * wait until it returns. The buckets share the runner's pool, so the GPU
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
} gc_runner_statistics;

/**
 * Creates a runner whose graphs share `pool` (NULL: a new pool of its own,
 * no initial bytes, no cap), with a stream of its own for warm-ups and
 * captures.
 * Errors: GC_ERROR_INVALID_ARGUMENT (ctx or runner is NULL, or a pool of
 * another context), GC_ERROR_INVALID_HANDLE (a destroyed handle),
 * GC_ERROR_NOT_SUPPORTED (a new pool needs virtual memory management),
 * GC_ERROR_OUT_OF_MEMORY, GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT.
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
 * Errors: GC_ERROR_INVALID_ARGUMENT (runner, buckets or record is NULL, n
 * is 0, a size is 0 or given twice or already a bucket, or more than
 * GC_RUNNER_MAX_BUCKETS buckets in all), GC_ERROR_INVALID_HANDLE (runner
 * destroyed), GC_ERROR_CAPTURE (a capture broke), GC_ERROR_OUT_OF_MEMORY,
 * GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT, or any status `record` returned
 * (its message kept in gc_last_error()).
 */
enum gc_status gc_runner_capture(struct gc_runner *runner,
                                 const uint32_t *buckets,
                                 size_t n,
                                 gc_record_fn record,
                                 void *user_data,
                                 uint32_t warmup_runs);

/**
 * Replays the smallest bucket of at least `rows` rows on `stream` and
 * writes its size to *bucket (the caller pads its input to it). More rows
 * than the largest bucket is GC_ERROR_NO_BUCKET: run that batch eagerly.
 * Errors: GC_ERROR_INVALID_ARGUMENT (a NULL pointer or handle, rows is 0,
 * or a stream of another context), GC_ERROR_INVALID_HANDLE (a destroyed
 * handle), GC_ERROR_NO_BUCKET (rows over the largest bucket, or no bucket
 * captured yet), GC_ERROR_CAPTURE, GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT
 * (from the launch, as gc_exec_launch).
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
 * in every bucket. Bindings persist per bucket.
 * Errors: GC_ERROR_INVALID_ARGUMENT (a NULL pointer or handle, bindings
 * NULL while n is not 0, rows is 0, a stream of another context, or a bad
 * binding as for gc_exec_launch_with, naming the bucket; nothing is
 * launched), GC_ERROR_INVALID_HANDLE (a destroyed handle),
 * GC_ERROR_NO_BUCKET (rows over the largest bucket, or no bucket captured
 * yet), GC_ERROR_CAPTURE, GC_ERROR_CUDA, GC_ERROR_DEVICE_FAULT.
 */
enum gc_status gc_runner_replay_with(struct gc_runner *runner,
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

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* GRAPHCORE_H */
