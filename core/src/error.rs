//! Errors: one kind per C status, a message that says what went wrong and
//! with which argument, and the raw CUDA result where CUDA failed.

use std::fmt;

/// What kind of failure an [`Error`] is. Each kind is one `gc_status` of the
/// C API (the values there are stable; these names mirror them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An argument was NULL, zero, too large, misaligned or inconsistent.
    InvalidArgument,
    /// A handle was destroyed, of another kind, or never valid.
    InvalidHandle,
    /// Device (or pinned host) memory ran out, or a pool reached `max_bytes`.
    OutOfMemory,
    /// No CUDA driver (libcuda) could be loaded.
    NoDriver,
    /// The driver loaded but there is no usable device (or no such ordinal).
    NoDevice,
    /// The driver or device lacks a feature this call needs.
    NotSupported,
    /// A CUDA call failed; the raw `CUresult` is attached.
    Cuda,
    /// A stream capture was invalidated, unjoined, or misused.
    Capture,
    /// The call is not valid in the object's current state.
    InvalidState,
    /// A name (built-in kernel, function in a module) was not found.
    NotFound,
    /// An exec update was given a graph of another topology.
    UpdateMismatch,
    /// A runner was asked for more rows than its largest bucket holds.
    NoBucket,
    /// A kernel faulted: the context is unusable (sticky CUDA error).
    DeviceFault,
    /// A panic inside the library was caught at the boundary.
    Panic,
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
