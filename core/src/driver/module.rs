//! Modules (PTX, cubin or fatbin images), functions and kernel launches.

use super::{check, sys, CUfunction, CUmodule, CUstream};
use crate::error::{Error, Result};
use crate::timing::{timed, Span};
use std::ffi::{c_void, CStr, CString};

const LOG_BYTES: usize = 8192;

/// The JIT's error log: a buffer, and the two JIT options (with their
/// values) that point the driver at it. The values point into the buffer's
/// heap storage, so they stay valid while the log lives, wherever it moves.
struct JitLog {
    buffer: Vec<u8>,
    options: [sys::CUjit_option; 2],
    values: [*mut c_void; 2],
}

impl JitLog {
    /// An empty log of [`LOG_BYTES`] bytes.
    fn new() -> Self {
        let mut buffer = vec![0u8; LOG_BYTES];
        let values = [buffer.as_mut_ptr() as *mut c_void, LOG_BYTES as *mut c_void];
        JitLog {
            buffer,
            options: [
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            ],
            values,
        }
    }

    /// `e` with the log (NUL-terminated by the driver) appended, when it
    /// says anything.
    fn attach(&self, e: Error) -> Error {
        let text = CStr::from_bytes_until_nul(&self.buffer)
            .map(|c| c.to_string_lossy().trim().to_string())
            .unwrap_or_default();
        if text.is_empty() {
            return e;
        }
        let msg = format!("{}; JIT log: {text}", e.message());
        Error::from_cuda(e.kind(), e.cuda_result().unwrap_or(0), msg)
    }
}

/// Loads a module image (NUL-terminated PTX text, cubin or fatbin) into the
/// current context. On failure the JIT's error log is part of the message.
pub(crate) fn load(image: &[u8]) -> Result<CUmodule> {
    let mut log = JitLog::new();
    let mut m = std::ptr::null_mut();
    // SAFETY: image is a complete module image (the caller checked the PTX
    // terminator); the log buffer outlives the call.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut m,
            image.as_ptr() as *const c_void,
            log.options.len() as u32,
            log.options.as_mut_ptr(),
            log.values.as_mut_ptr(),
        )
    };
    check(r, "cuModuleLoadDataEx").map_err(|e| log.attach(e))?;
    Ok(m)
}

