//! Status codes. Every fallible call returns a gc_status; results go
//! through out-parameters, written only on success. gc_last_error() gives
//! the calling thread's message for its last failure (which call, which
//! argument, the CUDA error's name and text), gc_last_cuda_result() the
//! CUresult behind it.
//!
//! Errors lists: each function's doc has a paragraph starting with
//! `Errors:` naming the statuses it returns besides GC_SUCCESS, each with
//! when. One status is left out of those lists because any call may return
//! it: GC_ERROR_PANIC, a bug inside graphcore caught at the boundary (please
//! report it; the library stays usable).
//!
//! Common errors: a list that starts with `common` ("Errors: common, and
//! ...") also holds these, written once here instead of in every function:
//! GC_ERROR_INVALID_ARGUMENT (a handle is NULL, or a pointer argument that
//! the function's doc does not allow to be NULL; or two handles are of
//! different contexts), GC_ERROR_INVALID_HANDLE (a handle was destroyed, is
//! of another kind, or was never valid), GC_ERROR_CUDA (a driver call
//! failed; gc_last_cuda_result() gives its CUresult), GC_ERROR_DEVICE_FAULT
//! (work on the device faulted, now or before: see below). A section whose
//! banner has a `Common errors:` paragraph of its own (the built-in ops, in
//! graphcore_ops.h) means that one instead. A list that does not start
//! with `common` is complete as written.
//!
//! Which error wins when two apply: a call stops at its first failing check
//! and returns that status. It first checks what needs no object: NULL
//! pointers, unknown flags, values wrong in themselves (a size of 0, an
//! unknown type) and its handles (destroyed, of another kind):
//! GC_ERROR_INVALID_ARGUMENT or GC_ERROR_INVALID_HANDLE, in no promised
//! order among them. Only then come the checks that need the
//! objects or the driver (handles of one context, a node of the graph, a
//! range against its memory, the objects' state, the driver's version and
//! its own refusals), in the order the work meets them. So a bad pointer,
//! flag or handle is always reported before GC_ERROR_INVALID_STATE,
//! GC_ERROR_NOT_SUPPORTED, GC_ERROR_CAPTURE, GC_ERROR_OUT_OF_MEMORY or
//! GC_ERROR_CUDA.
//!
//! Wrong `struct_size`: an option or result struct whose struct_size is
//! smaller than the struct's first version, or more than 4096 bytes larger
//! than this library's struct, is GC_ERROR_INVALID_ARGUMENT and nothing is
//! read or written. A larger struct from a newer header is accepted when
//! the bytes this library does not know are zero (options) and gets only
//! the fields it knows written (results).
//!
//! After GC_ERROR_DEVICE_FAULT (a kernel faulted: illegal address, trap,
//! misaligned access, ...): CUDA makes the error sticky. The device's
//! primary context, which graphcore shares with the CUDA runtime in the
//! process, is unusable, and every later call that reaches it returns
//! GC_ERROR_DEVICE_FAULT again. graphcore cannot repair this: it does not
//! reset the primary context (that would pull memory, streams and modules
//! from under every other user of it in the process), and
//! gc_context_create on that device returns the same broken context while
//! any graphcore object of the device is alive. What to do: stop
//! submitting work, destroy the graphcore objects of that device (destroys
//! neither hang nor crash; they may report the fault), and restart the
//! process: CUDA documents that after a sticky error the process must be
//! relaunched to use CUDA again.
//!
//! Thread safety: all calls of this section may run concurrently from any
//! threads; the last error is per thread.

use graphcore_core::{Error, ErrorKind};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

// BEGIN generated statuses: from core/src/error.rs's one status list, by
// tests/header.rs (`make header`); do not edit.

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
    /// The driver loaded but the machine has no CUDA device. (A device
    /// ordinal out of range is GC_ERROR_INVALID_ARGUMENT.)
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
    /// gc_exec_update was given a graph of another topology, or an update
    /// or gc_exec_set_kernel_args would change a fused chain.
    GC_ERROR_UPDATE_MISMATCH = 11,
    /// A runner was asked for more rows than its largest bucket holds, or
    /// has no bucket yet.
    GC_ERROR_NO_BUCKET = 12,
    /// A kernel faulted; the device context is unusable (sticky CUDA error):
    /// see "After GC_ERROR_DEVICE_FAULT" in the status section.
    GC_ERROR_DEVICE_FAULT = 13,
    /// A panic inside graphcore was caught; the library is in a safe state.
    GC_ERROR_PANIC = 14,
}

