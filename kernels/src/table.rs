use crate::{KernelInfo, ModuleInfo};

/// The embedded PTX modules.
pub static MODULES: &[ModuleInfo] = &[];

/// Every built-in kernel.
pub static KERNELS: &[KernelInfo] = &[];

/// The built-in kernel called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static KernelInfo> {
    KERNELS.iter().find(|k| k.name == name)
}