/// Links `ptx` (NUL-terminated PTX calling the device runtime) with the
/// static library `devrt` (libcudadevrt.a) with the driver's JIT linker, and
/// loads the result into the current context. The JIT's error log is part
/// of a failure's message.
pub(crate) fn link_with_devrt(ptx: &[u8], devrt: &std::path::Path) -> Result<CUmodule> {
    use sys::CUjitInputType as In;
    let path = CString::new(devrt.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::invalid_argument("the libcudadevrt path contains a NUL byte"))?;
    let mut log = JitLog::new();
    let mut state = std::ptr::null_mut();
    check(
        // SAFETY: the log buffer outlives the link state (destroyed below).
        unsafe {
            sys::cuLinkCreate_v2(
                log.options.len() as u32,
                log.options.as_mut_ptr(),
                log.values.as_mut_ptr(),
                &mut state,
            )
        },
        "cuLinkCreate",
    )?;
    let steps = || -> Result<CUmodule> {
        check(
            // SAFETY: `ptx` is complete NUL-terminated PTX that outlives the call.
            unsafe {
                sys::cuLinkAddData_v2(
                    state,
                    In::CU_JIT_INPUT_PTX,
                    ptx.as_ptr() as *mut c_void,
                    ptx.len(),
                    c"control.ptx".as_ptr(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            },
            "cuLinkAddData",
        )?;
        check(
            // SAFETY: a NUL-terminated path; the driver reads the file.
            unsafe {
                sys::cuLinkAddFile_v2(
                    state,
                    In::CU_JIT_INPUT_LIBRARY,
                    path.as_ptr(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            },
            "cuLinkAddFile",
        )
        .map_err(|e| e.context(&format!("linking {}", devrt.display())))?;
        let mut cubin = std::ptr::null_mut();
        let mut size = 0usize;
        check(
            // SAFETY: writes the image pointer (owned by `state`) and its size.
            unsafe { sys::cuLinkComplete(state, &mut cubin, &mut size) },
            "cuLinkComplete",
        )?;
        let mut m = std::ptr::null_mut();
        check(
            // SAFETY: `cubin` is the linked image, alive until cuLinkDestroy.
            unsafe { sys::cuModuleLoadData(&mut m, cubin) },
            "cuModuleLoadData",
        )?;
        Ok(m)
    };
    let r = steps();
    // SAFETY: `state` came from cuLinkCreate and is destroyed once.
    unsafe { sys::cuLinkDestroy(state) };
    r.map_err(|e| log.attach(e))
}

/// Unloads a module.
pub(crate) fn unload(m: CUmodule) -> Result<()> {
    // SAFETY: m came from `load` and is unloaded once.
    check(unsafe { sys::cuModuleUnload(m) }, "cuModuleUnload")
}

/// The function `name` in module `m`.
pub(crate) fn function(m: CUmodule, name: &str) -> Result<CUfunction> {
    let c = CString::new(name)
        .map_err(|_| Error::invalid_argument("function name contains a NUL byte"))?;
    let mut f = std::ptr::null_mut();
    check(
        // SAFETY: writes one function handle.
        unsafe { sys::cuModuleGetFunction(&mut f, m, c.as_ptr()) },
        "cuModuleGetFunction",
    )
    .map_err(|e| e.context(&format!("function `{name}`")))?;
    Ok(f)
}

/// The largest block (threads) `f` can be launched with.
pub(crate) fn max_threads_per_block(f: CUfunction) -> Result<i32> {
    let mut v = 0;
    check(
        // SAFETY: writes one int.
        unsafe {
            sys::cuFuncGetAttribute(
                &mut v,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                f,
            )
        },
        "cuFuncGetAttribute",
    )?;
    Ok(v)
}

/// How [`launch_ex`] launches: the launch attributes it sets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LaunchAttrs {
    /// Cooperative (every block resident at once, or the launch fails).
    pub(crate) cooperative: bool,
    /// Programmatic stream serialization: the kernel may start once the
    /// kernel before it on the stream has triggered (or finished), and must
    /// wait (`griddepcontrol.wait`) before it reads what that kernel
    /// writes. Stream capture turns it into a programmatic edge.
    pub(crate) programmatic: bool,
    /// Thread-block clusters of these dimensions (compute capability 9.0).
    pub(crate) cluster: Option<[u32; 3]>,
}

/// Launches `f` on `s` with `cuLaunchKernelEx` and the attributes `attrs`
/// asks for (stream capture records them on the kernel node and its
/// edges).
///
/// # Safety
/// As [`launch`]; with `attrs.programmatic`, `f` must wait on its
/// programmatic dependencies before it touches memory the kernel before it
/// may read or write.
pub(crate) unsafe fn launch_ex(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    s: CUstream,
    args: *mut *mut c_void,
    attrs: LaunchAttrs,
) -> Result<()> {
    use sys::CUlaunchAttributeID as Id;
    // SAFETY: an all-zero launch attribute is a valid value of the plain C
    // struct (the union's padding included).
    let mut list: [sys::CUlaunchAttribute; 3] = unsafe { std::mem::zeroed() };
    let mut n = 0;
    if attrs.cooperative {
        list[n].id = Id::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        list[n].value.cooperative = 1;
        n += 1;
    }
    if attrs.programmatic {
        list[n].id = Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        list[n].value.programmaticStreamSerializationAllowed = 1;
        n += 1;
    }
    if let Some([x, y, z]) = attrs.cluster {
        list[n].id = Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        list[n].value.clusterDim.x = x;
        list[n].value.clusterDim.y = y;
        list[n].value.clusterDim.z = z;
        n += 1;
    }
    let config = sys::CUlaunchConfig {
        gridDimX: grid[0],
        gridDimY: grid[1],
        gridDimZ: grid[2],
        blockDimX: block[0],
        blockDimY: block[1],
        blockDimZ: block[2],
        sharedMemBytes: shared_bytes,
        hStream: s,
        attrs: list.as_mut_ptr(),
        numAttrs: n as u32,
    };
    check(
        // SAFETY: config and its attributes outlive the call; the argument
        // pointers are valid by this function's contract.
        unsafe { sys::cuLaunchKernelEx(&config, f, args, std::ptr::null_mut()) },
        "cuLaunchKernelEx",
    )
}

/// Launches `f` on `s`.
///
/// # Safety
/// `args` must point to one valid pointer per kernel parameter, each to a
/// value of the parameter's size and type.
pub(crate) unsafe fn launch(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    s: CUstream,
    args: *mut *mut c_void,
) -> Result<()> {
    check(
        // SAFETY: the argument pointers are valid by this function's
        // contract; the driver copies the values before returning.
        timed(Span::DriverLaunchKernel, || unsafe {
            sys::cuLaunchKernel(
                f,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_bytes,
                s,
                args,
                std::ptr::null_mut(),
            )
        }),
        "cuLaunchKernel",
    )
}

/// `cuFuncGetName`, looked up at run time (drivers of CUDA 12.3 and later
/// have it; the baseline bindings are CUDA 12.0).
type FuncNameFn = unsafe extern "C" fn(*mut *const std::ffi::c_char, CUfunction) -> sys::CUresult;

fn func_name_fn() -> Option<FuncNameFn> {
    static F: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let addr = *F.get_or_init(|| {
        let mut pfn = std::ptr::null_mut();
        // SAFETY: a plain C enum the driver overwrites.
        let mut status: sys::CUdriverProcAddressQueryResult = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated name; writes one function pointer.
        let r = unsafe {
            sys::cuGetProcAddress_v2(c"cuFuncGetName".as_ptr(), &mut pfn, 12030, 0, &mut status)
        };
        (r == sys::CUresult::CUDA_SUCCESS && !pfn.is_null()).then_some(pfn as usize)
    });
    // SAFETY: the driver's address of cuFuncGetName, whose C signature is
    // `FuncNameFn`.
    addr.map(|a| unsafe { std::mem::transmute::<usize, FuncNameFn>(a) })
}

/// The (mangled) name of kernel `f` as its module has it; `None` when the
/// driver cannot tell (older than CUDA 12.3, or no driver).
pub(crate) fn func_name(f: CUfunction) -> Option<String> {
    if f.is_null() {
        return None;
    }
    let get = func_name_fn()?;
    let mut name = std::ptr::null();
    // SAFETY: a live function (the caller's); writes one pointer to a
    // NUL-terminated string the driver owns.
    let r = unsafe { get(&mut name, f) };
    if r != sys::CUresult::CUDA_SUCCESS || name.is_null() {
        return None;
    }
    // SAFETY: the driver's NUL-terminated string, copied at once.
    Some(
        unsafe { std::ffi::CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned(),
    )
}
