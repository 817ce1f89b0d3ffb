//! Executable graphs: instantiate a graph (gc_graph_instantiate), then
//! upload, launch, update and patch it. Execs of graphs captured into one
//! pool share memory: they must not run concurrently (launch them on one
//! stream, or wait between them); graphcore does not detect it.

use crate::args::{Out, Versioned, VersionedOut};
use crate::graph::{gc_graph, gc_node, GRAPHS};
use crate::handle::Registry;
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream, STREAMS};
use graphcore_core::{instantiate_flags, Exec};
use std::ffi::{c_char, c_void};

/// An instantiated, launchable graph.
///
/// Ownership: gc_graph_instantiate returns a handle the caller destroys
/// with gc_exec_destroy. The exec keeps its graph's functions and pool
/// memory alive (the graph handle may go first); launches already enqueued
/// complete after the destroy.
///
/// Thread safety: gc_exec_launch and gc_exec_launch_with may be called
/// from several threads at once, on the same or different execs, without
/// allocation (launches of one exec run one after another, as CUDA orders
/// them). Each launch runs with one whole set of bindings: the bindings a
/// gc_exec_launch_with sets are the ones its own launch uses, and a
/// gc_exec_launch runs with the last complete set (an exec whose graph
/// declares arguments takes an internal lock for this; one that declares
/// none takes no lock). gc_exec_update and gc_exec_set_kernel_args must
/// not race with a launch of the same exec, nor with each other; the
/// caller serializes them. gc_exec_destroy must not race with other calls
/// on the handle.
pub struct gc_exec;

pub(crate) static EXECS: Registry<Exec> = Registry::new(7, "gc_exec");

fn exec(h: *mut gc_exec) -> graphcore_core::Result<Exec> {
    EXECS.get(h as u64, "exec")
}

/// gc_graph_instantiate flag: upload the graph to the device while
/// instantiating, so the first launch is as cheap as the next.
pub const GC_INSTANTIATE_UPLOAD: u32 = 1;
/// gc_graph_instantiate flag: CUDA's AUTO_FREE_ON_LAUNCH (for graphs with
/// memory allocation nodes).
pub const GC_INSTANTIATE_AUTO_FREE_ON_LAUNCH: u32 = 2;
/// gc_graph_instantiate flag: launch nodes in the order of their priority.
pub const GC_INSTANTIATE_USE_NODE_PRIORITY: u32 = 4;
/// gc_graph_instantiate flag: fuse chains of graphcore's elementwise
/// kernels (fill, copy, scale, add_scalar, relu, chain) that work along one
/// buffer into launches of the fused chain kernel (up to 8 operations each)
/// before instantiating. Results are bitwise equal to the unfused graph's;
/// gc_exec_stats reports what was fused. Off by default: the exec's nodes
/// then no longer match the graph's one to one (profilers show the chain
/// kernel), which only this flag opts into.
pub const GC_INSTANTIATE_FUSE_ELEMENTWISE: u32 = 8;

const _: () = assert!(
    GC_INSTANTIATE_UPLOAD == instantiate_flags::UPLOAD
        && GC_INSTANTIATE_AUTO_FREE_ON_LAUNCH == instantiate_flags::AUTO_FREE_ON_LAUNCH
        && GC_INSTANTIATE_USE_NODE_PRIORITY == instantiate_flags::USE_NODE_PRIORITY
        && GC_INSTANTIATE_FUSE_ELEMENTWISE == instantiate_flags::FUSE_ELEMENTWISE
);

