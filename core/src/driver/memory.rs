//! Pinned host memory, asynchronous copies and sets, pointer queries, and
//! the virtual memory management calls that back graphcore's pools.

use super::{check, sys, CUdevice, CUdeviceptr, CUstream};
use crate::error::{ensure_arg, Result};
use std::ffi::c_void;

/// Allocates `bytes` of pinned, portable host memory.
pub(crate) fn host_alloc(bytes: usize) -> Result<*mut c_void> {
    let mut p = std::ptr::null_mut();
    check(
        // SAFETY: writes one pointer.
        unsafe { sys::cuMemHostAlloc(&mut p, bytes, sys::CU_MEMHOSTALLOC_PORTABLE) },
        "cuMemHostAlloc",
    )?;
    Ok(p)
}

/// Frees memory from [`host_alloc`].
pub(crate) fn host_free(p: *mut c_void) -> Result<()> {
    // SAFETY: p came from `host_alloc` and is freed once (checked by caller).
    check(unsafe { sys::cuMemFreeHost(p) }, "cuMemFreeHost")
}

/// Copies `bytes` from `src` to `dst` on `s` (unified addressing: any
/// direction between device and pinned or pageable host memory).
pub(crate) fn copy_async(dst: u64, src: u64, bytes: usize, s: CUstream) -> Result<()> {
    check(
        // SAFETY: the caller vouches for the ranges; the driver checks what it can.
        unsafe { sys::cuMemcpyAsync(dst, src, bytes, s) },
        "cuMemcpyAsync",
    )
}

/// A memset: `count` elements of `elem_size` bytes (1, 2 or 4) at `dst`,
/// each set to the low `elem_size` bytes of `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Memset {
    pub dst: u64,
    pub value: u32,
    pub elem_size: u32,
    pub count: usize,
}

impl Memset {
    /// Checks a memset's shape (pure): `dst` is not NULL and is aligned to
    /// `elem_size`, which is 1, 2 or 4; `value` fits in an element; the
    /// byte count does not overflow.
    pub(crate) fn new(dst: u64, value: u32, elem_size: u32, count: usize) -> Result<Memset> {
        ensure_arg!(dst != 0, "`dst` is NULL");
        ensure_arg!(
            matches!(elem_size, 1 | 2 | 4),
            "`elem_size` is {elem_size}; it must be 1, 2 or 4"
        );
        ensure_arg!(
            dst % elem_size as u64 == 0,
            "`dst` (0x{dst:x}) is not aligned to the element size ({elem_size} bytes)"
        );
        ensure_arg!(
            elem_size == 4 || value >> (8 * elem_size) == 0,
            "`value` 0x{value:x} does not fit in a {elem_size}-byte element"
        );
        ensure_arg!(
            count.checked_mul(elem_size as usize).is_some(),
            "{count} elements of {elem_size} bytes overflow the address space"
        );
        Ok(Memset {
            dst,
            value,
            elem_size,
            count,
        })
    }

    /// The bytes it sets.
    pub(crate) fn bytes(&self) -> usize {
        self.count * self.elem_size as usize
    }
}

/// Runs memset `m` on `s`.
pub(crate) fn set_async(m: &Memset, s: CUstream) -> Result<()> {
    match m.elem_size {
        1 => check(
            // SAFETY: the caller vouches for the range.
            unsafe { sys::cuMemsetD8Async(m.dst, m.value as u8, m.count, s) },
            "cuMemsetD8Async",
        ),
        2 => check(
            // SAFETY: the caller vouches for the range.
            unsafe { sys::cuMemsetD16Async(m.dst, m.value as u16, m.count, s) },
            "cuMemsetD16Async",
        ),
        _ => check(
            // SAFETY: the caller vouches for the range.
            unsafe { sys::cuMemsetD32Async(m.dst, m.value, m.count, s) },
            "cuMemsetD32Async",
        ),
    }
}

/// Where a pointer's memory lives, as far as CUDA knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemoryKind {
    /// Device memory (including managed memory).
    Device,
    /// Pinned (page-locked) host memory CUDA knows.
    PinnedHost,
    /// Memory CUDA does not know: pageable host memory, or garbage.
    Unknown,
}

