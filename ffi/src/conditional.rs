//! Device-side control flow: conditional nodes (CUDA 12.3: IF and WHILE;
//! CUDA 12.8: IF/ELSE and SWITCH). A graph's conditional handle holds a
//! value that a kernel sets on the device (graphcore's setters,
//! gc_op_cond_*, or your own kernel calling cudaGraphSetConditional with
//! gc_cond_handle_raw); a conditional node added after that kernel runs its
//! bodies as the value says, with no round trip to the host. The bodies are
//! graphs (gc_graph handles) that you fill with the gc_graph_add_* calls or
//! by capturing into them (gc_capture_begin_into); they may hold
//! conditional nodes of their own.
//!
//! A WHILE node whose condition never becomes 0 runs forever and hangs the
//! GPU: set it at the end of the body with a setter that has an iteration
//! cap (gc_op_cond_count, or gc_op_cond_set_f32 with a counter).
//!
//! On a driver older than the version a call needs, it returns
//! GC_ERROR_NOT_SUPPORTED and the message names the version (12.3 or 12.8).
//! graphcore's setter kernels call the CUDA device runtime: they are linked
//! with libcudadevrt.a from the CUDA toolkit on first use (found through
//! GC_CUDADEVRT, CUDA_HOME, or /usr/local/cuda/lib64); without it they are
//! GC_ERROR_NOT_SUPPORTED, and your own kernels (built with nvcc -rdc=true
//! -lcudadevrt) still work.
//!
//! Updates: gc_exec_update refuses (GC_ERROR_INVALID_ARGUMENT) graphs with
//! conditional nodes, and gc_exec_set_kernel_args refuses nodes inside
//! bodies: instantiate again instead, or keep changing values in device
//! memory that the body's kernels read.
//!
//! Body rules: a body cannot change (nodes, edges, handles, a capture into
//! it) once the graph holding it was instantiated; while a capture into a
//! body is open, neither the body nor a graph holding it can be used; once
//! the graph holding a body is destroyed, the body cannot be used. Each is
//! GC_ERROR_INVALID_STATE (the error lists say "body rules").
//!
//! Thread safety: as for gc_graph. Build a graph and its bodies from one
//! thread; a body may not change once the graph holding it was instantiated.
//! While a capture into a body is open (gc_capture_begin_into until its
//! gc_capture_end), every call on that body or on a graph holding it
//! returns GC_ERROR_INVALID_STATE, and the capture keeps the holders alive
//! (their handles may be destroyed meanwhile). Once the graph holding a
//! body is destroyed, and no capture into the body is open, every call on
//! the body returns GC_ERROR_INVALID_STATE (CUDA destroyed the body with
//! its holder); only gc_graph_destroy of its handle remains to do.

use crate::args::Out;
use crate::capture::{capture_mode, gc_capture_mode};
use crate::graph::{deps, emit, gc_graph, gc_node, graph, GRAPHS};
use crate::ops::{op, p};
use crate::pool::{gc_pool, pool};
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream};
use graphcore_core::kernels::ops;
use graphcore_core::{CondType, ConditionalHandle, Error};

/// A conditional handle: the graph it was made for and CUDA's handle
/// value. Plain data: copy it freely; it stays valid as long as the graph.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct gc_cond_handle {
    /// The id of the graph it belongs to (as gc_node.graph).
    pub graph: u64,
    /// CUDA's CUgraphConditionalHandle (cudaGraphConditionalHandle).
    pub raw: u64,
}

impl From<ConditionalHandle> for gc_cond_handle {
    fn from(h: ConditionalHandle) -> Self {
        gc_cond_handle {
            graph: h.graph,
            raw: h.raw,
        }
    }
}

impl From<gc_cond_handle> for ConditionalHandle {
    fn from(h: gc_cond_handle) -> Self {
        ConditionalHandle {
            graph: h.graph,
            raw: h.raw,
        }
    }
}