/// Instantiates `graph` (flags: GC_INSTANTIATE_*, or 0). An empty graph or
/// an unknown flag is GC_ERROR_INVALID_ARGUMENT. The exec keeps the graph's
/// functions and pool memory alive; the graph handle may be destroyed.
/// Execs of graphs captured into one pool must not run concurrently (they
/// share memory; graphcore does not detect it). When the driver refuses,
/// the message (gc_last_error) names the node CUDA blames, as "node 3
/// (kernel `name`)" (the index is the node's in the graph, as DOT output
/// numbers them; the name is the function's, cuFuncGetName's for foreign
/// kernels on CUDA 12.3 drivers and newer), and CUDA's instantiate result
/// (cuGraphInstantiateWithParams' CUgraphInstantiateResult), where CUDA
/// gives them.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (an empty graph, an unknown
/// flag, or a conditional body: instantiate the graph holding it),
/// GC_ERROR_INVALID_STATE (body rules: see Conditional nodes),
/// GC_ERROR_OUT_OF_MEMORY, GC_ERROR_CUDA (the driver refused to instantiate
/// or upload).
#[no_mangle]
pub extern "C" fn gc_graph_instantiate(
    graph: *mut gc_graph,
    flags: u32,
    exec: *mut *mut gc_exec,
) -> gc_status {
    boundary("gc_graph_instantiate", || {
        let out = Out::new(exec, "exec")?;
        // A clone, not `with`: instantiating takes long enough that a
        // concurrent gc_graph_destroy should not wait for it. The exec
        // keeps the clone.
        let e = Exec::instantiate(GRAPHS.get(graph as u64, "graph")?, flags)?;
        out.set(EXECS.insert(e)? as *mut gc_exec);
        Ok(())
    })
}

/// Uploads the exec's work to the device on `stream` ahead of its first
/// launch (stream of the exec's context).
/// Errors: common, and GC_ERROR_CAPTURE (the stream captures and CUDA refused).
#[no_mangle]
pub extern "C" fn gc_exec_upload(exec: *mut gc_exec, stream: *mut gc_stream) -> gc_status {
    boundary("gc_exec_upload", || {
        self::exec(exec)?.upload(&self::stream(stream, "stream")?)
    })
}

/// Launches the exec on `stream` (any stream of its context). No heap
/// allocation and no lock another thread's launch could wait on, and no
/// change of the thread's current context unless stream is the legacy
/// default stream. Graphs sharing a pool must not run concurrently: order
/// their launches (graphcore does not detect overlap).
/// Errors: common, and GC_ERROR_CAPTURE (CUDA refused the launch under
/// capture).
#[no_mangle]
pub extern "C" fn gc_exec_launch(exec: *mut gc_exec, stream: *mut gc_stream) -> gc_status {
    boundary("gc_exec_launch", || {
        EXECS.with(exec as u64, "exec", |e| {
            STREAMS.with(stream as u64, "stream", |s| e.launch(s))
        })
    })
}

/// One binding for gc_exec_launch_with and gc_runner_replay_with:
/// argument `index` (as gc_graph_declare_arg or gc_capture_arg numbered
/// it) now lives at `ptr`, a device range of `bytes` bytes. `bytes` 0
/// means "as large as the memory at ptr": graphcore then checks that the
/// declared size fits in ptr's allocation (or pool block). For a scalar
/// argument (gc_graph_declare_scalar_arg, gc_capture_scalar_arg), `ptr`
/// holds the new value's bytes instead (memcpy the value into its first
/// bytes, the rest zero) and `bytes` is 0 or the scalar's size: one array
/// binds addresses and scalars together, through the same patching.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct gc_binding {
    /// The argument's index.
    pub index: usize,
    /// The new first address (device memory of the exec's device).
    pub ptr: *mut c_void,
    /// Bytes available at ptr (at least the declared size), or 0.
    pub bytes: usize,
}

const _: () = assert!(
    std::mem::size_of::<gc_binding>() == std::mem::size_of::<graphcore_core::Binding>()
        && std::mem::align_of::<gc_binding>() == std::mem::align_of::<graphcore_core::Binding>()
        && std::mem::offset_of!(gc_binding, index)
            == std::mem::offset_of!(graphcore_core::Binding, index)
        && std::mem::offset_of!(gc_binding, ptr)
            == std::mem::offset_of!(graphcore_core::Binding, ptr)
        && std::mem::offset_of!(gc_binding, bytes)
            == std::mem::offset_of!(graphcore_core::Binding, bytes)
);

