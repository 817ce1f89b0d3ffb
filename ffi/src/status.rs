//! Status codes, the per-thread last error, and the boundary every export
//! runs inside (errors become statuses, panics become `GC_ERROR_PANIC`).

use graphcore_core::{Error, ErrorKind};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The result of every fallible call. The values are stable: new codes are
/// only ever added, never renumbered.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum gc_status {
    /// The call succeeded.
    GC_SUCCESS = 0,
    /// An argument was NULL, zero, too large, misaligned or inconsistent.
    GC_ERROR_INVALID_ARGUMENT = 1,
    /// A handle was destroyed, is of another kind, or was never valid.
    GC_ERROR_INVALID_HANDLE = 2,
    /// Device or pinned host memory ran out, or a pool reached its max_bytes.
    GC_ERROR_OUT_OF_MEMORY = 3,
    /// No CUDA driver (libcuda.so) could be loaded on this machine.
    GC_ERROR_NO_DRIVER = 4,
    /// The driver loaded but there is no usable device (or no such ordinal).
    GC_ERROR_NO_DEVICE = 5,
    /// The driver or the device lacks a feature this call needs.
    GC_ERROR_NOT_SUPPORTED = 6,
    /// A CUDA call failed; gc_last_cuda_result() gives its CUresult.
    GC_ERROR_CUDA = 7,
    /// A stream capture was invalidated, left unjoined, or misused.
    GC_ERROR_CAPTURE = 8,
    /// The call is not valid in the object's current state.
    GC_ERROR_INVALID_STATE = 9,
    /// A name (built-in kernel, function of a module) was not found.
    GC_ERROR_NOT_FOUND = 10,
    /// gc_exec_update was given a graph of another topology.
    GC_ERROR_UPDATE_MISMATCH = 11,
    /// A runner was asked for more rows than its largest bucket holds.
    GC_ERROR_NO_BUCKET = 12,
    /// A kernel faulted; the device context is unusable (sticky CUDA error).
    GC_ERROR_DEVICE_FAULT = 13,
    /// A panic inside graphcore was caught; the library is in a safe state.
    GC_ERROR_PANIC = 14,
}

impl gc_status {
    const ALL: [gc_status; 15] = [
        gc_status::GC_SUCCESS,
        gc_status::GC_ERROR_INVALID_ARGUMENT,
        gc_status::GC_ERROR_INVALID_HANDLE,
        gc_status::GC_ERROR_OUT_OF_MEMORY,
        gc_status::GC_ERROR_NO_DRIVER,
        gc_status::GC_ERROR_NO_DEVICE,
        gc_status::GC_ERROR_NOT_SUPPORTED,
        gc_status::GC_ERROR_CUDA,
        gc_status::GC_ERROR_CAPTURE,
        gc_status::GC_ERROR_INVALID_STATE,
        gc_status::GC_ERROR_NOT_FOUND,
        gc_status::GC_ERROR_UPDATE_MISMATCH,
        gc_status::GC_ERROR_NO_BUCKET,
        gc_status::GC_ERROR_DEVICE_FAULT,
        gc_status::GC_ERROR_PANIC,
    ];

    fn name(self) -> &'static std::ffi::CStr {
        match self {
            gc_status::GC_SUCCESS => c"GC_SUCCESS",
            gc_status::GC_ERROR_INVALID_ARGUMENT => c"GC_ERROR_INVALID_ARGUMENT",
            gc_status::GC_ERROR_INVALID_HANDLE => c"GC_ERROR_INVALID_HANDLE",
            gc_status::GC_ERROR_OUT_OF_MEMORY => c"GC_ERROR_OUT_OF_MEMORY",
            gc_status::GC_ERROR_NO_DRIVER => c"GC_ERROR_NO_DRIVER",
            gc_status::GC_ERROR_NO_DEVICE => c"GC_ERROR_NO_DEVICE",
            gc_status::GC_ERROR_NOT_SUPPORTED => c"GC_ERROR_NOT_SUPPORTED",
            gc_status::GC_ERROR_CUDA => c"GC_ERROR_CUDA",
            gc_status::GC_ERROR_CAPTURE => c"GC_ERROR_CAPTURE",
            gc_status::GC_ERROR_INVALID_STATE => c"GC_ERROR_INVALID_STATE",
            gc_status::GC_ERROR_NOT_FOUND => c"GC_ERROR_NOT_FOUND",
            gc_status::GC_ERROR_UPDATE_MISMATCH => c"GC_ERROR_UPDATE_MISMATCH",
            gc_status::GC_ERROR_NO_BUCKET => c"GC_ERROR_NO_BUCKET",
            gc_status::GC_ERROR_DEVICE_FAULT => c"GC_ERROR_DEVICE_FAULT",
            gc_status::GC_ERROR_PANIC => c"GC_ERROR_PANIC",
        }
    }
}

impl From<ErrorKind> for gc_status {
    fn from(k: ErrorKind) -> Self {
        match k {
            ErrorKind::InvalidArgument => gc_status::GC_ERROR_INVALID_ARGUMENT,
            ErrorKind::InvalidHandle => gc_status::GC_ERROR_INVALID_HANDLE,
            ErrorKind::OutOfMemory => gc_status::GC_ERROR_OUT_OF_MEMORY,
            ErrorKind::NoDriver => gc_status::GC_ERROR_NO_DRIVER,
            ErrorKind::NoDevice => gc_status::GC_ERROR_NO_DEVICE,
            ErrorKind::NotSupported => gc_status::GC_ERROR_NOT_SUPPORTED,
            ErrorKind::Cuda => gc_status::GC_ERROR_CUDA,
            ErrorKind::Capture => gc_status::GC_ERROR_CAPTURE,
            ErrorKind::InvalidState => gc_status::GC_ERROR_INVALID_STATE,
            ErrorKind::NotFound => gc_status::GC_ERROR_NOT_FOUND,
            ErrorKind::UpdateMismatch => gc_status::GC_ERROR_UPDATE_MISMATCH,
            ErrorKind::NoBucket => gc_status::GC_ERROR_NO_BUCKET,
            ErrorKind::DeviceFault => gc_status::GC_ERROR_DEVICE_FAULT,
            ErrorKind::Panic => gc_status::GC_ERROR_PANIC,
        }
    }
}

