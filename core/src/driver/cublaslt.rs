//! cuBLASLt, loaded at run time (never linked, never required): the library
//! is opened with `dlopen` on first use, from `GRAPHCORE_CUBLASLT` when set
//! (a path, or `0` / `off` to never load it) or else from the loader's path
//! as `libcublasLt.so.13`, `libcublasLt.so.12`, `libcublasLt.so`; each
//! entry point it needs is resolved once. The declarations below are the
//! handful of cuBLASLt's C API that graphcore calls (types and enum values
//! from cublasLt.h, CUDA 12.0 and later); the owned descriptors destroy
//! themselves on drop.

use crate::error::{Error, ErrorKind, Result};
use std::ffi::{c_int, c_void, OsStr, OsString};
use std::sync::OnceLock;

/// The environment variable that names the library (or turns it off).
pub(crate) const ENV: &str = "GRAPHCORE_CUBLASLT";

/// The names tried, in order, when `GRAPHCORE_CUBLASLT` is not set.
pub(crate) const DEFAULT_NAMES: [&str; 3] =
    ["libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"];

/// `cublasStatus_t`.
type Status = c_int;
/// `CUBLAS_STATUS_SUCCESS`.
const SUCCESS: Status = 0;
/// `CUBLAS_STATUS_ALLOC_FAILED`.
const ALLOC_FAILED: Status = 3;
/// `CUBLAS_STATUS_NOT_SUPPORTED`.
const NOT_SUPPORTED: Status = 15;

type Handle = *mut c_void;
type Desc = *mut c_void;
type Layout = *mut c_void;
type Pref = *mut c_void;

/// `cudaDataType_t` `CUDA_R_32F`.
pub(crate) const R_32F: c_int = 0;
/// `cublasComputeType_t` `CUBLAS_COMPUTE_32F`.
pub(crate) const COMPUTE_32F: c_int = 68;
/// `cublasComputeType_t` `CUBLAS_COMPUTE_32F_FAST_TF32`.
pub(crate) const COMPUTE_32F_FAST_TF32: c_int = 77;
/// `cublasOperation_t` `CUBLAS_OP_N`.
pub(crate) const OP_N: c_int = 0;
/// `cublasOperation_t` `CUBLAS_OP_T`.
pub(crate) const OP_T: c_int = 1;

/// `cublasLtMatmulDescAttributes_t` values.
pub(crate) mod desc_attr {
    /// `CUBLASLT_MATMUL_DESC_TRANSA` (`int32_t`).
    pub(crate) const TRANSA: i32 = 3;
    /// `CUBLASLT_MATMUL_DESC_TRANSB` (`int32_t`).
    pub(crate) const TRANSB: i32 = 4;
    /// `CUBLASLT_MATMUL_DESC_EPILOGUE` (`uint32_t`).
    pub(crate) const EPILOGUE: i32 = 7;
    /// `CUBLASLT_MATMUL_DESC_BIAS_POINTER` (`void *`).
    pub(crate) const BIAS_POINTER: i32 = 8;
}

/// `cublasLtEpilogue_t` values.
pub(crate) mod epilogue {
    /// `CUBLASLT_EPILOGUE_DEFAULT`: none.
    pub(crate) const DEFAULT: u32 = 1;
    /// `CUBLASLT_EPILOGUE_RELU`.
    pub(crate) const RELU: u32 = 2;
    /// `CUBLASLT_EPILOGUE_BIAS`: a bias per row of D (column-major).
    pub(crate) const BIAS: u32 = 4;
    /// `CUBLASLT_EPILOGUE_RELU_BIAS`: the bias, then ReLU.
    pub(crate) const RELU_BIAS: u32 = 6;
    /// `CUBLASLT_EPILOGUE_BGRADB`: the bias gradient of B (a sum over the
    /// GEMM's k dimension, one per column of D) stored in the bias buffer.
    pub(crate) const BGRADB: u32 = 512;
}

/// `cublasLtMatmulPreferenceAttributes_t` values.
pub(crate) mod pref_attr {
    /// `CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES` (`uint64_t`).
    pub(crate) const MAX_WORKSPACE_BYTES: i32 = 1;
    /// `CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES` (`uint32_t`); B, C, D follow.
    pub(crate) const MIN_ALIGNMENT_A_BYTES: i32 = 5;
}