/// The bindings array of a call, read in place (no copy).
pub(crate) fn bindings<'a>(
    b: *const gc_binding,
    n: usize,
) -> graphcore_core::Result<&'a [graphcore_core::Binding]> {
    if n == 0 {
        return Ok(&[]);
    }
    if b.is_null() {
        return Err(graphcore_core::Error::invalid_argument(format!(
            "`bindings` is NULL with n = {n}"
        )));
    }
    // SAFETY: the caller passes n readable gc_binding values; Binding has
    // the same C layout (checked above) and any bit pattern is valid.
    Ok(unsafe { std::slice::from_raw_parts(b as *const graphcore_core::Binding, n) })
}

/// Binds arguments to new ranges, then launches the exec on `stream` as
/// gc_exec_launch does: `bindings` holds n gc_binding (n may be 0:
/// bindings may be NULL, and this is gc_exec_launch). Only the nodes whose
/// values change are patched (CUDA's exec setters); binding an argument to
/// the address it has now costs nothing. Bindings persist: gc_exec_launch
/// and later calls keep the last ones; gc_exec_update keeps them too (the
/// uses are found again in the updating graph, at the declared ranges'
/// addresses, and set to the bound ones). A binding applies to launches
/// made after it: a launch of the exec already enqueued or running uses
/// the addresses it was launched with (CUDA documents its exec setters so).
/// The caller owns the memory a binding names: it must stay valid while
/// launches using it may run and, since bindings persist, for as long as
/// plain launches may follow, that is until the argument is bound
/// elsewhere or the exec is destroyed (graphcore cannot tell when memory
/// it does not own is freed or reused; the Python package's Exec and
/// Runner keep the objects bound alive that long). Any bad binding is
/// GC_ERROR_INVALID_ARGUMENT naming it (a block given back with
/// gc_pool_free included), and the exec is unchanged and not launched. No
/// heap allocation. An argument that is an endpoint of a copy node (from
/// gc_memcpy_async captured, or gc_graph_add_memcpy) binds only to memory
/// of the kind it was declared on: graphcore pool memory to pool memory,
/// memory allocated otherwise (cudaMalloc, cuMemAlloc) to such memory
/// (CUDA refuses the change of kind; graphcore refuses it first,
/// GC_ERROR_INVALID_ARGUMENT). Uses: exact for built-in kernels, copies and sets
/// (addresses inside the range); for other kernels every 8-byte-aligned
/// parameter word inside the range, or one past its end (the end of a
/// (begin, end) pair), is patched, so a scalar parameter that happens to
/// equal such an address is patched too (gc_exec_arg_info counts it among
/// the uses found). The way out: declare the argument with GC_ARG_EXACT
/// (then only built-in kernels, copies and sets are rebound for it, no
/// other kernel's parameters), or keep such scalars out of the values of
/// declared ranges.
/// A scalar argument's binding is checked for its size only: `bytes` 0 or
/// the scalar's size, and no bits in ptr above that size (an address given
/// for a 4-byte scalar, most likely); its value is not checked otherwise.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (bindings NULL while n is not
/// 0, an exec whose graph declared no arguments, an unknown argument index, an
/// argument bound twice, a NULL, host or other device's address, a freed pool
/// block, or a range smaller than declared; for a scalar argument, bytes
/// neither 0 nor its size, or value bits above its size), GC_ERROR_CAPTURE (as
/// gc_exec_launch), GC_ERROR_CUDA (the driver refused a new value: the old
/// bindings are back).
#[no_mangle]
pub extern "C" fn gc_exec_launch_with(
    exec: *mut gc_exec,
    stream: *mut gc_stream,
    bindings: *const gc_binding,
    n: usize,
) -> gc_status {
    boundary("gc_exec_launch_with", || {
        let b = self::bindings(bindings, n)?;
        EXECS.with(exec as u64, "exec", |e| {
            STREAMS.with(stream as u64, "stream", |s| e.launch_with(s, b))
        })
    })
}