/// gc_graph_conditional_handle_create flag: the handle gets its default
/// value again at every launch of the graph (else only at the first).
pub const GC_COND_RESET_ON_LAUNCH: u32 = 1;

/// The kind of a conditional node.
pub type gc_cond_type = u32;
/// Runs body 0 when the value is not 0 (CUDA 12.3).
pub const GC_COND_IF: gc_cond_type = 0;
/// Runs body 0 when the value is not 0, body 1 when it is 0 (CUDA 12.8).
pub const GC_COND_IF_ELSE: gc_cond_type = 1;
/// Runs body 0 again and again while the value is not 0; set it inside
/// the body (CUDA 12.3).
pub const GC_COND_WHILE: gc_cond_type = 2;
/// Runs body n when the value is n; none when it is >= the number of
/// cases (CUDA 12.8).
pub const GC_COND_SWITCH: gc_cond_type = 3;

/// Makes a conditional handle for `graph`'s conditional nodes. With flags =
/// GC_COND_RESET_ON_LAUNCH its value is default_value at the start of
/// every launch. With flags 0 CUDA applies no default: default_value must
/// be 0, the value before a kernel first sets it is not specified by CUDA
/// (0 on the drivers tested), and a value set by one launch is seen by the
/// next. The graph owns the handle.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags, a nonzero
/// default_value with flags 0), GC_ERROR_INVALID_STATE (graph is a body whose
/// holder was instantiated or destroyed), GC_ERROR_NOT_SUPPORTED (the driver is
/// older than CUDA 12.3).
#[no_mangle]
pub extern "C" fn gc_graph_conditional_handle_create(
    graph: *mut gc_graph,
    default_value: u32,
    flags: u32,
    handle: *mut gc_cond_handle,
) -> gc_status {
    boundary("gc_graph_conditional_handle_create", || {
        let out = Out::new(handle, "handle")?;
        if flags & !GC_COND_RESET_ON_LAUNCH != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown flags 0x{:x} (GC_COND_RESET_ON_LAUNCH is the only flag)",
                flags & !GC_COND_RESET_ON_LAUNCH
            )));
        }
        let g = self::graph(graph, "graph")?;
        let h = g.conditional_handle(default_value, flags & GC_COND_RESET_ON_LAUNCH != 0)?;
        out.set(h.into());
        Ok(())
    })
}

/// Writes the CUDA handle value (a cudaGraphConditionalHandle) to *raw, for
/// your own kernel to pass to cudaGraphSetConditional.
/// Errors: GC_ERROR_INVALID_ARGUMENT (raw is NULL, or handle is zeroed: not
/// a handle gc_graph_conditional_handle_create made).
#[no_mangle]
pub extern "C" fn gc_cond_handle_raw(handle: gc_cond_handle, raw: *mut u64) -> gc_status {
    boundary("gc_cond_handle_raw", || {
        let out = Out::new(raw, "raw")?;
        if handle.graph == 0 {
            return Err(Error::invalid_argument(
                "`handle` is zeroed: not a handle gc_graph_conditional_handle_create made",
            ));
        }
        out.set(handle.raw);
        Ok(())
    })
}