/// `cublasLtMatmulAlgo_t`: opaque, 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Algo {
    data: [u64; 8],
}

/// `cublasLtMatmulHeuristicResult_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct HeuristicResult {
    algo: Algo,
    workspace_size: usize,
    state: Status,
    waves_count: f32,
    reserved: [c_int; 4],
}

/// The entry points, resolved once from the opened library (which stays
/// open for the life of the process).
struct Api {
    _lib: libloading::Library,
    version: usize,
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    desc_create: unsafe extern "C" fn(*mut Desc, c_int, c_int) -> Status,
    desc_destroy: unsafe extern "C" fn(Desc) -> Status,
    desc_set: unsafe extern "C" fn(Desc, c_int, *const c_void, usize) -> Status,
    layout_create: unsafe extern "C" fn(*mut Layout, c_int, u64, u64, i64) -> Status,
    layout_destroy: unsafe extern "C" fn(Layout) -> Status,
    pref_create: unsafe extern "C" fn(*mut Pref) -> Status,
    pref_destroy: unsafe extern "C" fn(Pref) -> Status,
    pref_set: unsafe extern "C" fn(Pref, c_int, *const c_void, usize) -> Status,
    #[allow(clippy::type_complexity)]
    heuristic: unsafe extern "C" fn(
        Handle,
        Desc,
        Layout,
        Layout,
        Layout,
        Layout,
        Pref,
        c_int,
        *mut HeuristicResult,
        *mut c_int,
    ) -> Status,
    #[allow(clippy::type_complexity)]
    matmul: unsafe extern "C" fn(
        Handle,
        Desc,
        *const c_void,
        *const c_void,
        Layout,
        *const c_void,
        Layout,
        *const c_void,
        *const c_void,
        Layout,
        *mut c_void,
        Layout,
        *const Algo,
        *mut c_void,
        usize,
        *mut c_void,
    ) -> Status,
}

/// Where to look for the library given `GRAPHCORE_CUBLASLT`'s value (pure):
/// unset or empty, the default names; `0` or `off`, nowhere (an error
/// saying so); anything else, that path only (so a wrong path means no
/// cuBLASLt, never another one).
pub(crate) fn candidates(env: Option<&OsStr>) -> Result<Vec<OsString>> {
    match env {
        None => Ok(DEFAULT_NAMES.iter().map(OsString::from).collect()),
        Some(v) if v.is_empty() => Ok(DEFAULT_NAMES.iter().map(OsString::from).collect()),
        Some(v) if v == "0" || v.eq_ignore_ascii_case("off") => Err(Error::new(
            ErrorKind::NotSupported,
            format!("cuBLASLt is turned off ({ENV}={})", v.to_string_lossy()),
        )),
        Some(v) => Ok(vec![v.to_os_string()]),
    }
}

/// Opens the first of `names` that loads and resolves every entry point.
fn open(names: &[OsString]) -> Result<Api> {
    let mut tried = Vec::new();
    for name in names {
        // SAFETY: loading cuBLASLt runs its initializers, which have no
        // preconditions; the library is kept open while `Api` lives.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return resolve(lib, name),
            Err(e) => tried.push(format!("{}: {e}", name.to_string_lossy())),
        }
    }
    Err(Error::new(
        ErrorKind::NotSupported,
        format!("cuBLASLt could not be loaded ({})", tried.join("; ")),
    ))
}