/// Writes to *uses how many uses of argument `index` the exec found in its
/// nodes (kernel parameters, memcpy and memset endpoints, child graphs'
/// included; for a scalar argument, the kernel parameters holding its
/// marker): a caller checks that a captured library was covered (0 means
/// binding the argument changes nothing: for a scalar, a marker that
/// matched no parameter of its size).
/// Errors: GC_ERROR_INVALID_ARGUMENT (exec or uses is NULL, or index is
/// not a declared argument), GC_ERROR_INVALID_HANDLE (exec destroyed).
#[no_mangle]
pub extern "C" fn gc_exec_arg_info(
    exec: *mut gc_exec,
    index: usize,
    uses: *mut usize,
) -> gc_status {
    boundary("gc_exec_arg_info", || {
        let out = Out::new(uses, "uses")?;
        out.set(self::exec(exec)?.arg_uses(index)?);
        Ok(())
    })
}

/// What a use of a declared argument is (gc_arg_use's `kind`).
pub type gc_arg_use_kind = u32;
/// A kernel parameter (`offset` is its byte offset in the parameters).
pub const GC_ARG_USE_KERNEL: gc_arg_use_kind = 0;
/// A copy node's destination.
pub const GC_ARG_USE_MEMCPY_DST: gc_arg_use_kind = 1;
/// A copy node's source.
pub const GC_ARG_USE_MEMCPY_SRC: gc_arg_use_kind = 2;
/// A memset node's destination.
pub const GC_ARG_USE_MEMSET: gc_arg_use_kind = 3;

/// One use of a declared argument, filled in by gc_exec_arg_uses (a plain
/// array entry: no struct_size).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct gc_arg_use {
    /// The node's index in the graph the exec was instantiated from (DOT's
    /// node `n<index>`, the index errors name); SIZE_MAX for a fused
    /// chain's kernel.
    pub node: usize,
    /// A gc_arg_use_kind.
    pub kind: u32,
    /// 1 when the use is inside the child graph that node `node` runs.
    pub nested: u32,
    /// For a kernel, the byte offset of the patched 8-byte word in its
    /// parameter buffer; 0 otherwise.
    pub offset: usize,
    /// The used address minus the argument's first address.
    pub delta: u64,
    /// The kernel's name, NUL-terminated (cut to 63 bytes); "" otherwise.
    pub kernel: [c_char; 64],
}

/// The C form of a core use.
fn arg_use(u: &graphcore_core::ArgUse) -> gc_arg_use {
    use graphcore_core::ArgUseKind as K;
    let mut kernel = [0 as c_char; 64];
    if let Some(name) = &u.kernel {
        for (d, &b) in kernel.iter_mut().zip(name.as_bytes().iter().take(63)) {
            *d = b as c_char;
        }
    }
    gc_arg_use {
        node: u.node,
        kind: match u.kind {
            K::Kernel => GC_ARG_USE_KERNEL,
            K::MemcpyDst => GC_ARG_USE_MEMCPY_DST,
            K::MemcpySrc => GC_ARG_USE_MEMCPY_SRC,
            K::Memset => GC_ARG_USE_MEMSET,
        },
        nested: u.nested as u32,
        offset: u.offset,
        delta: u.delta,
        kernel,
    }
}

