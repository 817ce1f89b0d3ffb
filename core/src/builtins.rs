//! graphcore's own kernels in one context: the modules of
//! `graphcore_kernels::MODULES`, loaded, and one function per entry of
//! [`KERNELS`]. The context owns them (loaded on first use); the modules
//! unload when it drops, and keep the device's primary context retained
//! until they have.

use crate::driver::owned::{Owned, PrimaryContext, SharedFunction};
use crate::driver::{self, module as dm, CUfunction, CUmodule};
use crate::error::{Error, ErrorKind, Result};
use graphcore_kernels::{Kernel, KernelInfo, KERNELS, MODULES};
use std::sync::Arc;

/// The built-in kernels of one context: the modules (unloaded when this
/// drops) and one function of theirs per kernel.
pub(crate) struct Builtins {
    _modules: Vec<Owned<CUmodule>>,
    functions: Vec<SharedFunction>,
}

impl Builtins {
    /// Loads every built-in module into `ctx` (current on this thread).
    pub(crate) fn load(ctx: &Arc<PrimaryContext>) -> Result<Builtins> {
        let _relaxed = driver::RelaxedCaptureMode::enter()?;
        let mut modules = Vec::with_capacity(MODULES.len());
        for m in MODULES {
            let raw = dm::load(m.ptx.as_bytes())
                .map_err(|e| e.context(&format!("loading built-in module `{}`", m.name)))?;
            modules.push(Owned::new(raw, ctx));
        }
        let functions = KERNELS
            .iter()
            .map(|k| dm::function(modules[k.module].raw(), k.name).map(SharedFunction::new))
            .collect::<Result<_>>()?;
        Ok(Builtins {
            _modules: modules,
            functions,
        })
    }

    /// The loaded function of `kernel`.
    pub(crate) fn function(&self, kernel: Kernel) -> CUfunction {
        self.functions[kernel.index()].raw()
    }

    /// The built-in kernel whose loaded function is `raw`, if any.
    pub(crate) fn kernel_of(&self, raw: CUfunction) -> Option<&'static KernelInfo> {
        self.functions
            .iter()
            .position(|f| f.raw() == raw)
            .map(|i| &KERNELS[i])
    }
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
