//! Errors: one kind per C status, a message that says what went wrong and
//! with which argument, and the raw CUDA result where CUDA failed.

use std::ffi::CStr;
use std::fmt;

/// Declares [`ErrorKind`] from one list: each kind with its stable
/// `gc_status` value, the C constant's name and its documentation;
/// [`ErrorKind::ALL`], [`ErrorKind::status_name`] and [`ErrorKind::doc`]
/// come from the same list.
macro_rules! error_kinds {
    ($($(#[doc = $doc:literal])* $kind:ident = $value:literal, $name:literal;)*) => {
        /// What kind of failure an [`Error`] is. Each kind is one `gc_status`
        /// of the C API, with the same stable value (`kind as i32`); new kinds
        /// are only ever added, never renumbered.
        #[repr(i32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $($(#[doc = $doc])* $kind = $value,)*
        }

        impl ErrorKind {
            /// Every kind, in the order of their values.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind),*];

            /// The name of the kind's `gc_status` constant
            /// (`"GC_ERROR_INVALID_ARGUMENT"`).
            pub const fn status_name(self) -> &'static CStr {
                match self {
                    $(ErrorKind::$kind => $name,)*
                }
            }

            /// The kind's documentation, as the list declares it (one line
            /// of text per doc line): what the C header says of its status.
            pub const fn doc(self) -> &'static str {
                match self {
                    $(ErrorKind::$kind => concat!($($doc, "\n"),*),)*
                }
            }
        }
    };
}

// The one list of graphcore's statuses (besides GC_SUCCESS, 0): each
// failure kind with its gc_status value (stable: never renumbered, new ones
// only added at the end), its C name and its documentation. Everything
// else comes from it: ErrorKind here; the C enum gc_status and its mapping
// from ErrorKind (ffi/src/status.rs's generated block, and so the header's
// enum, its docs and gc_status_name); the Python table STATUS_NAMES
// (python/graphcore/errors.py's generated block). tests/header.rs
// regenerates those blocks (`make header` rewrites them) and checks that
// python/graphcore/errors.py has one exception class per kind (the kind's
// name + "Error", with its value as `code`).
error_kinds! {
    /// An argument was NULL, zero, too large, misaligned or inconsistent.
    InvalidArgument = 1, c"GC_ERROR_INVALID_ARGUMENT";
    /// A handle was destroyed, is of another kind, or was never valid.
    InvalidHandle = 2, c"GC_ERROR_INVALID_HANDLE";
    /// Device or pinned host memory ran out, or a pool reached its max_bytes.
    OutOfMemory = 3, c"GC_ERROR_OUT_OF_MEMORY";
    /// No CUDA driver (libcuda.so) could be loaded on this machine.
    NoDriver = 4, c"GC_ERROR_NO_DRIVER";
    /// The driver loaded but the machine has no CUDA device. (A device
    /// ordinal out of range is GC_ERROR_INVALID_ARGUMENT.)
    NoDevice = 5, c"GC_ERROR_NO_DEVICE";
    /// The driver or the device lacks a feature this call needs.
    NotSupported = 6, c"GC_ERROR_NOT_SUPPORTED";
    /// A CUDA call failed; gc_last_cuda_result() gives its CUresult.
    Cuda = 7, c"GC_ERROR_CUDA";
    /// A stream capture was invalidated, left unjoined, or misused.
    Capture = 8, c"GC_ERROR_CAPTURE";
    /// The call is not valid in the object's current state.
    InvalidState = 9, c"GC_ERROR_INVALID_STATE";
    /// A name (built-in kernel, function of a module) was not found.
    NotFound = 10, c"GC_ERROR_NOT_FOUND";
    /// gc_exec_update was given a graph of another topology, or an update
    /// or gc_exec_set_kernel_args would change a fused chain.
    UpdateMismatch = 11, c"GC_ERROR_UPDATE_MISMATCH";
    /// A runner was asked for more rows than its largest bucket holds, or
    /// has no bucket yet.
    NoBucket = 12, c"GC_ERROR_NO_BUCKET";
    /// A kernel faulted; the device context is unusable (sticky CUDA error):
    /// see "After GC_ERROR_DEVICE_FAULT" in the status section.
    DeviceFault = 13, c"GC_ERROR_DEVICE_FAULT";
    /// A panic inside graphcore was caught; the library is in a safe state.
    Panic = 14, c"GC_ERROR_PANIC";
}

impl ErrorKind {
    /// The kind whose `gc_status` value is `status` (`None` for
    /// `GC_SUCCESS`, 0, and for values that are no status).
    pub fn from_status(status: i32) -> Option<ErrorKind> {
        ErrorKind::ALL.iter().copied().find(|k| *k as i32 == status)
    }
}

/// An error: its kind, a message for people, and the CUDA result behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    cuda: Option<u32>,
}

/// Result with graphcore's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            cuda: None,
        }
    }

    /// An [`ErrorKind::InvalidArgument`] error.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// An [`ErrorKind::InvalidState`] error.
    pub fn invalid_state(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidState, message)
    }

    /// An error caused by CUDA result `code`.
    pub fn from_cuda(kind: ErrorKind, code: u32, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            cuda: Some(code),
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message (what failed, which argument, the CUDA error if any).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The raw `CUresult` behind the error, if CUDA reported one.
    pub fn cuda_result(&self) -> Option<u32> {
        self.cuda
    }

    /// The same error with `context` put in front of the message.
    pub fn context(mut self, context: &str) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<graphcore_kernels::SizeError> for Error {
    /// A built-in operation's refused sizes or pointers: InvalidArgument.
    fn from(e: graphcore_kernels::SizeError) -> Self {
        Error::invalid_argument(e.to_string())
    }
}

/// Returns an [`ErrorKind::InvalidArgument`] error unless `cond` holds.
macro_rules! ensure_arg {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::error::Error::invalid_argument(format!($($fmt)+)));
        }
    };
}
pub(crate) use ensure_arg;

#[cfg(test)]
mod tests {
    use super::ErrorKind;

    #[test]
    fn kinds_are_numbered_one_by_one_and_named_by_their_status() {
        for (i, k) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(*k as i32, i as i32 + 1, "{k:?}");
            assert_eq!(ErrorKind::from_status(*k as i32), Some(*k));
            let name = k.status_name().to_str().unwrap();
            assert!(name.starts_with("GC_ERROR_"), "{name}");
        }
        assert_eq!(ErrorKind::from_status(0), None);
        assert_eq!(
            ErrorKind::from_status(ErrorKind::ALL.len() as i32 + 1),
            None
        );
    }

    #[test]
    fn every_kind_is_documented() {
        for k in ErrorKind::ALL {
            assert!(k.doc().trim().len() > 10, "{k:?}: {:?}", k.doc());
            assert!(k.doc().ends_with('\n'), "{k:?}");
        }
    }
}