/// Resolves the entry points of an opened cuBLASLt.
fn resolve(lib: libloading::Library, name: &OsStr) -> Result<Api> {
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is cuBLASLt's function of that name, whose C
            // signature the field's type declares (cublasLt.h); the pointer
            // stays valid while `lib` is open, which `Api` keeps.
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| {
                Error::new(
                    ErrorKind::NotSupported,
                    format!(
                        "{} has no {} ({e}): not a usable cuBLASLt",
                        name.to_string_lossy(),
                        $name
                    ),
                )
            })?
        };
    }
    let get_version: unsafe extern "C" fn() -> usize = sym!("cublasLtGetVersion");
    // SAFETY: cublasLtGetVersion takes nothing and returns a number.
    let version = unsafe { get_version() };
    Ok(Api {
        version,
        create: sym!("cublasLtCreate"),
        desc_create: sym!("cublasLtMatmulDescCreate"),
        desc_destroy: sym!("cublasLtMatmulDescDestroy"),
        desc_set: sym!("cublasLtMatmulDescSetAttribute"),
        layout_create: sym!("cublasLtMatrixLayoutCreate"),
        layout_destroy: sym!("cublasLtMatrixLayoutDestroy"),
        pref_create: sym!("cublasLtMatmulPreferenceCreate"),
        pref_destroy: sym!("cublasLtMatmulPreferenceDestroy"),
        pref_set: sym!("cublasLtMatmulPreferenceSetAttribute"),
        heuristic: sym!("cublasLtMatmulAlgoGetHeuristic"),
        matmul: sym!("cublasLtMatmul"),
        _lib: lib,
    })
}

/// The loaded library: its entry points (opening it creates nothing on a
/// device; handles are made per device with [`Lt::create_handle`]).
pub(crate) struct Lt {
    api: Api,
}

// SAFETY: the function pointers and the library are immutable after
// loading.
unsafe impl Send for Lt {}
// SAFETY: as above.
unsafe impl Sync for Lt {}

/// A cuBLASLt handle, made in one device's context and used for that
/// device only; kept for the process (never destroyed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LtHandle(Handle);

// SAFETY: cuBLASLt handles may be used from several threads at once.
unsafe impl Send for LtHandle {}
// SAFETY: as above.
unsafe impl Sync for LtHandle {}

/// The process's cuBLASLt, loaded on first call (the outcome, success or
/// the reason for failure, is kept for the process: setting
/// `GRAPHCORE_CUBLASLT` later changes nothing).
pub(crate) fn library() -> Result<&'static Lt> {
    loaded_library().as_ref().map_err(Clone::clone)
}

/// Whether [`library`] loads (without cloning its error).
pub(crate) fn library_loaded() -> bool {
    loaded_library().is_ok()
}

/// The outcome of loading, made once.
fn loaded_library() -> &'static Result<Lt> {
    static LT: OnceLock<Result<Lt>> = OnceLock::new();
    LT.get_or_init(|| {
        let names = candidates(std::env::var_os(ENV).as_deref())?;
        Ok(Lt { api: open(&names)? })
    })
}

/// A cuBLASLt status as an [`Error`] naming `call`.
fn check(status: Status, call: &str) -> Result<()> {
    if status == SUCCESS {
        return Ok(());
    }
    let kind = match status {
        ALLOC_FAILED => ErrorKind::OutOfMemory,
        NOT_SUPPORTED => ErrorKind::NotSupported,
        _ => ErrorKind::Cuda,
    };
    Err(Error::new(
        kind,
        format!("{call} failed: cublasStatus_t {status}"),
    ))
}

