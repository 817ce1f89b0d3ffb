//! Devices and their primary contexts.

use super::{check, init, sys, CUcontext, CUdevice};
use crate::error::Result;

/// Number of CUDA devices.
pub(crate) fn count() -> Result<i32> {
    init()?;
    let mut n = 0;
    // SAFETY: writes one int.
    check(unsafe { sys::cuDeviceGetCount(&mut n) }, "cuDeviceGetCount")?;
    Ok(n)
}

/// The device with `ordinal`.
pub(crate) fn get(ordinal: i32) -> Result<CUdevice> {
    init()?;
    let mut dev = 0;
    check(
        // SAFETY: writes one device handle.
        unsafe { sys::cuDeviceGet(&mut dev, ordinal) },
        "cuDeviceGet",
    )?;
    Ok(dev)
}

/// The device's name.
pub(crate) fn name(dev: CUdevice) -> Result<String> {
    let mut buf = [0 as std::ffi::c_char; 256];
    check(
        // SAFETY: the driver writes at most `len` bytes including the NUL.
        unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, dev) },
        "cuDeviceGetName",
    )?;
    // SAFETY: NUL-terminated by the driver within the buffer.
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Ok(s.to_string_lossy().into_owned())
}

/// One integer attribute of the device.
pub(crate) fn attribute(dev: CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
    let mut v = 0;
    check(
        // SAFETY: writes one int.
        unsafe { sys::cuDeviceGetAttribute(&mut v, attr, dev) },
        "cuDeviceGetAttribute",
    )?;
    Ok(v)
}

/// Facts about a device that graphcore uses.
#[derive(Clone, Debug)]
pub(crate) struct DeviceInfo {
    pub name: String,
    pub sm_count: u32,
    pub compute_capability: (i32, i32),
    pub total_bytes: u64,
    pub vmm_supported: bool,
}

/// Reads [`DeviceInfo`] for `dev`.
pub(crate) fn info(dev: CUdevice) -> Result<DeviceInfo> {
    use sys::CUdevice_attribute as A;
    let mut total = 0usize;
    check(
        // SAFETY: writes one size.
        unsafe { sys::cuDeviceTotalMem_v2(&mut total, dev) },
        "cuDeviceTotalMem",
    )?;
    Ok(DeviceInfo {
        name: name(dev)?,
        sm_count: attribute(dev, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        compute_capability: (
            attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        total_bytes: total as u64,
        vmm_supported: attribute(
            dev,
            A::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        )? != 0,
    })
}

/// Retains the device's primary context (the one the CUDA runtime uses).
pub(crate) fn retain_primary(dev: CUdevice) -> Result<CUcontext> {
    let mut ctx = std::ptr::null_mut();
    check(
        // SAFETY: writes one context handle; paired with `release_primary`.
        unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) },
        "cuDevicePrimaryCtxRetain",
    )?;
    Ok(ctx)
}

/// Releases one retain of the device's primary context.
pub(crate) fn release_primary(dev: CUdevice) {
    // SAFETY: paired with a successful `retain_primary`.
    unsafe { sys::cuDevicePrimaryCtxRelease_v2(dev) };
}

/// Makes `ctx` current on the calling thread. Most calls find it current
/// already; it is then not set again.
pub(crate) fn set_current(ctx: CUcontext) -> Result<()> {
    let mut current = std::ptr::null_mut();
    // SAFETY: writes one context handle.
    let read = unsafe { sys::cuCtxGetCurrent(&mut current) };
    if read == sys::CUresult::CUDA_SUCCESS && current == ctx {
        return Ok(());
    }
    // SAFETY: ctx is a live (retained) context.
    check(unsafe { sys::cuCtxSetCurrent(ctx) }, "cuCtxSetCurrent")
}

/// Keeps the calling thread's current context as it was: put back when
/// dropped (NULL included), whatever the calls made meanwhile bound, for
/// the calls the header says leave it as it was.
pub(crate) struct KeepCurrent(Option<CUcontext>);

impl KeepCurrent {
    /// Notes the thread's current context (nothing is put back if it
    /// cannot be read).
    pub(crate) fn enter() -> KeepCurrent {
        let mut current = std::ptr::null_mut();
        // SAFETY: writes one context handle.
        let read = unsafe { sys::cuCtxGetCurrent(&mut current) };
        KeepCurrent((read == sys::CUresult::CUDA_SUCCESS).then_some(current))
    }
}

impl Drop for KeepCurrent {
    fn drop(&mut self) {
        let Some(saved) = self.0 else { return };
        let mut current = std::ptr::null_mut();
        // SAFETY: writes one context handle.
        let read = unsafe { sys::cuCtxGetCurrent(&mut current) };
        if read != sys::CUresult::CUDA_SUCCESS || current != saved {
            // SAFETY: `saved` was current on this thread when `enter` ran
            // (NULL unbinds); graphcore destroys no context meanwhile.
            unsafe { sys::cuCtxSetCurrent(saved) };
        }
    }
}

/// Waits for all work in the current context.
pub(crate) fn synchronize() -> Result<()> {
    // SAFETY: no arguments.
    check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")
}

/// Free and total device memory of the current context's device.
pub(crate) fn mem_info() -> Result<(u64, u64)> {
    let (mut free, mut total) = (0usize, 0usize);
    check(
        // SAFETY: writes two sizes.
        unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) },
        "cuMemGetInfo",
    )?;
    Ok((free as u64, total as u64))
}

/// True when `dev` can access memory of `peer` (a peer path exists between
/// them: NVLink or PCIe peer-to-peer).
pub(crate) fn can_access_peer(dev: CUdevice, peer: CUdevice) -> Result<bool> {
    let mut can = 0;
    check(
        // SAFETY: writes one int.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, dev, peer) },
        "cuDeviceCanAccessPeer",
    )?;
    Ok(can != 0)
}
