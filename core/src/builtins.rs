//! graphcore's own kernels in one context: the modules of
//! `graphcore_kernels::MODULES`, loaded, and one function per entry of
//! [`KERNELS`]. The context owns them (loaded on first use); the modules
//! unload when it drops, and keep the device's primary context retained
//! until they have. A module whose PTX targets a newer GPU than the
//! device's (`ModuleInfo::min_arch`) is not loaded; its kernels are
//! [`ErrorKind::NotSupported`] there. From compute capability 9.0 the
//! modules' `compute_90` variants are loaded, whose kernels wait on
//! programmatic dependencies: with a CUDA 12.3 driver they are launched
//! with programmatic stream serialization unless `GC_PDL=0`
//! ([`set_programmatic_launch`]).

use crate::driver::conditional::{self as dc, CondType};
use crate::driver::owned::{Owned, PrimaryContext, SharedFunction};
use crate::driver::{self, module as dm, CUfunction, CUmodule};
use crate::error::{Error, ErrorKind, Result};
use crate::lock::lock;
use graphcore_kernels::{Kernel, KernelInfo, KERNELS, MODULES, PDL_ARCH};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// The CUDA version from which graphcore launches its kernels with
/// programmatic stream serialization (12.3: captured graphs keep such
/// launches as programmatic edges, which graphcore reads back).
const PDL_DRIVER: i32 = 12030;

/// The process-wide programmatic-launch switch: 0 not read yet, 1 off, 2 on.
static PDL_SWITCH: AtomicU8 = AtomicU8::new(0);

/// Whether graphcore launches its built-in kernels with programmatic stream
/// serialization where the device and driver allow it: the environment
/// variable `GC_PDL` (`0` turns it off; anything else, or unset, leaves it
/// on), read once, unless [`set_programmatic_launch`] said otherwise.
pub fn programmatic_launch() -> bool {
    match PDL_SWITCH.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let on = std::env::var_os("GC_PDL").is_none_or(|v| v != "0");
            // A concurrent set_programmatic_launch wins over the environment.
            let _ = PDL_SWITCH.compare_exchange(
                0,
                1 + u8::from(on),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            PDL_SWITCH.load(Ordering::Relaxed) == 2
        }
    }
}

/// Whether the built-in kernels may be launched programmatically on a GPU
/// of compute capability `arch` (major * 10 + minor) with a driver of CUDA
/// version `driver` (`cuDriverGetVersion`): there the `compute_90` modules
/// load (their kernels wait), and captures keep programmatic edges.
fn programmatic_capable(arch: u32, driver: i32) -> bool {
    arch >= PDL_ARCH && driver >= PDL_DRIVER
}

/// Turns programmatic launches of the built-in kernels on or off for the
/// whole process from now on (overrides `GC_PDL`; for A/B measurements and
/// tests). Launches already made, and graphs already captured, keep theirs.
pub fn set_programmatic_launch(on: bool) {
    PDL_SWITCH.store(1 + u8::from(on), Ordering::Relaxed);
}

/// The built-in kernels of one context: the modules (unloaded when this
/// drops) and one function of theirs per kernel. Modules that call the
/// device runtime are linked and loaded on first use of one of their
/// kernels (only then is CUDA 12.3 and libcudadevrt needed).
pub(crate) struct Builtins {
    ctx: Arc<PrimaryContext>,
    /// The device's compute capability, major * 10 + minor.
    arch: u32,
    /// The loaded kernels wait on programmatic dependencies (the
    /// `compute_90` variants) and the driver is CUDA 12.3 or newer.
    programmatic: bool,
    _modules: Vec<Owned<CUmodule>>,
    /// Per kernel; `None` for kernels of modules not loaded up front.
    functions: Vec<Option<SharedFunction>>,
    /// The device-runtime modules once linked: the module handles and the
    /// functions of their kernels (per kernel).
    linked: Mutex<Option<Linked>>,
}

struct Linked {
    _modules: Vec<Owned<CUmodule>>,
    functions: Vec<Option<SharedFunction>>,
}

impl Builtins {
    /// Loads every built-in module that needs no linking and targets at
    /// most compute capability `cc` (the device's) into `ctx` (current on
    /// this thread).
    pub(crate) fn load(ctx: &Arc<PrimaryContext>, cc: (i32, i32)) -> Result<Builtins> {
        let _relaxed = driver::RelaxedCaptureMode::enter()?;
        let arch = (cc.0.max(0) * 10 + cc.1.max(0)) as u32;
        let mut modules = Vec::with_capacity(MODULES.len());
        for m in MODULES {
            let Some(ptx) = m.ptx_for(arch).filter(|_| !m.device_runtime) else {
                modules.push(None);
                continue;
            };
            let raw = dm::load(ptx.as_bytes())
                .map_err(|e| e.context(&format!("loading built-in module `{}`", m.name)))?;
            modules.push(Some(Owned::new(raw, ctx)));
        }
        let functions = KERNELS
            .iter()
            .map(|k| match &modules[k.module] {
                Some(m) => dm::function(m.raw(), k.name).map(|f| Some(SharedFunction::new(f))),
                None => Ok(None),
            })
            .collect::<Result<_>>()?;
        let programmatic = programmatic_capable(arch, driver::driver_version()?);
        Ok(Builtins {
            ctx: Arc::clone(ctx),
            arch,
            programmatic,
            _modules: modules.into_iter().flatten().collect(),
            functions,
            linked: Mutex::new(None),
        })
    }

