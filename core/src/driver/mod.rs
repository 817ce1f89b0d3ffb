//! The only module that calls CUDA, through cudarc's dynamically loaded
//! driver bindings. Everything here is a thin, checked wrapper: each function
//! turns a `CUresult` into graphcore's [`Error`] with the call's name, the
//! CUDA error's name and text. Raw handles leave this module only to be
//! stored and passed back in.

pub(crate) mod conditional;
pub(crate) mod cublaslt;
pub(crate) mod device;
pub(crate) mod edges;
pub(crate) mod graph;
pub(crate) mod memory;
pub(crate) mod module;
pub(crate) mod owned;
pub(crate) mod stream;

use crate::error::{Error, ErrorKind, Result};
use cudarc::driver::sys;
use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

pub(crate) use sys::{
    CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUgraph, CUgraphExec, CUgraphNode,
    CUmodule, CUstream,
};

/// The host callback type of graph host nodes and stream host functions:
/// `fn(user_data)`, called on a CPU thread of the driver.
pub type HostFn = unsafe extern "C" fn(*mut c_void);

/// The oldest driver API graphcore runs on (CUDA 12.0).
pub const MIN_DRIVER_VERSION: i32 = 12000;

/// Loads libcuda and runs `cuInit` once per process. A missing driver is
/// [`ErrorKind::NoDriver`]; a driver older than CUDA 12.0 is
/// [`ErrorKind::NotSupported`]; no device is [`ErrorKind::NoDevice`].
pub(crate) fn init() -> Result<()> {
    static INIT: OnceLock<Result<()>> = OnceLock::new();
    INIT.get_or_init(|| {
        // SAFETY: probing for the library has no preconditions.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::new(
                ErrorKind::NoDriver,
                "no CUDA driver: libcuda.so could not be loaded (is the NVIDIA driver installed, \
                 and is its folder on the loader path?)",
            ));
        }
        // SAFETY: cuInit takes flags 0 and may be called from any thread.
        check(unsafe { sys::cuInit(0) }, "cuInit")?;
        require_version(driver_version_raw()?, MIN_DRIVER_VERSION, "graphcore")
    })
    .clone()
}

/// "12.4" for 12040: a `cuDriverGetVersion` value as CUDA names versions.
pub(crate) fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Checks a driver version against what `what` needs (pure: the version
/// comes from `cuDriverGetVersion`, so this rule is tested without a driver
/// of every age). Older than `needed` is [`ErrorKind::NotSupported`], with
/// both versions named.
pub(crate) fn require_version(have: i32, needed: i32, what: &str) -> Result<()> {
    if have >= needed {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::NotSupported,
        format!(
            "the CUDA driver supports CUDA {} (cuDriverGetVersion = {have}); {what} needs CUDA {} \
             or newer: update the NVIDIA driver",
            version_text(have),
            version_text(needed)
        ),
    ))
}

fn driver_version_raw() -> Result<i32> {
    let mut v = 0;
    check(
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut v) },
        "cuDriverGetVersion",
    )?;
    Ok(v)
}

/// The driver's CUDA version as 1000·major + 10·minor (12040 is 12.4).
pub(crate) fn driver_version() -> Result<i32> {
    init()?;
    driver_version_raw()
}

/// The error kind a `CUresult` maps to.
fn kind_of(code: sys::CUresult) -> ErrorKind {
    use sys::CUresult as R;
    match code {
        R::CUDA_ERROR_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
        R::CUDA_ERROR_NO_DEVICE | R::CUDA_ERROR_INVALID_DEVICE => ErrorKind::NoDevice,
        R::CUDA_ERROR_NOT_SUPPORTED => ErrorKind::NotSupported,
        R::CUDA_ERROR_NOT_FOUND => ErrorKind::NotFound,
        R::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
        | R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
        | R::CUDA_ERROR_STREAM_CAPTURE_MERGE
        | R::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
        | R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED
        | R::CUDA_ERROR_STREAM_CAPTURE_ISOLATION
        | R::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
        | R::CUDA_ERROR_CAPTURED_EVENT
        | R::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD => ErrorKind::Capture,
        R::CUDA_ERROR_ILLEGAL_ADDRESS
        | R::CUDA_ERROR_LAUNCH_FAILED
        | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
        | R::CUDA_ERROR_MISALIGNED_ADDRESS
        | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
        | R::CUDA_ERROR_INVALID_PC
        | R::CUDA_ERROR_HARDWARE_STACK_ERROR
        | R::CUDA_ERROR_ASSERT
        | R::CUDA_ERROR_LAUNCH_TIMEOUT
        | R::CUDA_ERROR_ECC_UNCORRECTABLE => ErrorKind::DeviceFault,
        _ => ErrorKind::Cuda,
    }
}