/// A matmul descriptor, destroyed on drop.
pub(crate) struct MatmulDesc(&'static Lt, Desc);
/// A matrix layout, destroyed on drop.
pub(crate) struct MatrixLayout(&'static Lt, Layout);

impl Drop for MatmulDesc {
    fn drop(&mut self) {
        // SAFETY: created by `matmul_desc`, destroyed once.
        unsafe { (self.0.api.desc_destroy)(self.1) };
    }
}

impl Drop for MatrixLayout {
    fn drop(&mut self) {
        // SAFETY: created by `layout`, destroyed once.
        unsafe { (self.0.api.layout_destroy)(self.1) };
    }
}

// SAFETY: descriptors are plain host memory; graphcore sets their
// attributes only while holding the plan's lock.
unsafe impl Send for MatmulDesc {}
// SAFETY: as above.
unsafe impl Sync for MatmulDesc {}
// SAFETY: layouts are plain host memory, never changed after creation.
unsafe impl Send for MatrixLayout {}
// SAFETY: as above.
unsafe impl Sync for MatrixLayout {}

impl Lt {
    /// A new handle (`cublasLtCreate`, which may set up resources on the
    /// current context's device: call it with the device's context current,
    /// in relaxed capture mode while a capture may be open).
    pub(crate) fn create_handle(&self) -> Result<LtHandle> {
        let mut handle = std::ptr::null_mut();
        // SAFETY: writes one handle.
        check(unsafe { (self.api.create)(&mut handle) }, "cublasLtCreate")?;
        Ok(LtHandle(handle))
    }

    /// `cublasLtGetVersion()` (12xxyy for 12.xx.yy).
    pub(crate) fn version(&self) -> usize {
        self.api.version
    }

    /// A matmul descriptor computing in `compute` with f32 scales, with the
    /// transposes and epilogue given.
    pub(crate) fn matmul_desc(
        &'static self,
        compute: c_int,
        trans_a: c_int,
        trans_b: c_int,
        epilogue: u32,
    ) -> Result<MatmulDesc> {
        let mut d = std::ptr::null_mut();
        check(
            // SAFETY: writes one descriptor.
            unsafe { (self.api.desc_create)(&mut d, compute, R_32F) },
            "cublasLtMatmulDescCreate",
        )?;
        let desc = MatmulDesc(self, d);
        self.set(&desc, desc_attr::TRANSA, &trans_a)?;
        self.set(&desc, desc_attr::TRANSB, &trans_b)?;
        self.set(&desc, desc_attr::EPILOGUE, &epilogue)?;
        Ok(desc)
    }

    /// Sets attribute `attr` of `desc` to `value` (its C type's size).
    pub(crate) fn set<T: Copy>(&self, desc: &MatmulDesc, attr: i32, value: &T) -> Result<()> {
        // SAFETY: `value` is `size_of::<T>()` readable bytes, the attribute's
        // C type by the caller's choice of T (callers pass the types listed
        // in `desc_attr`).
        check(
            unsafe {
                (self.api.desc_set)(
                    desc.1,
                    attr,
                    (value as *const T).cast(),
                    std::mem::size_of::<T>(),
                )
            },
            "cublasLtMatmulDescSetAttribute",
        )
    }

    /// A column-major f32 layout of `rows x cols` with leading dimension `ld`.
    pub(crate) fn layout(&'static self, rows: u64, cols: u64, ld: i64) -> Result<MatrixLayout> {
        let mut l = std::ptr::null_mut();
        check(
            // SAFETY: writes one layout.
            unsafe { (self.api.layout_create)(&mut l, R_32F, rows, cols, ld) },
            "cublasLtMatrixLayoutCreate",
        )?;
        Ok(MatrixLayout(self, l))
    }

    /// The heuristic's best algorithm for `desc` over layouts `a`, `b`,
    /// `c` (also D) with at most `workspace` bytes of workspace and every
    /// pointer aligned to `align` bytes; `None` when cuBLASLt has none.
    /// Host work only: nothing is enqueued.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn best_algo(
        &'static self,
        handle: LtHandle,
        desc: &MatmulDesc,
        a: &MatrixLayout,
        b: &MatrixLayout,
        c: &MatrixLayout,
        workspace: u64,
        align: u32,
    ) -> Result<Option<Algo>> {
        let mut pref = std::ptr::null_mut();
        check(
            // SAFETY: writes one preference.
            unsafe { (self.api.pref_create)(&mut pref) },
            "cublasLtMatmulPreferenceCreate",
        )?;
        struct PrefGuard(&'static Api, Pref);
        impl Drop for PrefGuard {
            fn drop(&mut self) {
                // SAFETY: created above, destroyed once.
                unsafe { (self.0.pref_destroy)(self.1) };
            }
        }
        let _guard = PrefGuard(&self.api, pref);
        let set = |attr: i32, v: *const c_void, size: usize| {
            // SAFETY: `v` is `size` readable bytes of the attribute's C type.
            check(
                unsafe { (self.api.pref_set)(pref, attr, v, size) },
                "cublasLtMatmulPreferenceSetAttribute",
            )
        };
        set(
            pref_attr::MAX_WORKSPACE_BYTES,
            (&workspace as *const u64).cast(),
            8,
        )?;
        for i in 0..4 {
            set(
                pref_attr::MIN_ALIGNMENT_A_BYTES + i,
                (&align as *const u32).cast(),
                4,
            )?;
        }
        let mut result = HeuristicResult::default();
        let mut count: c_int = 0;
        // SAFETY: every descriptor is live; writes at most one result.
        let st = unsafe {
            (self.api.heuristic)(
                handle.0,
                desc.1,
                a.1,
                b.1,
                c.1,
                c.1,
                pref,
                1,
                &mut result,
                &mut count,
            )
        };
        if st == NOT_SUPPORTED || (st == SUCCESS && count == 0) {
            return Ok(None);
        }
        check(st, "cublasLtMatmulAlgoGetHeuristic")?;
        Ok(Some(result.algo))
    }

    /// `D = alpha * op(A) op(B) + beta * C` with `D` = `C` (in place), as
    /// `desc` says, enqueued on `stream` (`alpha` and `beta` read during
    /// the call: a capture records their values).
    ///
    /// # Safety
    ///
    /// The pointers are device memory of the stream's (current) context
    /// holding the layouts' elements, alive until the work has run (or, for
    /// a captured stream, while its graph may run); `algo` came from
    /// [`best_algo`](Self::best_algo) for these descriptors with no
    /// workspace; `handle` was made in the stream's context; no other
    /// thread changes `desc` during the call.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn matmul(
        &self,
        handle: LtHandle,
        desc: &MatmulDesc,
        a: (u64, &MatrixLayout),
        b: (u64, &MatrixLayout),
        c: (u64, &MatrixLayout),
        (alpha, beta): (f32, f32),
        algo: &Algo,
        stream: super::CUstream,
    ) -> Result<()> {
        // SAFETY: by this function's contract; alpha and beta are host
        // scalars (the default pointer mode), read during the call.
        check(
            unsafe {
                (self.api.matmul)(
                    handle.0,
                    desc.1,
                    (&alpha as *const f32).cast(),
                    a.0 as *const c_void,
                    a.1 .1,
                    b.0 as *const c_void,
                    b.1 .1,
                    (&beta as *const f32).cast(),
                    c.0 as *const c_void,
                    c.1 .1,
                    c.0 as *mut c_void,
                    c.1 .1,
                    algo,
                    std::ptr::null_mut(),
                    0,
                    stream.cast(),
                )
            },
            "cublasLtMatmul",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_variable_picks_the_library_or_none() {
        let defaults: Vec<OsString> = DEFAULT_NAMES.iter().map(OsString::from).collect();
        assert_eq!(candidates(None).unwrap(), defaults);
        assert_eq!(candidates(Some(OsStr::new(""))).unwrap(), defaults);
        assert_eq!(
            candidates(Some(OsStr::new("/opt/x/libcublasLt.so.12"))).unwrap(),
            vec![OsString::from("/opt/x/libcublasLt.so.12")]
        );
        for off in ["0", "off", "OFF"] {
            let e = candidates(Some(OsStr::new(off))).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported);
            assert!(e.message().contains("turned off"), "{}", e.message());
        }
    }

    #[test]
    fn a_missing_library_is_not_supported_and_names_what_was_tried() {
        let e = open(&[OsString::from("/nonexistent/libcublasLt.so.12")])
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::NotSupported);
        assert!(
            e.message().contains("/nonexistent/libcublasLt.so.12"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn a_library_without_the_entry_points_is_refused() {
        // libc loads everywhere and has no cuBLASLt symbol.
        let e = open(&[OsString::from("libc.so.6")]).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::NotSupported);
        assert!(
            e.message().contains("cublasLtGetVersion"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn statuses_map_to_kinds() {
        check(SUCCESS, "x").unwrap();
        assert_eq!(
            check(NOT_SUPPORTED, "x").unwrap_err().kind(),
            ErrorKind::NotSupported
        );
        assert_eq!(
            check(ALLOC_FAILED, "x").unwrap_err().kind(),
            ErrorKind::OutOfMemory
        );
        assert_eq!(check(7, "x").unwrap_err().kind(), ErrorKind::Cuda);
    }

    #[test]
    fn the_structs_have_cublaslt_sizes() {
        assert_eq!(std::mem::size_of::<Algo>(), 64);
        // algo, size_t, int, float, int[4].
        assert_eq!(std::mem::size_of::<HeuristicResult>(), 64 + 8 + 4 + 4 + 16);
    }
}