impl gc_status {
    /// The error kind of a failure status (`None` for GC_SUCCESS).
    pub(crate) fn kind(self) -> Option<ErrorKind> {
        Some(match self {
            gc_status::GC_SUCCESS => return None,
            gc_status::GC_ERROR_INVALID_ARGUMENT => ErrorKind::InvalidArgument,
            gc_status::GC_ERROR_INVALID_HANDLE => ErrorKind::InvalidHandle,
            gc_status::GC_ERROR_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
            gc_status::GC_ERROR_NO_DRIVER => ErrorKind::NoDriver,
            gc_status::GC_ERROR_NO_DEVICE => ErrorKind::NoDevice,
            gc_status::GC_ERROR_NOT_SUPPORTED => ErrorKind::NotSupported,
            gc_status::GC_ERROR_CUDA => ErrorKind::Cuda,
            gc_status::GC_ERROR_CAPTURE => ErrorKind::Capture,
            gc_status::GC_ERROR_INVALID_STATE => ErrorKind::InvalidState,
            gc_status::GC_ERROR_NOT_FOUND => ErrorKind::NotFound,
            gc_status::GC_ERROR_UPDATE_MISMATCH => ErrorKind::UpdateMismatch,
            gc_status::GC_ERROR_NO_BUCKET => ErrorKind::NoBucket,
            gc_status::GC_ERROR_DEVICE_FAULT => ErrorKind::DeviceFault,
            gc_status::GC_ERROR_PANIC => ErrorKind::Panic,
        })
    }

    /// The status a C callback returned, as a core result: a failure keeps
    /// this thread's last error message (set by the graphcore call that
    /// failed inside the callback, if any).
    pub(crate) fn into_result(self, what: &str) -> Result<(), Error> {
        match self.kind() {
            None => Ok(()),
            Some(kind) => {
                let last = LAST.with(|l| l.borrow().message.to_string_lossy().into_owned());
                let cuda = LAST.with(|l| l.borrow().cuda);
                let msg = if last.is_empty() {
                    format!("{what} returned {}", self.name().to_string_lossy())
                } else {
                    format!("{what} returned {}: {last}", self.name().to_string_lossy())
                };
                Err(if cuda != 0 {
                    Error::from_cuda(kind, cuda as u32, msg)
                } else {
                    Error::new(kind, msg)
                })
            }
        }
    }
}

struct LastError {
    message: CString,
    cuda: c_int,
}

thread_local! {
    static LAST: RefCell<LastError> = RefCell::new(LastError {
        message: CString::default(),
        cuda: 0,
    });
}

/// Records a failure as this thread's last error (off the success path:
/// out of line, so a successful call's boundary stays a few instructions).
#[cold]
#[inline(never)]
fn set_last(func: &str, e: &Error) {
    let text = format!("{func}: {}", e.message()).replace('\0', " ");
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        l.message = CString::new(text).unwrap_or_default();
        l.cuda = e.cuda_result().map_or(0, |c| c as c_int);
    });
}

/// Runs an export's body: `Ok` is `GC_SUCCESS`; an error sets this thread's
/// last error (prefixed with the function's name) and returns its status; a
/// panic is caught and returned as `GC_ERROR_PANIC`.
pub(crate) fn boundary(func: &str, body: impl FnOnce() -> Result<(), Error>) -> gc_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => gc_status::GC_SUCCESS,
        Ok(Err(e)) => {
            set_last(func, &e);
            e.kind().into()
        }
        Err(payload) => caught_panic(func, payload),
    }
}

/// Records a panic caught at the boundary as this thread's last error.
#[cold]
#[inline(never)]
fn caught_panic(func: &str, payload: Box<dyn std::any::Any + Send>) -> gc_status {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    set_last(
        func,
        &Error::new(ErrorKind::Panic, format!("internal panic caught: {what}")),
    );
    gc_status::GC_ERROR_PANIC
}

/// The name of a status constant ("GC_ERROR_INVALID_ARGUMENT"), or
/// "GC_UNKNOWN_STATUS" for a value that is not a gc_status. The string is
/// static; never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn gc_status_name(status: c_int) -> *const c_char {
    gc_status::ALL
        .iter()
        .find(|s| **s as c_int == status)
        .map_or(c"GC_UNKNOWN_STATUS".as_ptr(), |s| s.name().as_ptr())
}

/// This thread's message for its last failed graphcore call: the function,
/// what was wrong (which argument, which sizes), and for CUDA failures the
/// CUDA error's name and text. Empty if no call has failed on this thread.
/// The string stays valid until the next failing call on this thread.
#[no_mangle]
pub extern "C" fn gc_last_error() -> *const c_char {
    LAST.with(|l| l.borrow().message.as_ptr())
}

/// The raw CUresult behind this thread's last failure (0, CUDA_SUCCESS, when
/// the last failure did not come from CUDA).
#[no_mangle]
pub extern "C" fn gc_last_cuda_result() -> c_int {
    LAST.with(|l| l.borrow().cuda)
}