/// The CUDA error's name and description, as the driver gives them.
pub(crate) fn describe(code: sys::CUresult) -> (String, String) {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: both calls write a pointer to a static string or leave it NULL.
    unsafe {
        sys::cuGetErrorName(code, &mut name);
        sys::cuGetErrorString(code, &mut text);
    }
    let read = |p: *const std::ffi::c_char| {
        if p.is_null() {
            format!("CUresult {}", code as u32)
        } else {
            // SAFETY: the driver returns NUL-terminated static strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    (read(name), read(text))
}

/// Turns a `CUresult` into `Ok(())` or an [`Error`] naming `call`. Inlined
/// into every driver call: success costs one comparison.
#[inline(always)]
pub(crate) fn check(code: sys::CUresult, call: &str) -> Result<()> {
    if code == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(failure(code, call))
}

/// The [`Error`] of a failed driver call (out of line: the cold path of
/// [`check`]).
#[cold]
#[inline(never)]
fn failure(code: sys::CUresult, call: &str) -> Error {
    let kind = kind_of(code);
    let (name, text) = describe(code);
    let mut message = format!("{call} failed: {name}: {text}");
    if kind == ErrorKind::DeviceFault {
        message.push_str(
            "; this is a sticky error: the device context is unusable for the rest of the \
             process. Destroy graphcore's objects of this device and restart the process",
        );
    }
    Error::from_cuda(kind, code as u32, message)
}

/// True when `code` is one of CUDA's stream-capture errors.
pub(crate) fn is_capture_error(e: &Error) -> bool {
    e.kind() == ErrorKind::Capture
}

/// Switches this thread to relaxed capture mode for as long as it lives, so
/// calls that are not capturable (mapping pool memory, loading modules) can
/// run while a capture is open without invalidating it.
pub(crate) struct RelaxedCaptureMode(sys::CUstreamCaptureMode);

impl RelaxedCaptureMode {
    pub(crate) fn enter() -> Result<Self> {
        let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        check(
            // SAFETY: exchanges this thread's mode; the old one is restored on drop.
            unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) },
            "cuThreadExchangeStreamCaptureMode",
        )?;
        Ok(RelaxedCaptureMode(mode))
    }
}

impl Drop for RelaxedCaptureMode {
    fn drop(&mut self) {
        let mut mode = self.0;
        // SAFETY: restores the mode saved by `enter`.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
    }
}

/// Resolves `name` for the ABI of CUDA `version`.
pub(crate) fn resolve(name: &CStr, version: c_int) -> Result<*mut c_void> {
    let mut p = std::ptr::null_mut();
    let mut found = sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS;
    check(
        // SAFETY: writes one function pointer and the lookup's status; flags
        // 0 is CU_GET_PROC_ADDRESS_DEFAULT. (cuGetProcAddress_v2 is CUDA
        // 12.0's form.)
        unsafe { sys::cuGetProcAddress_v2(name.as_ptr(), &mut p, version, 0, &mut found) },
        "cuGetProcAddress",
    )
    .map_err(|e| e.context(&format!("resolving {}", name.to_string_lossy())))?;
    if p.is_null() || found != sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS {
        return Err(Error::new(
            ErrorKind::NotSupported,
            format!("the CUDA driver has no {}", name.to_string_lossy()),
        ));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_below_the_baseline_are_not_supported() {
        for old in [0, 9020, 11080, 11080 + 9, 11990] {
            let e = require_version(old, MIN_DRIVER_VERSION, "graphcore").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported, "{old}");
            assert!(e.message().contains("needs CUDA 12.0"), "{}", e.message());
            assert!(
                e.message()
                    .contains(&format!("supports CUDA {}", version_text(old))),
                "{}",
                e.message()
            );
            assert_eq!(e.cuda_result(), None);
        }
        for ok in [12000, 12010, 12040, 13000, i32::MAX] {
            require_version(ok, MIN_DRIVER_VERSION, "graphcore").unwrap();
        }
        // Features beyond the baseline name themselves and their version.
        let e = require_version(12020, 12030, "graph edge data").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported);
        assert!(
            e.message().contains("graph edge data needs CUDA 12.3"),
            "{}",
            e.message()
        );
        assert!(e.message().contains("CUDA 12.2"), "{}", e.message());
    }

    #[test]
    fn version_text_is_major_dot_minor() {
        assert_eq!(version_text(12000), "12.0");
        assert_eq!(version_text(12040), "12.4");
        assert_eq!(version_text(11080), "11.8");
        assert_eq!(version_text(13010), "13.1");
    }

    #[test]
    fn faults_are_sticky_device_faults() {
        use sys::CUresult as R;
        for code in [
            R::CUDA_ERROR_ILLEGAL_ADDRESS,
            R::CUDA_ERROR_LAUNCH_FAILED,
            R::CUDA_ERROR_ILLEGAL_INSTRUCTION,
            R::CUDA_ERROR_ASSERT,
        ] {
            assert_eq!(kind_of(code), ErrorKind::DeviceFault, "{code:?}");
        }
        assert_eq!(kind_of(R::CUDA_ERROR_OUT_OF_MEMORY), ErrorKind::OutOfMemory);
        assert_eq!(
            kind_of(R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
            ErrorKind::Capture
        );
        assert_eq!(kind_of(R::CUDA_ERROR_INVALID_VALUE), ErrorKind::Cuda);
    }
}