    /// The function of `kernel` if its module is loaded already (no driver
    /// call, no lock; `None` for the kernels of the linked device-runtime
    /// modules, and for a kernel this GPU cannot run).
    pub(crate) fn loaded(&self, kernel: Kernel) -> Option<CUfunction> {
        self.functions[kernel.index()].map(|f| f.raw())
    }

    /// The loaded function of `kernel` (linking the device-runtime modules
    /// on first use; the context is current on this thread);
    /// [`ErrorKind::NotSupported`] for a kernel of a module that targets a
    /// newer GPU than this one.
    pub(crate) fn function(&self, kernel: Kernel) -> Result<CUfunction> {
        if let Some(f) = self.loaded(kernel) {
            return Ok(f);
        }
        let module = &MODULES[kernel.info().module];
        if module.min_arch > self.arch {
            return Err(Error::new(
                ErrorKind::NotSupported,
                format!(
                    "built-in kernel `{}` needs a GPU of compute capability {}.{} or later; this \
                     one is {}.{}",
                    kernel.info().name,
                    module.min_arch / 10,
                    module.min_arch % 10,
                    self.arch / 10,
                    self.arch % 10
                ),
            ));
        }
        let mut linked = lock(&self.linked);
        if linked.is_none() {
            *linked = Some(self.link()?);
        }
        let l = linked.as_ref().expect("linked above");
        Ok(l.functions[kernel.index()]
            .expect("every kernel of a linked module has its function")
            .raw())
    }

    /// Whether to launch the built-in kernels with programmatic stream
    /// serialization: the device and driver allow it (every loaded kernel
    /// waits on its programmatic dependencies) and [`programmatic_launch`]
    /// is on.
    pub(crate) fn launch_programmatically(&self) -> bool {
        self.programmatic && programmatic_launch()
    }

    /// Links and loads every device-runtime module.
    fn link(&self) -> Result<Linked> {
        dc::require(CondType::If).map_err(|e| {
            e.context("graphcore's conditional-handle setters call cudaGraphSetConditional")
        })?;
        let devrt = find_devrt()?;
        let _relaxed = driver::RelaxedCaptureMode::enter()?;
        let mut modules = Vec::new();
        let mut functions = vec![None; KERNELS.len()];
        for (i, m) in MODULES.iter().enumerate() {
            if !m.device_runtime {
                continue;
            }
            let Some(ptx) = m.ptx_for(self.arch) else {
                continue;
            };
            let raw = dm::link_with_devrt(ptx.as_bytes(), &devrt)
                .map_err(|e| e.context(&format!("linking built-in module `{}`", m.name)))?;
            let owned = Owned::new(raw, &self.ctx);
            for k in KERNELS.iter().filter(|k| k.module == i) {
                functions[k.kernel.index()] = Some(SharedFunction::new(dm::function(raw, k.name)?));
            }
            modules.push(owned);
        }
        Ok(Linked {
            _modules: modules,
            functions,
        })
    }

    /// The built-in kernel whose loaded function is `raw`, if any.
    pub(crate) fn kernel_of(&self, raw: CUfunction) -> Option<&'static KernelInfo> {
        let find = |fs: &[Option<SharedFunction>]| {
            fs.iter()
                .position(|f| f.is_some_and(|f| f.raw() == raw))
                .map(|i| &KERNELS[i])
        };
        find(&self.functions)
            .or_else(|| lock(&self.linked).as_ref().and_then(|l| find(&l.functions)))
    }
}

/// Where libcudadevrt.a is: `GC_CUDADEVRT` (a file), else
/// `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `/usr/local/cuda/lib64` or
/// `/usr/lib/x86_64-linux-gnu`. It comes with the CUDA toolkit (not with the
/// driver); missing, it is [`ErrorKind::NotSupported`] saying so.
fn find_devrt() -> Result<PathBuf> {
    const NAME: &str = "libcudadevrt.a";
    if let Some(p) = std::env::var_os("GC_CUDADEVRT") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(Error::new(
                ErrorKind::NotSupported,
                format!("GC_CUDADEVRT names {}, which is not a file", p.display()),
            ))
        };
    }
    let mut dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|d| PathBuf::from(d).join("lib64"))
        .collect();
    dirs.push("/usr/local/cuda/lib64".into());
    dirs.push("/usr/local/cuda/targets/x86_64-linux/lib".into());
    dirs.push("/usr/lib/x86_64-linux-gnu".into());
    dirs.iter()
        .map(|d| d.join(NAME))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::new(
            ErrorKind::NotSupported,
            "graphcore's conditional-handle setters call the CUDA device runtime and are linked \
             with libcudadevrt.a, which comes with the CUDA toolkit: none was found (set \
             GC_CUDADEVRT to its path, or CUDA_HOME to the toolkit)",
        )
        })
}

/// The built-in kernel called `name`; [`ErrorKind::NotFound`] if there is
/// none.
pub(crate) fn find(name: &str) -> Result<Kernel> {
    Kernel::from_name(name).ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!("`{name}` is not a built-in kernel of graphcore"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programmatic_launches_need_sm_90_and_cuda_12_3() {
        assert!(programmatic_capable(90, 12030));
        assert!(programmatic_capable(100, 13000));
        assert!(!programmatic_capable(89, 13000));
        assert!(!programmatic_capable(90, 12020));
        // The modules loaded there are the ones that wait.
        for m in MODULES {
            assert_eq!(m.ptx_for(PDL_ARCH), Some(m.ptx_sm90), "{}", m.name);
        }
    }

    #[test]
    fn the_switch_overrides_the_environment() {
        let before = programmatic_launch();
        set_programmatic_launch(false);
        assert!(!programmatic_launch());
        set_programmatic_launch(true);
        assert!(programmatic_launch());
        set_programmatic_launch(before);
    }
}