/// Lists the uses of argument `index` that gc_exec_arg_info counts, in
/// node order: writes the first min(*count, capacity) to `uses` and the
/// number of uses to *count (call with capacity 0 and uses NULL to size
/// the array; more uses than capacity is not an error). An engine checks
/// that the scan found the uses it expected (the node, the kernel and the
/// parameter offset) and nothing else. The caller owns the array.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (uses NULL while capacity
/// is not 0, count NULL, or index is not a declared argument).
/// Thread safety: may run from any thread, concurrently with
/// gc_exec_launch_with of the same exec (both take the exec's argument
/// lock).
#[no_mangle]
pub extern "C" fn gc_exec_arg_uses(
    exec: *mut gc_exec,
    index: usize,
    uses: *mut gc_arg_use,
    capacity: usize,
    count: *mut usize,
) -> gc_status {
    boundary("gc_exec_arg_uses", || {
        let out = Out::new(count, "count")?;
        if uses.is_null() && capacity != 0 {
            return Err(graphcore_core::Error::invalid_argument(format!(
                "`uses` is NULL with capacity = {capacity}"
            )));
        }
        let found = self::exec(exec)?.arg_use_list(index)?;
        for (i, u) in found.iter().take(capacity).enumerate() {
            // SAFETY: the caller passes `capacity` writable entries.
            unsafe { uses.add(i).write(arg_use(u)) };
        }
        out.set(found.len());
        Ok(())
    })
}

/// Updates the exec in place with the parameters of `graph`, a graph of
/// the same topology (same node kinds in the same order, same edges). A
/// different topology is GC_ERROR_UPDATE_MISMATCH naming the first
/// differing node; the exec is unchanged and stays usable. A kernel node's
/// function is one of its parameters: it may change to another function of
/// the context, within CUDA's limits for cuGraphExecUpdate (not to one using
/// dynamic parallelism or device-side graph launches where the old one did
/// not: the driver's refusal is GC_ERROR_UPDATE_MISMATCH or GC_ERROR_CUDA).
/// A refusal names the node as gc_graph_instantiate's errors do, with
/// CUDA's reason (cuGraphExecUpdate's result info).
/// Graphs with conditional nodes are not updated: either the exec's graph
/// or `graph` having one is GC_ERROR_INVALID_ARGUMENT (instantiate again).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (the exec's graph or graph
/// has conditional nodes), GC_ERROR_INVALID_STATE (body rules: see
/// Conditional nodes), GC_ERROR_UPDATE_MISMATCH (another topology, or for a
/// fused exec other chains).
#[no_mangle]
pub extern "C" fn gc_exec_update(exec: *mut gc_exec, graph: *mut gc_graph) -> gc_status {
    boundary("gc_exec_update", || {
        EXECS.with(exec as u64, "exec", |e| {
            GRAPHS.with(graph as u64, "graph", |g| e.update(g))
        })
    })
}

/// Sets new argument values for the kernel node `node` of the graph the
/// exec was instantiated from; later launches use them. `args` is as for
/// gc_launch: one pointer per kernel parameter, in order, no count (the
/// kernel's own parameter list decides; see the Launch section); the
/// values are copied now. graphcore checks that node is a kernel node of
/// that graph; it cannot check the count or types of a module's or wrapped
/// kernel's arguments, while for a built-in kernel it reads exactly its
/// known parameters. A node fused into a chain
/// (GC_INSTANTIATE_FUSE_ELEMENTWISE) may change only its constants; other
/// changes are GC_ERROR_UPDATE_MISMATCH.
/// Use the nodes of the instantiated graph even after gc_exec_update (the
/// updating graph's nodes are of another graph; they correspond by index).
/// Nodes inside conditional bodies cannot be set in an exec (they are
/// nodes of another graph, the body): set them in the body before
/// instantiating.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (node is of another graph, a
/// conditional body's included, out of range, or not a kernel node),
/// GC_ERROR_UPDATE_MISMATCH (the change would
/// alter a fused chain), GC_ERROR_CUDA (the driver refused the parameters). The
/// exec is unchanged on failure.
#[no_mangle]
pub extern "C" fn gc_exec_set_kernel_args(
    exec: *mut gc_exec,
    node: gc_node,
    args: *mut *mut c_void,
) -> gc_status {
    boundary("gc_exec_set_kernel_args", || {
        let e = self::exec(exec)?;
        // SAFETY: the caller passes one pointer per parameter, as documented.
        unsafe { e.set_kernel_args(node.into(), args) }
    })
}

