//! Modules, functions, built-in kernels and eager launches.
//!
//! Thread safety: all calls may run concurrently, except that a destroy must
//! not race with other calls on the same handle.

use crate::args::{bytes, c_str, Out};
use crate::context::{context, gc_context};
use crate::handle::Registry;
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream};
use graphcore_core::{Function, LaunchConfig, Module};
use std::ffi::{c_char, c_void};

/// A loaded module image (PTX, cubin or fatbin).
pub struct gc_module;

/// A kernel: from a module, a built-in, or a wrapped CUfunction.
pub struct gc_function;

pub(crate) static MODULES: Registry<Module> = Registry::new(4, "gc_module");
pub(crate) static FUNCTIONS: Registry<Function> = Registry::new(5, "gc_function");

/// The function behind a handle.
pub(crate) fn function(h: *mut gc_function) -> graphcore_core::Result<Function> {
    FUNCTIONS.get(h as u64, "function")
}

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

/// The launch configuration of `grid`, `block` and `shared_bytes`.
pub(crate) fn launch_config(grid: gc_dim3, block: gc_dim3, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [grid.x, grid.y, grid.z],
        block: [block.x, block.y, block.z],
        shared_bytes,
    }
}

fn insert_function(f: Function, out: Out<*mut gc_function>) -> graphcore_core::Result<()> {
    out.set(FUNCTIONS.insert(f)? as *mut gc_function);
    Ok(())
}

/// Loads a module from an image of `size` bytes: PTX text (NUL-terminated
/// or not), a cubin (ELF) or a fatbin. Malformed PTX is GC_ERROR_CUDA with
/// the JIT compiler's log in gc_last_error().
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
/// the module loaded. Not found: GC_ERROR_NOT_FOUND.
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
/// `name` (may be NULL) labels it in messages and DOT output.
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

/// A built-in kernel by name (the list, with each kernel's arguments, is in
/// the "Built-in kernels" section of this header). Unknown names are
/// GC_ERROR_NOT_FOUND. The built-in modules load on first use.
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

/// Launches `function` on `stream` with `args` as cuLaunchKernel takes them
/// (one pointer per kernel parameter; the values are copied before this
/// returns). A zero or over-limit grid or block dimension is
/// GC_ERROR_INVALID_ARGUMENT and nothing is launched. Recorded, not run,
/// when the stream captures.
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
        let f = self::function(function)?;
        let s = self::stream(stream, "stream")?;
        // SAFETY: the caller passes one pointer per parameter, as documented.
        unsafe { f.launch(&s, &launch_config(grid, block, shared_bytes), args) }
    })
}

/// Writes the underlying CUfunction (usable as a cudaFunction_t) to *raw.
/// It stays valid while the gc_function (or a graph using it) lives.
#[no_mangle]
pub extern "C" fn gc_function_raw(function: *mut gc_function, raw: *mut *mut c_void) -> gc_status {
    boundary("gc_function_raw", || {
        let out = Out::new(raw, "raw")?;
        out.set(self::function(function)?.raw() as *mut c_void);
        Ok(())
    })
}

/// Drops a function handle. NULL is a no-op.
#[no_mangle]
pub extern "C" fn gc_function_destroy(function: *mut gc_function) -> gc_status {
    boundary("gc_function_destroy", || {
        FUNCTIONS.remove(function as u64, "function")?;
        Ok(())
    })
}

/// Drops a module handle; the module unloads when no function of it is
/// left. NULL is a no-op.
#[no_mangle]
pub extern "C" fn gc_module_destroy(module: *mut gc_module) -> gc_status {
    boundary("gc_module_destroy", || {
        MODULES.remove(module as u64, "module")?;
        Ok(())
    })
}