/// What kind of memory `p` points to.
pub(crate) fn memory_kind(p: u64) -> MemoryKind {
    let mut t: u32 = 0;
    // SAFETY: writes one CUmemorytype; fails harmlessly for unknown pointers.
    let r = unsafe {
        sys::cuPointerGetAttribute(
            &mut t as *mut u32 as *mut c_void,
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            p,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return MemoryKind::Unknown;
    }
    match t {
        x if x == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 => MemoryKind::PinnedHost,
        x if x == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32
            || x == sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32 =>
        {
            MemoryKind::Device
        }
        _ => MemoryKind::Unknown,
    }
}

fn pinned_prop(dev: CUdevice) -> sys::CUmemAllocationProp {
    // SAFETY: a plain C struct; all-zero is its documented default.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop
}

/// The physical page size (granularity) for mapping memory on `dev`.
pub(crate) fn granularity(dev: CUdevice) -> Result<u64> {
    let prop = pinned_prop(dev);
    let mut g = 0usize;
    check(
        // SAFETY: reads prop, writes one size.
        unsafe {
            sys::cuMemGetAllocationGranularity(
                &mut g,
                &prop,
                sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        },
        "cuMemGetAllocationGranularity",
    )?;
    Ok(g as u64)
}

/// Reserves `bytes` of device virtual address space.
pub(crate) fn reserve(bytes: u64, alignment: u64) -> Result<CUdeviceptr> {
    let mut p: CUdeviceptr = 0;
    check(
        // SAFETY: writes one address.
        unsafe { sys::cuMemAddressReserve(&mut p, bytes as usize, alignment as usize, 0, 0) },
        "cuMemAddressReserve",
    )?;
    Ok(p)
}

/// Frees a reservation from [`reserve`] (everything in it must be unmapped).
pub(crate) fn unreserve(p: CUdeviceptr, bytes: u64) {
    // SAFETY: p/bytes is a whole reservation from `reserve`.
    unsafe { sys::cuMemAddressFree(p, bytes as usize) };
}

/// A physical allocation handle.
pub(crate) type PhysHandle = sys::CUmemGenericAllocationHandle;

/// Creates `bytes` of physical memory on `dev`.
pub(crate) fn create_physical(dev: CUdevice, bytes: u64) -> Result<PhysHandle> {
    let prop = pinned_prop(dev);
    let mut h: PhysHandle = 0;
    check(
        // SAFETY: reads prop, writes one handle.
        unsafe { sys::cuMemCreate(&mut h, bytes as usize, &prop, 0) },
        "cuMemCreate",
    )?;
    Ok(h)
}

/// Releases a physical allocation (its mappings keep it alive until unmapped).
pub(crate) fn release_physical(h: PhysHandle) {
    // SAFETY: h came from `create_physical` and is released once.
    unsafe { sys::cuMemRelease(h) };
}

/// Maps physical `h` at `va` and makes it readable and writable by the
/// devices `access` (the owner first, then its peers).
pub(crate) fn map(va: CUdeviceptr, bytes: u64, h: PhysHandle, access: &[CUdevice]) -> Result<()> {
    check(
        // SAFETY: va..va+bytes lies in a reservation and is unmapped.
        unsafe { sys::cuMemMap(va, bytes as usize, 0, h, 0) },
        "cuMemMap",
    )?;
    let r = set_access(va, bytes, access, true);
    if r.is_err() {
        unmap(va, bytes);
    }
    r
}

/// Grants (`on`) or removes the access of the devices `devices` to the
/// mapped range `va..va+bytes`; other devices' access is unchanged.
pub(crate) fn set_access(
    va: CUdeviceptr,
    bytes: u64,
    devices: &[CUdevice],
    on: bool,
) -> Result<()> {
    let flags = if on {
        sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    } else {
        sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE
    };
    let descs: Vec<sys::CUmemAccessDesc> = devices
        .iter()
        .map(|&dev| sys::CUmemAccessDesc {
            location: pinned_prop(dev).location,
            flags,
        })
        .collect();
    check(
        // SAFETY: the range is mapped (the caller's contract); one desc per
        // device, `descs.len()` of them.
        unsafe { sys::cuMemSetAccess(va, bytes as usize, descs.as_ptr(), descs.len()) },
        "cuMemSetAccess",
    )
}

/// Unmaps `va..va+bytes`.
pub(crate) fn unmap(va: CUdeviceptr, bytes: u64) {
    // SAFETY: the range is mapped and no longer used by the device.
    unsafe { sys::cuMemUnmap(va, bytes as usize) };
}

/// What CUDA knows of a device address: its device and the allocation (or
/// mapping) around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PointerInfo {
    /// The device's ordinal.
    pub device: i32,
    /// First address of the allocation holding the pointer.
    pub start: u64,
    /// Bytes of that allocation.
    pub size: u64,
}

/// [`PointerInfo`] of `p`, or `None` when it is not device memory CUDA
/// knows (a host address, pinned host memory, garbage).
pub(crate) fn pointer_info(p: u64) -> Option<PointerInfo> {
    use sys::CUpointer_attribute as A;
    let (mut t, mut device, mut start, mut size) = (0u32, -1i32, 0u64, 0usize);
    let mut attrs = [
        A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        A::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    ];
    let mut data = [
        &mut t as *mut u32 as *mut c_void,
        &mut device as *mut i32 as *mut c_void,
        &mut start as *mut u64 as *mut c_void,
        &mut size as *mut usize as *mut c_void,
    ];
    // SAFETY: one destination of the attribute's type per attribute; fails
    // harmlessly for unknown pointers.
    let r = unsafe {
        sys::cuPointerGetAttributes(attrs.len() as u32, attrs.as_mut_ptr(), data.as_mut_ptr(), p)
    };
    let on_device = t == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32
        || t == sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32;
    (r == sys::CUresult::CUDA_SUCCESS && on_device).then_some(PointerInfo {
        device,
        start,
        size: size as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::Memset;
    use crate::error::ErrorKind;

    #[test]
    fn memsets_check_their_shape() {
        let m = Memset::new(0x1000, 0xbeef, 2, 8).unwrap();
        assert_eq!(m.bytes(), 16);
        assert_eq!(Memset::new(0x1000, 0xdead_beef, 4, 3).unwrap().bytes(), 12);
        assert_eq!(Memset::new(0x1001, 0xff, 1, 0).unwrap().bytes(), 0);
        let refused = [
            (0, 0, 1, 1, "NULL"),
            (0x1000, 0, 3, 1, "1, 2 or 4"),
            (0x1000, 0, 8, 1, "1, 2 or 4"),
            (0x1001, 0, 2, 1, "not aligned"),
            (0x1002, 0, 4, 1, "not aligned"),
            (0x1000, 0x100, 1, 1, "does not fit"),
            (0x1000, 0x1_0000, 2, 1, "does not fit"),
            (0x1000, 0, 4, usize::MAX / 2, "overflow"),
        ];
        for (dst, value, size, count, why) in refused {
            let e = Memset::new(dst, value, size, count).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{why}");
            assert!(e.message().contains(why), "{}", e.message());
        }
    }
}