/// Adds a conditional node of type `type` steered by `handle` (made for
/// this graph; one handle steers one node) after the ndeps nodes in deps,
/// and writes its B bodies to bodies[0..B): B is 1 for IF and WHILE, 2 for
/// IF/ELSE (body 1 is the else branch), `cases` for SWITCH. `cases` is the
/// SWITCH's number of cases (> 0); for the other types pass 0 or B.
/// nbodies is the number of handles bodies has room for: at least B
/// (entries from B on are left as they were). Each body is a new
/// gc_graph handle that the caller destroys with gc_graph_destroy (the body
/// itself belongs to the node: it goes when the graph does; a body handle
/// kept after that is GC_ERROR_INVALID_STATE). Fill the bodies before
/// instantiating the graph. The new node goes to *node (may be NULL).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (an unknown type, SWITCH with
/// 0 cases, cases not matching the type, nbodies too small, a handle of another
/// graph or one that already steers a node, or a bad dependency as for
/// gc_graph_add_kernel), GC_ERROR_INVALID_STATE (graph is a body whose holder
/// was instantiated or destroyed), GC_ERROR_NOT_SUPPORTED (the driver is older
/// than CUDA 12.3 for IF and WHILE, 12.8 for IF/ELSE and SWITCH),
/// GC_ERROR_OUT_OF_MEMORY. The graph is unchanged on failure.
#[no_mangle]
pub extern "C" fn gc_graph_add_conditional(
    graph: *mut gc_graph,
    r#type: gc_cond_type,
    handle: gc_cond_handle,
    cases: u32,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
    bodies: *mut *mut gc_graph,
    nbodies: usize,
) -> gc_status {
    boundary("gc_graph_add_conditional", || {
        let kind = match r#type {
            GC_COND_IF => CondType::If,
            GC_COND_IF_ELSE => CondType::IfElse,
            GC_COND_WHILE => CondType::While,
            GC_COND_SWITCH => CondType::Switch,
            t => {
                return Err(Error::invalid_argument(format!(
                    "`type` {t} is not a gc_cond_type"
                )))
            }
        };
        if bodies.is_null() {
            return Err(Error::invalid_argument("`bodies` is NULL"));
        }
        let need = match kind {
            CondType::If | CondType::While => 1,
            CondType::IfElse => 2,
            CondType::Switch => cases as usize,
        };
        if nbodies < need {
            return Err(Error::invalid_argument(format!(
                "`bodies` has room for {nbodies} graphs; the node has {need} bodies"
            )));
        }
        let g = self::graph(graph, "graph")?;
        let d = self::deps(deps, ndeps)?;
        let (n, made) = g.add_conditional(kind, handle.into(), cases, d)?;
        let mut handles = Vec::with_capacity(made.len());
        for b in made {
            handles.push(GRAPHS.insert(b)? as *mut gc_graph);
        }
        // SAFETY: `bodies` has room for `nbodies` >= handles.len() handles.
        unsafe { std::ptr::copy_nonoverlapping(handles.as_ptr(), bodies, handles.len()) };
        emit(node, n);
        Ok(())
    })
}

/// Begins capturing `stream` into `body`, an empty conditional body: the
/// work enqueued on the stream until gc_capture_end(stream, &g) becomes the
/// body's nodes (g is then a new handle to the body, which the caller
/// destroys). With a pool, the capture's allocations belong to the
/// outermost graph holding the body (gc_graph_pool_bytes counts them), as
/// for gc_capture_begin. End the capture on the same stream.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (body is not a conditional
/// body or not empty, mode is not a gc_capture_mode), GC_ERROR_INVALID_STATE
/// (the stream is capturing already, a capture into the body is open, or its
/// holder was instantiated or destroyed), GC_ERROR_NOT_SUPPORTED (the driver is
/// older than CUDA 12.3), GC_ERROR_CAPTURE (CUDA cannot capture the stream).
/// Nothing is begun on failure.
#[no_mangle]
pub extern "C" fn gc_capture_begin_into(
    stream: *mut gc_stream,
    body: *mut gc_graph,
    pool: *mut gc_pool,
    mode: gc_capture_mode,
) -> gc_status {
    boundary("gc_capture_begin_into", || {
        if body.is_null() {
            return Err(Error::invalid_argument("`body` is NULL"));
        }
        let s = self::stream(stream, "stream")?;
        let b = self::graph(body, "body")?;
        let p = if pool.is_null() {
            None
        } else {
            Some(self::pool(pool)?)
        };
        graphcore_core::begin_capture_into(&s, &b, p.as_ref(), capture_mode(mode)?)
    })
}