impl From<ErrorKind> for gc_status {
    /// The status of the same value.
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
// END generated statuses

/// The name of status value `status`, if it is one.
fn status_name(status: c_int) -> Option<&'static CStr> {
    match status {
        0 => Some(c"GC_SUCCESS"),
        v => ErrorKind::from_status(v).map(ErrorKind::status_name),
    }
}

impl gc_status {
    /// The error kind of a failure status (`None` for GC_SUCCESS): the kind
    /// with the same value.
    pub(crate) fn kind(self) -> Option<ErrorKind> {
        ErrorKind::from_status(self as i32)
    }

    /// The constant's name, as core names the kinds.
    fn name(self) -> &'static CStr {
        status_name(self as c_int).unwrap_or(c"GC_UNKNOWN_STATUS")
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
/// static; never free it.
/// Errors: none.
#[no_mangle]
pub extern "C" fn gc_status_name(status: c_int) -> *const c_char {
    status_name(status).map_or(c"GC_UNKNOWN_STATUS".as_ptr(), CStr::as_ptr)
}

/// This thread's message for its last failed graphcore call: the function,
/// what was wrong (which argument, which sizes), and for CUDA failures the
/// CUDA error's name and text. Empty if no call has failed on this thread.
/// The string belongs to graphcore and stays valid until the next failing
/// call on this thread; never free it. A successful call leaves it as it was.
/// Errors: none.
#[no_mangle]
pub extern "C" fn gc_last_error() -> *const c_char {
    LAST.with(|l| l.borrow().message.as_ptr())
}

/// The raw CUresult behind this thread's last failure (0, CUDA_SUCCESS, when
/// the last failure did not come from CUDA).
/// Errors: none.
#[no_mangle]
pub extern "C" fn gc_last_cuda_result() -> c_int {
    LAST.with(|l| l.borrow().cuda)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `gc_status` enum as written in this file (what cbindgen reads):
    /// each constant's name and value.
    fn c_enum() -> Vec<(String, i32)> {
        let src = include_str!("status.rs");
        let body = &src[src.find("pub enum gc_status {").unwrap()..];
        let body = &body[..body.find('}').unwrap()];
        body.lines()
            .filter_map(|l| l.trim().strip_suffix(','))
            .filter_map(|l| l.split_once(" = "))
            .map(|(n, v)| (n.to_string(), v.parse().unwrap()))
            .collect()
    }

    #[test]
    fn the_c_enum_and_error_kind_agree_on_every_value_and_name() {
        let c = c_enum();
        assert_eq!(c.len(), ErrorKind::ALL.len() + 1, "{c:?}");
        assert_eq!(c[0], ("GC_SUCCESS".to_string(), 0));
        for (name, value) in &c[1..] {
            let k = ErrorKind::from_status(*value)
                .unwrap_or_else(|| panic!("{name} = {value} is no ErrorKind"));
            assert_eq!(k.status_name().to_str().unwrap(), name);
            let s = gc_status::from(k);
            assert_eq!(s as i32, *value);
            assert_eq!(s.kind(), Some(k));
            assert_eq!(s.name().to_str().unwrap(), name);
        }
        assert_eq!(gc_status::GC_SUCCESS.kind(), None);
    }

    #[test]
    fn status_names_come_from_core() {
        let name = |v| {
            // SAFETY: gc_status_name returns a static NUL-terminated string.
            let s = unsafe { CStr::from_ptr(gc_status_name(v)) };
            s.to_str().unwrap()
        };
        assert_eq!(name(0), "GC_SUCCESS");
        assert_eq!(name(8), "GC_ERROR_CAPTURE");
        assert_eq!(name(14), "GC_ERROR_PANIC");
        assert_eq!(name(15), "GC_UNKNOWN_STATUS");
        assert_eq!(name(-1), "GC_UNKNOWN_STATUS");
    }
}