/// What an exec holds, filled in by gc_exec_stats.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct gc_exec_statistics {
    /// Set to sizeof(gc_exec_statistics) before the call.
    pub struct_size: usize,
    /// Nodes of the graph the exec was instantiated from.
    pub graph_nodes: u64,
    /// Nodes removed by GC_INSTANTIATE_FUSE_ELEMENTWISE.
    pub fused_away: u64,
    /// Nodes of the graph that was instantiated.
    pub instantiated_nodes: u64,
    /// Elementwise chains fused.
    pub chains: u64,
}

impl Versioned for gc_exec_statistics {
    const V1_SIZE: usize = std::mem::size_of::<Self>();
}

/// Fills *stats (set stats->struct_size = sizeof(gc_exec_statistics)):
/// node counts before and after fusion.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a wrong struct_size),
/// GC_ERROR_CUDA (reading the node count of the captured graph the exec was
/// instantiated or last updated from, which no call had read yet).
#[no_mangle]
pub extern "C" fn gc_exec_stats(exec: *mut gc_exec, stats: *mut gc_exec_statistics) -> gc_status {
    boundary("gc_exec_stats", || {
        let out = VersionedOut::new(stats, "stats")?;
        let st = self::exec(exec)?.stats()?;
        let v = gc_exec_statistics {
            struct_size: std::mem::size_of::<gc_exec_statistics>(),
            graph_nodes: st.graph_nodes as u64,
            fused_away: st.fused_away as u64,
            instantiated_nodes: st.instantiated_nodes as u64,
            chains: st.chains as u64,
        };
        out.set(&v);
        Ok(())
    })
}

/// Writes the graph that was instantiated (after fusion, if any) to `path`
/// in Graphviz DOT. The file is created or replaced.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (path is not UTF-8, or the
/// file cannot be written: the message gives the OS error), GC_ERROR_CUDA
/// (reading a captured graph's nodes back failed).
#[no_mangle]
pub extern "C" fn gc_exec_write_dot(exec: *mut gc_exec, path: *const c_char) -> gc_status {
    boundary("gc_exec_write_dot", || {
        let p = crate::args::c_str(path, "path")?;
        let e = self::exec(exec)?;
        let name = std::path::Path::new(p)
            .file_stem()
            .map_or("exec".into(), |s| s.to_string_lossy().into_owned());
        std::fs::write(p, e.to_dot(&name)?).map_err(|err| {
            graphcore_core::Error::invalid_argument(format!("cannot write {p}: {err}"))
        })
    })
}

/// Writes the underlying CUgraphExec (a cudaGraphExec_t) to *raw, for CUDA
/// calls graphcore does not wrap. graphcore still owns it: do not destroy it.
/// Errors: GC_ERROR_INVALID_ARGUMENT (exec or raw is NULL),
/// GC_ERROR_INVALID_HANDLE (exec destroyed).
#[no_mangle]
pub extern "C" fn gc_exec_raw(exec: *mut gc_exec, raw: *mut *mut c_void) -> gc_status {
    boundary("gc_exec_raw", || {
        let out = Out::new(raw, "raw")?;
        out.set(self::exec(exec)?.raw() as *mut c_void);
        Ok(())
    })
}

/// Destroys the exec (work already launched completes). NULL is a no-op.
/// Errors: GC_ERROR_INVALID_HANDLE (exec already destroyed, or not an exec).
#[no_mangle]
pub extern "C" fn gc_exec_destroy(exec: *mut gc_exec) -> gc_status {
    boundary("gc_exec_destroy", || {
        EXECS.remove(exec as u64, "exec")?;
        Ok(())
    })
}