/// gc_op_cond_set_f32 comparison: *x < threshold.
pub const GC_CMP_LT: u32 = 0;
/// gc_op_cond_set_f32 comparison: *x <= threshold.
pub const GC_CMP_LE: u32 = 1;
/// gc_op_cond_set_f32 comparison: *x > threshold.
pub const GC_CMP_GT: u32 = 2;
/// gc_op_cond_set_f32 comparison: *x >= threshold.
pub const GC_CMP_GE: u32 = 3;

const _: () = assert!(
    GC_CMP_LT == ops::CMP_LT
        && GC_CMP_LE == ops::CMP_LE
        && GC_CMP_GT == ops::CMP_GT
        && GC_CMP_GE == ops::CMP_GE
);

/// Sets conditional handle `handle` to the uint32 at `value` (device
/// memory, 4-byte aligned; for a SWITCH, the case to run). One thread; put
/// it before the conditional node it steers (capture it, or add it with
/// gc_graph_add_kernel via gc_kernel_builtin). Needs CUDA 12.3 and
/// libcudadevrt.a (Conditional section).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (value not 4-byte aligned),
/// GC_ERROR_NOT_SUPPORTED (a driver older than CUDA 12.3, or no libcudadevrt.a
/// to link the setters with), GC_ERROR_CAPTURE (the stream's capture refused
/// the launch), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (linking or loading the
/// setters, or the launch, failed).
#[no_mangle]
pub extern "C" fn gc_op_cond_set_u32(
    stream: *mut gc_stream,
    handle: gc_cond_handle,
    value: *const u32,
) -> gc_status {
    op!(stream, |_| ops::cond_set_u32(handle.raw, p(value)))
}

/// Adds 1 to the uint32 at `counter` and sets `handle` to (*counter <
/// limit). A WHILE's iteration cap: zero the counter before the node
/// (gc_graph_add_memset or a captured memset), launch this at the end of
/// the body, and the body runs at most `limit` times. (A WHILE whose value
/// never becomes 0 hangs the GPU.) Needs CUDA 12.3 and libcudadevrt.a.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (counter not 4-byte aligned,
/// limit 0), GC_ERROR_NOT_SUPPORTED and GC_ERROR_CAPTURE as gc_op_cond_set_u32,
/// GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (linking or loading the setters, or
/// the launch, failed).
#[no_mangle]
pub extern "C" fn gc_op_cond_count(
    stream: *mut gc_stream,
    handle: gc_cond_handle,
    counter: *mut u32,
    limit: u32,
) -> gc_status {
    op!(stream, |_| ops::cond_count(handle.raw, p(counter), limit))
}

/// Sets `handle` to (*x cmp threshold), cmp one of GC_CMP_* (a NaN compares
/// false): e.g. a WHILE running while the loss of gc_op_mse is >= eps
/// (GC_CMP_GE). With a counter (may be NULL), also adds 1 to *counter and
/// sets 0 once *counter >= limit: the WHILE's iteration cap. x and counter
/// are device memory, 4-byte aligned. Needs CUDA 12.3 and libcudadevrt.a.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a pointer not 4-byte aligned,
/// an unknown cmp, counter given with limit 0, x and counter overlapping),
/// GC_ERROR_NOT_SUPPORTED and GC_ERROR_CAPTURE as gc_op_cond_set_u32,
/// GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (linking or loading the setters, or
/// the launch, failed).
#[no_mangle]
pub extern "C" fn gc_op_cond_set_f32(
    stream: *mut gc_stream,
    handle: gc_cond_handle,
    x: *const f32,
    threshold: f32,
    cmp: u32,
    counter: *mut u32,
    limit: u32,
) -> gc_status {
    op!(stream, |_| ops::cond_set_f32(
        handle.raw,
        p(x),
        threshold,
        cmp,
        p(counter),
        limit
    ))
}
