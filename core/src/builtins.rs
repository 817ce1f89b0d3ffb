//! graphcore's own kernels in one context: the modules of
//! `graphcore_kernels::MODULES`, loaded, and one function per entry of
//! [`KERNELS`]. The context owns them (loaded on first use) and unloads them
//! in its Drop, before it releases the device's primary context.

use crate::driver::{self, module as dm, CUfunction, CUmodule};
use crate::error::{Error, ErrorKind, Result};
use graphcore_kernels::{KernelInfo, KERNELS, MODULES};

/// The built-in kernels of one context.
pub(crate) struct Builtins {
    modules: Vec<CUmodule>,
    functions: Vec<CUfunction>,
}

// SAFETY: CUDA module and function handles may be used from any thread;
// these are only passed to the driver, and never change after `load`.
unsafe impl Send for Builtins {}
// SAFETY: as above (immutable after creation).
unsafe impl Sync for Builtins {}

impl Drop for Builtins {
    fn drop(&mut self) {
        for &m in &self.modules {
            dm::unload(m);
        }
    }
}

impl Builtins {
    /// Loads every built-in module into the current context.
    pub(crate) fn load() -> Result<Builtins> {
        let _relaxed = driver::RelaxedCaptureMode::enter()?;
        let mut b = Builtins {
            modules: Vec::with_capacity(MODULES.len()),
            functions: Vec::with_capacity(KERNELS.len()),
        };
        for m in MODULES {
            let raw = dm::load(m.ptx.as_bytes())
                .map_err(|e| e.context(&format!("loading built-in module `{}`", m.name)))?;
            b.modules.push(raw);
        }
        for k in KERNELS {
            b.functions.push(dm::function(b.modules[k.module], k.name)?);
        }
        Ok(b)
    }

    /// The loaded function of `kernel`.
    pub(crate) fn function(&self, kernel: &'static KernelInfo) -> CUfunction {
        self.functions[index_of(kernel)]
    }

    /// The built-in kernel whose loaded function is `raw`, if any.
    pub(crate) fn kernel_of(&self, raw: CUfunction) -> Option<&'static KernelInfo> {
        self.functions
            .iter()
            .position(|&f| f == raw)
            .map(|i| &KERNELS[i])
    }
}

/// The built-in kernel called `name`; [`ErrorKind::NotFound`] if there is
/// none.
pub(crate) fn find(name: &str) -> Result<&'static KernelInfo> {
    KERNELS.iter().find(|k| k.name == name).ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!("`{name}` is not a built-in kernel of graphcore"),
        )
    })
}

/// The index of `kernel` in [`KERNELS`].
fn index_of(kernel: &'static KernelInfo) -> usize {
    KERNELS
        .iter()
        .position(|k| std::ptr::eq(k, kernel))
        .expect("kernel comes from KERNELS")
}
