//! Modules and functions: load a PTX, cubin or fatbin image and look up
//! its kernels, wrap a CUfunction / cudaFunction_t you already have, or
//! take one of graphcore's built-in kernels by name. A gc_function runs
//! with gc_launch or as a graph node (gc_graph_add_kernel).

use crate::args::{bytes, c_str, Out};
use crate::context::{context, gc_context};
use crate::handle::Registry;
use crate::status::{boundary, gc_status};
use graphcore_core::{Function, Module};
use std::ffi::{c_char, c_void};

/// A loaded module image (PTX, cubin or fatbin).
///
/// Ownership: gc_module_load returns a handle the caller destroys with
/// gc_module_destroy. Functions looked up in the module keep it loaded, so
/// it unloads only when the handle and all its functions (and the graphs
/// using them) are gone.
///
/// Thread safety: every call may run concurrently with any other on the
/// same module, except gc_module_destroy, which must not race with other
/// calls on the handle.
pub struct gc_module;

/// A kernel: from a module, a built-in, or a wrapped CUfunction.
///
/// Ownership: the caller destroys the handle with gc_function_destroy.
/// Graphs with a node of the function keep it (and its module) loaded, so
/// the handle may go first: nodes added with gc_graph_add_kernel, and
/// launches with gc_launch on a stream capturing through graphcore (a
/// launch on another stream joined to the capture is not seen: keep the
/// function until the graph's execs are gone). A wrapped CUfunction stays
/// the caller's: keep its module loaded while graphcore uses it.
///
/// Thread safety: a function may be launched and added to graphs from many
/// threads at once; gc_function_destroy must not race with other calls on
/// the handle.
pub struct gc_function;

/// Three dimensions of a grid or a block.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gc_dim3 {
    /// x extent (at least 1).
    pub x: u32,
    /// y extent (at least 1).
    pub y: u32,
    /// z extent (at least 1).
    pub z: u32,
}

pub(crate) static MODULES: Registry<Module> = Registry::new(4, "gc_module");
pub(crate) static FUNCTIONS: Registry<Function> = Registry::new(5, "gc_function");

/// The function behind a handle.
pub(crate) fn function(h: *mut gc_function) -> graphcore_core::Result<Function> {
    FUNCTIONS.get(h as u64, "function")
}

fn insert_function(f: Function, out: Out<*mut gc_function>) -> graphcore_core::Result<()> {
    out.set(FUNCTIONS.insert(f)? as *mut gc_function);
    Ok(())
}

/// Loads a module from an image of `size` bytes: PTX text (NUL-terminated
/// or not), a cubin (ELF) or a fatbin. Malformed PTX is GC_ERROR_CUDA with
/// the JIT compiler's log in gc_last_error(). graphcore copies what it
/// needs: the image may be freed when this returns.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (size is 0), GC_ERROR_CUDA
/// (the driver refused the image: malformed, for another architecture, or PTX
/// newer than the driver), GC_ERROR_OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn gc_module_load(
    ctx: *mut gc_context,
    image: *const c_void,
    size: usize,
    module: *mut *mut gc_module,
) -> gc_status {
    boundary("gc_module_load", || {
        let out = Out::new(module, "module")?;
        let m = Module::load(&context(ctx)?, bytes(image, size, "image")?)?;
        out.set(MODULES.insert(m)? as *mut gc_module);
        Ok(())
    })
}

/// Looks up the extern "C" kernel `name` in a module. The function keeps
/// the module loaded; destroy it with gc_function_destroy.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (name is not UTF-8),
/// GC_ERROR_NOT_FOUND (no kernel of that name).
#[no_mangle]
pub extern "C" fn gc_module_function(
    module: *mut gc_module,
    name: *const c_char,
    function: *mut *mut gc_function,
) -> gc_status {
    boundary("gc_module_function", || {
        let out = Out::new(function, "function")?;
        let m = MODULES.get(module as u64, "module")?;
        insert_function(m.function(c_str(name, "name")?)?, out)
    })
}

/// Wraps a CUfunction, or a cudaFunction_t from cudaGetFuncBySymbol (the
/// same handle), that the caller keeps loaded while graphcore uses it.
/// `name` (may be NULL) labels it in messages and DOT output. raw must be
/// a function of ctx's device; graphcore checks that the driver knows it
/// as a function.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (name is not UTF-8),
/// GC_ERROR_CUDA (raw is not a usable CUfunction).
#[no_mangle]
pub extern "C" fn gc_function_wrap(
    ctx: *mut gc_context,
    raw: *mut c_void,
    name: *const c_char,
    function: *mut *mut gc_function,
) -> gc_status {
    boundary("gc_function_wrap", || {
        let out = Out::new(function, "function")?;
        let name = if name.is_null() {
            ""
        } else {
            c_str(name, "name")?
        };
        // SAFETY: the caller vouches for `raw` as documented.
        let f = unsafe { Function::wrap(&context(ctx)?, raw as _, name) }?;
        insert_function(f, out)
    })
}

/// A built-in kernel by name (the list, with each kernel's arguments, is
/// the "Built-in kernels" list that ends graphcore_ops.h). Unknown names
/// are GC_ERROR_NOT_FOUND. The built-in modules load on first use (in relaxed
/// capture mode, so a first use during a capture does not break it).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (name is not UTF-8),
/// GC_ERROR_NOT_FOUND (no built-in of that name), GC_ERROR_NOT_SUPPORTED (a
/// kernel this machine cannot load: a conditional-handle setter (gc_cond_*)
/// with a driver older than CUDA 12.3 or no libcudadevrt.a found, see
/// Conditional nodes; or a kernel for a newer GPU), GC_ERROR_CUDA (loading
/// the built-in modules failed).
#[no_mangle]
pub extern "C" fn gc_kernel_builtin(
    ctx: *mut gc_context,
    name: *const c_char,
    function: *mut *mut gc_function,
) -> gc_status {
    boundary("gc_kernel_builtin", || {
        let out = Out::new(function, "function")?;
        insert_function(
            Function::from_builtin(&context(ctx)?, c_str(name, "name")?)?,
            out,
        )
    })
}

/// Writes the underlying CUfunction (usable as a cudaFunction_t) to *raw.
/// It stays valid while the gc_function (or a graph using it) lives; do not
/// unload or destroy it.
/// Errors: GC_ERROR_INVALID_ARGUMENT (function or raw is NULL),
/// GC_ERROR_INVALID_HANDLE (function destroyed).
#[no_mangle]
pub extern "C" fn gc_function_raw(function: *mut gc_function, raw: *mut *mut c_void) -> gc_status {
    boundary("gc_function_raw", || {
        let out = Out::new(raw, "raw")?;
        out.set(self::function(function)?.raw() as *mut c_void);
        Ok(())
    })
}

/// Drops a function handle; graphs using the function keep it. NULL is a
/// no-op.
/// Errors: GC_ERROR_INVALID_HANDLE (function already destroyed, or not a
/// function).
#[no_mangle]
pub extern "C" fn gc_function_destroy(function: *mut gc_function) -> gc_status {
    boundary("gc_function_destroy", || {
        FUNCTIONS.remove(function as u64, "function")?;
        Ok(())
    })
}

/// Drops a module handle; the module unloads when no function of it is
/// left. NULL is a no-op.
/// Errors: GC_ERROR_INVALID_HANDLE (module already destroyed, or not a
/// module).
#[no_mangle]
pub extern "C" fn gc_module_destroy(module: *mut gc_module) -> gc_status {
    boundary("gc_module_destroy", || {
        MODULES.remove(module as u64, "module")?;
        Ok(())
    })
}
