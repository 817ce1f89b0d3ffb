//! Launches: any gc_function on a stream (gc_launch), and a host function
//! in stream order (gc_launch_host_func). The typed gc_op_* calls of the
//! built-in kernels are in graphcore_ops.h.
//!
//! Kernel arguments (gc_launch, gc_graph_add_kernel,
//! gc_exec_set_kernel_args) follow cuLaunchKernel: `void **args` holds one
//! pointer per kernel parameter, in order, each to a value of that
//! parameter's type; there is no count. The values are copied before the
//! call returns, so the caller's storage may go away afterwards. args may
//! be NULL only for a kernel without parameters. graphcore cannot check
//! the count or the types of a kernel from a module or gc_function_wrap:
//! too few pointers is undefined behaviour, as with cuLaunchKernel. For a
//! built-in kernel the layout is known (listed at the end of
//! graphcore_ops.h) and graphcore reads exactly those parameters.

use crate::module::{gc_dim3, gc_function, FUNCTIONS};
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream, STREAMS};
use graphcore_core::Error;
use graphcore_core::LaunchConfig;
use std::ffi::c_void;

/// A host callback (of gc_launch_host_func and graph host nodes): called
/// with the user data given, on a CPU thread of the driver. It must not
/// call CUDA or graphcore.
pub type gc_host_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// The launch configuration of `grid`, `block` and `shared_bytes`.
pub(crate) fn launch_config(grid: gc_dim3, block: gc_dim3, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [grid.x, grid.y, grid.z],
        block: [block.x, block.y, block.z],
        shared_bytes,
    }
}

/// Launches `function` on `stream` with `args` as cuLaunchKernel takes them
/// (one pointer per kernel parameter; the values are copied before this
/// returns). A zero or over-limit grid or block dimension is
/// GC_ERROR_INVALID_ARGUMENT and nothing is launched. Recorded, not run,
/// when the stream captures. function and stream must be of one context.
/// On a non-NULL stream the launch needs no current context and leaves
/// the thread's as it was ("Device and context").
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a zero or over-limit
/// dimension, or more than 1024 threads a block), GC_ERROR_CAPTURE (CUDA
/// refused the launch under capture; the capture is invalid now), GC_ERROR_CUDA
/// (the driver refused the launch, e.g. too much shared memory).
#[no_mangle]
pub extern "C" fn gc_launch(
    function: *mut gc_function,
    stream: *mut gc_stream,
    grid: gc_dim3,
    block: gc_dim3,
    shared_bytes: u32,
    args: *mut *mut c_void,
) -> gc_status {
    boundary("gc_launch", || {
        FUNCTIONS.with(function as u64, "function", |f| {
            STREAMS.with(stream as u64, "stream", |s| {
                // SAFETY: the caller passes one pointer per parameter, as
                // documented.
                unsafe { f.launch(s, &launch_config(grid, block, shared_bytes), args) }
            })
        })
    })
}

/// Enqueues a call of `func(user_data)` on `stream` (cuLaunchHostFunc): it
/// runs on a CPU thread of the driver once the work enqueued before it is
/// done, and work enqueued after it waits until it returns. It must not
/// call CUDA or graphcore. Recorded as a host node when the stream
/// captures (then it runs at each replay: user_data must stay valid while
/// any exec of the graph may run).
/// Errors: common, and GC_ERROR_CAPTURE (CUDA refused it under capture; the
/// capture is invalid now).
#[no_mangle]
pub extern "C" fn gc_launch_host_func(
    stream: *mut gc_stream,
    func: gc_host_fn,
    user_data: *mut c_void,
) -> gc_status {
    boundary("gc_launch_host_func", || {
        let s = self::stream(stream, "stream")?;
        let f = func.ok_or_else(|| Error::invalid_argument("`func` is NULL"))?;
        // SAFETY: the caller vouches for func with user_data, as documented.
        unsafe { s.launch_host_func(f, user_data) }
    })
}
