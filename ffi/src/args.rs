//! Argument checks shared by the exports: out-parameters, C strings,
//! `struct_size`-first option structs.

use graphcore_core::{Error, Result};
use std::ffi::{c_char, CStr};

/// An out-parameter, checked for NULL before any work is done; written with
/// [`Out::set`] once the call has succeeded.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks `p` (`arg` names it in the error).
    pub(crate) fn new(p: *mut T, arg: &str) -> Result<Out<T>> {
        if p.is_null() {
            return Err(Error::invalid_argument(format!("`{arg}` is NULL")));
        }
        Ok(Out(p))
    }

    /// Writes the result.
    pub(crate) fn set(self, v: T) {
        // SAFETY: checked non-NULL; the caller passed a writable T.
        unsafe { self.0.write(v) }
    }
}

/// A NUL-terminated C string argument as UTF-8.
pub(crate) fn c_str<'a>(p: *const c_char, arg: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::invalid_argument(format!("`{arg}` is NULL")));
    }
    // SAFETY: non-NULL, and the caller passes a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::invalid_argument(format!("`{arg}` is not valid UTF-8")))
}

/// A byte buffer argument.
pub(crate) fn bytes<'a>(p: *const std::ffi::c_void, len: usize, arg: &str) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(Error::invalid_argument(format!("`{arg}` is NULL")));
    }
    if len == 0 {
        return Err(Error::invalid_argument(format!("`{arg}` has size 0")));
    }
    // SAFETY: the caller passes `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(p as *const u8, len) })
}

/// Types whose first field is `size_t struct_size`, so they can grow.
pub(crate) trait Versioned: Copy + Default {
    /// Bytes of the first version of the struct (its smallest valid size).
    const V1_SIZE: usize;
}

/// The most bytes a newer header's struct may add to one this version
/// knows; a larger `struct_size` is taken for garbage (never read).
const MAX_NEWER_BYTES: usize = 4096;

/// Reads an options struct: NULL gives the defaults; a larger struct from a
/// newer header is accepted if its extra bytes are zero; a smaller one than
/// the first version is an error. Fields the caller's version lacks keep
/// their defaults.
pub(crate) fn read_options<T: Versioned>(p: *const T, arg: &str) -> Result<T> {
    let mut v = T::default();
    if p.is_null() {
        return Ok(v);
    }
    // SAFETY: the caller's struct starts with a size_t struct_size.
    let given = unsafe { (p as *const usize).read_unaligned() };
    let ours = std::mem::size_of::<T>();
    if given < T::V1_SIZE || given > ours + MAX_NEWER_BYTES {
        return Err(Error::invalid_argument(format!(
            "`{arg}->struct_size` is {given}; set it to sizeof the struct ({ours})"
        )));
    }
    let n = given.min(ours);
    // SAFETY: the caller's struct has `given` readable bytes; T is plain data.
    unsafe {
        std::ptr::copy_nonoverlapping(p as *const u8, &mut v as *mut T as *mut u8, n);
        if given > ours {
            let extra = std::slice::from_raw_parts((p as *const u8).add(ours), given - ours);
            if extra.iter().any(|&b| b != 0) {
                return Err(Error::invalid_argument(format!(
                    "`{arg}` sets fields this version of graphcore does not know (struct_size {given} > {ours})"
                )));
            }
        }
    }
    Ok(v)
}

/// A `struct_size`-first result struct of the caller's, checked (not NULL,
/// a plausible `struct_size`) before any work is done; written with
/// [`VersionedOut::set`] once the call has succeeded. A smaller, older
/// struct gets the fields it has.
pub(crate) struct VersionedOut<T> {
    p: *mut T,
    bytes: usize,
}

impl<T: Versioned> VersionedOut<T> {
    /// Checks `p` (`arg` names it in errors).
    pub(crate) fn new(p: *mut T, arg: &str) -> Result<VersionedOut<T>> {
        if p.is_null() {
            return Err(Error::invalid_argument(format!("`{arg}` is NULL")));
        }
        // SAFETY: the caller's struct starts with a size_t struct_size.
        let given = unsafe { (p as *const usize).read_unaligned() };
        let ours = std::mem::size_of::<T>();
        if given < T::V1_SIZE || given > ours + MAX_NEWER_BYTES {
            return Err(Error::invalid_argument(format!(
                "`{arg}->struct_size` is {given}; set it to sizeof the struct ({ours})"
            )));
        }
        Ok(VersionedOut {
            p,
            bytes: given.min(ours),
        })
    }

    /// Writes the result (every field after `struct_size` the caller's
    /// struct has).
    pub(crate) fn set(self, v: &T) {
        let skip = std::mem::size_of::<usize>();
        // SAFETY: writes bytes ≤ the caller's struct_size of plain data;
        // struct_size itself is kept.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (v as *const T as *const u8).add(skip),
                (self.p as *mut u8).add(skip),
                self.bytes - skip,
            );
        }
    }
}
