//! Graph arguments (pure): a declared device range of a graph, and the rule
//! that finds its uses in a kernel's parameter bytes.
//!
//! An argument is declared on a graph (built or captured) as a range
//! `[base, base + bytes)`. At instantiate, graphcore records every place
//! the range's addresses occur in the graph's nodes, so a launch can bind
//! the argument to another range and patch exactly those places:
//!
//! - built-in kernels: their pointer parameters, from the kernel table
//!   (exact);
//! - other kernels (modules, wrapped and captured foreign kernels such as
//!   cuBLAS): every 8-byte-aligned 8-byte value of the parameter buffer
//!   that lies inside the range (a scan, see [`scan`]), the buffer bounded
//!   by `cuFuncGetParamInfo` (drivers of CUDA 12.4 and later; on older
//!   drivers such kernels are not scanned). An integer parameter that
//!   happens to hold a value inside the range is a false positive: declare
//!   the argument exact ([`ArgDecl::exact`]) to scan nothing;
//! - memcpy and memset endpoints (exact);
//! - child graphs, recursively.
//!
//! A scalar argument ([`ArgDecl::scalar`]) is a kernel parameter's value
//! instead of an address: declared by a marker value of 1 to 8 bytes, its
//! uses are the kernel parameters (built-in kernels' non-pointer ones, and
//! any parameter of another kernel whose layout `cuFuncGetParamInfo`
//! gives) of exactly the marker's size whose bytes equal the marker, at
//! the parameter's own offset ([`match_scalar`]); no other bytes are
//! looked at, and copies and sets never use one. A binding gives the new
//! value's bytes.
//!
//! An interior address (`base + offset`) moves with its base. In a scanned
//! kernel's parameters, so does the address one past the range's end (the
//! `end` of a kernel taking `(begin, end)`), unless it is another
//! argument's base: a pointer to an undeclared buffer that starts right
//! where a declared one ends is then a false positive too (declare that
//! buffer as well, or the argument exact). Exact uses (built-in kernels,
//! copies, sets) take addresses inside ranges only. Addresses a
//! kernel computes on the device, or reads from device memory, cannot be
//! found: such uses are not rebound.

use crate::error::{ensure_arg, Error, Result};

/// A declared argument: a device range, or a scalar parameter's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgDecl {
    /// First address of the range; for a scalar, the marker's bytes
    /// (little-endian, zero above `bytes`).
    pub base: u64,
    /// Bytes of the range, a binding must provide at least as many; for a
    /// scalar, its size (1 to 8).
    pub bytes: usize,
    /// Find uses only where they are known exactly (built-in kernels'
    /// pointer parameters, memcpy and memset endpoints): no scan of other
    /// kernels' parameters.
    pub exact: bool,
    /// A scalar argument: `base` is a marker value, not an address.
    pub scalar: bool,
    /// The range holds the rows of a runner's exact-size capture (its
    /// bytes are the bucket's rows times a row's bytes): an exact-size
    /// replay of n rows may bind a range of n rows
    /// ([`Runner::replay_exact`](crate::Runner::replay_exact)). Changes
    /// nothing elsewhere.
    pub rows: bool,
}

impl ArgDecl {
    /// A device range `base .. base + bytes` (not checked here).
    pub fn range(base: u64, bytes: usize, exact: bool) -> ArgDecl {
        ArgDecl {
            base,
            bytes,
            exact,
            scalar: false,
            rows: false,
        }
    }

    /// A scalar argument marked by `marker`'s bytes: 1 to 8 of them, not
    /// all zero (zero parameters are everywhere).
    pub fn scalar(marker: &[u8]) -> Result<ArgDecl> {
        let size = marker.len();
        ensure_arg!(
            (1..=8).contains(&size),
            "a scalar argument of {size} bytes: a scalar parameter has 1 to 8"
        );
        ensure_arg!(
            marker.iter().any(|&b| b != 0),
            "a marker of all zero bytes: zero parameters are everywhere, choose a value no \
             other parameter of that size holds"
        );
        let mut v = [0u8; 8];
        v[..size].copy_from_slice(marker);
        Ok(ArgDecl {
            base: u64::from_le_bytes(v),
            bytes: size,
            exact: false,
            scalar: true,
            rows: false,
        })
    }

    /// The offset of `addr` from the base, when `addr` lies in the range
    /// (never for a scalar).
    pub fn offset_of(&self, addr: u64) -> Option<u64> {
        (!self.scalar && addr >= self.base && addr - self.base < self.bytes as u64)
            .then(|| addr - self.base)
    }

    /// Whether `addr` is one past the range's end (never for a scalar).
    fn ends_at(&self, addr: u64) -> bool {
        !self.scalar && self.base.checked_add(self.bytes as u64) == Some(addr)
    }
}

/// The argument of `decls` (index and declaration) a scanned value `addr`
/// is a use of, with its offset from the base: the first whose range holds
/// it, else the first it is one past the end of.
fn scanned_use<'a>(
    mut decls: impl Iterator<Item = (usize, &'a ArgDecl)> + Clone,
    addr: u64,
) -> Option<(usize, u64)> {
    let inside = |(i, d): (usize, &ArgDecl)| d.offset_of(addr).map(|o| (i, o));
    let past_end = |(i, d): (usize, &ArgDecl)| d.ends_at(addr).then_some((i, d.bytes as u64));
    decls
        .clone()
        .find_map(inside)
        .or_else(|| decls.find_map(past_end))
}

/// One binding of a launch: argument `index` now at `ptr`, a range of
/// `bytes` bytes (0: as large as the memory at `ptr` allows); for a scalar
/// argument, `ptr` holds the new value's bytes (little-endian, zero above
/// the scalar's size) and `bytes` is 0 or the size. Laid out as C's
/// `gc_binding` (size_t, pointer, size_t).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Binding {
    /// The argument's index (its declaration order in the graph).
    pub index: usize,
    /// The new first address.
    pub ptr: u64,
    /// Bytes available at `ptr` (0: unknown, checked against the memory).
    pub bytes: usize,
}

/// A use found by [`scan`]: the byte offset in the buffer, the argument
/// and the offset from its base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Byte offset of the 8-byte value in the scanned buffer.
    pub at: usize,
    /// The argument's index.
    pub arg: usize,
    /// The value's offset from the argument's base (0 for a scalar).
    pub delta: u64,
    /// Bytes of the value at `at`: 8 for an address, the scalar's size.
    pub size: usize,
}

/// The scanning rule: every 8-byte value at an 8-byte-aligned offset of
/// `buf` (offset `start`..`end` of a parameter) that is a use of one of
/// `decls` (inside its range, or one past its end, unless another
/// argument starts there), skipping exact ones.
pub fn scan(buf: &[u8], start: usize, end: usize, decls: &[ArgDecl], out: &mut Vec<Slot>) {
    let mut at = start.next_multiple_of(8);
    while at + 8 <= end.min(buf.len()) {
        let v = u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
        if let Some((arg, delta)) =
            scanned_use(decls.iter().enumerate().filter(|(_, d)| !d.exact), v)
        {
            out.push(Slot {
                at,
                arg,
                delta,
                size: 8,
            });
        }
        at += 8;
    }
}

/// The matching rule of scalar arguments: the parameter at offset `at` of
/// `buf`, of `size` bytes, is a use of the first scalar of `decls` of that
/// size whose marker equals its bytes exactly. Returns whether it is one.
pub fn match_scalar(
    buf: &[u8],
    at: usize,
    size: usize,
    decls: &[ArgDecl],
    out: &mut Vec<Slot>,
) -> bool {
    let Some(value) = buf.get(at..at + size) else {
        return false;
    };
    let hit = decls
        .iter()
        .position(|d| d.scalar && d.bytes == size && value == &d.base.to_le_bytes()[..size]);
    if let Some(arg) = hit {
        out.push(Slot {
            at,
            arg,
            delta: 0,
            size,
        });
    }
    hit.is_some()
}

/// Checks that `d` may be declared beside `decls`: a nonempty range that
/// overlaps none of them. Returns the new argument's index.
pub fn check_new(decls: &[ArgDecl], d: &ArgDecl) -> Result<usize> {
    if d.scalar {
        if let Some(i) = decls
            .iter()
            .position(|o| o.scalar && o.bytes == d.bytes && o.base == d.base)
        {
            return Err(Error::invalid_argument(format!(
                "scalar argument {i} has the same marker (0x{:x}, {} bytes): its uses could not \
                 be told apart",
                d.base, d.bytes
            )));
        }
        return Ok(decls.len());
    }
    ensure_arg!(d.bytes > 0, "an argument of 0 bytes");
    ensure_arg!(
        d.base.checked_add(d.bytes as u64).is_some(),
        "the argument's range overflows the address space"
    );
    if let Some((i, o)) = decls.iter().enumerate().find(|(_, o)| {
        !o.scalar && d.base < o.base + o.bytes as u64 && o.base < d.base + d.bytes as u64
    }) {
        return Err(Error::invalid_argument(format!(
            "the range 0x{:x} + {} bytes overlaps argument {i} (0x{:x} + {} bytes)",
            d.base, d.bytes, o.base, o.bytes
        )));
    }
    Ok(decls.len())
}

/// Checks binding `k` against the declaration of its argument: a range
/// of known size smaller than the declared one is refused, even at the
/// address the argument is bound to now (a smaller view of the same
/// buffer). Whether `ptr` is device memory is checked elsewhere.
pub fn check_size(k: usize, b: &Binding, d: &ArgDecl) -> Result<()> {
    ensure_arg!(
        b.bytes == 0 || b.bytes >= d.bytes,
        "binding {k}: argument {} was declared with {} bytes; the new range has {}",
        b.index,
        d.bytes,
        b.bytes
    );
    Ok(())
}

/// The bytes a launch needs of range argument `i` declared as `d`, where
/// that is fewer than declared (an exact-size replay's rows).
pub(crate) type Need<'a> = &'a dyn Fn(usize, &ArgDecl) -> usize;

/// [`check_size`] for a launch that needs `need` bytes of the argument
/// (fewer than declared: an exact-size replay's rows).
pub fn check_size_for(k: usize, b: &Binding, d: &ArgDecl, need: usize) -> Result<()> {
    if need == d.bytes {
        return check_size(k, b, d);
    }
    ensure_arg!(
        b.bytes == 0 || b.bytes >= need,
        "binding {k}: argument {} needs {} bytes for this launch's rows; the new range has {}",
        b.index,
        need,
        b.bytes
    );
    Ok(())
}

/// Checks binding `k` of scalar argument `d`: `bytes` 0 or the scalar's
/// size, and no value bits above that size (an address given for a
/// smaller scalar, most likely).
pub fn check_scalar(k: usize, b: &Binding, d: &ArgDecl) -> Result<()> {
    ensure_arg!(
        b.bytes == 0 || b.bytes == d.bytes,
        "binding {k}: argument {} is a scalar of {} bytes; the binding gives {} (0 or the \
         scalar's size)",
        b.index,
        d.bytes,
        b.bytes
    );
    ensure_arg!(
        d.bytes == 8 || b.ptr >> (8 * d.bytes) == 0,
        "binding {k}: argument {} is a scalar of {} bytes; the value 0x{:x} has bits above them \
         (put the value's bytes first, the rest zero)",
        b.index,
        d.bytes,
        b.ptr
    );
    Ok(())
}

/// The first of `decls` holding `addr` (an exact use: inside the range),
/// with the offset from its base.
pub fn find(decls: &[ArgDecl], addr: u64) -> Option<(usize, u64)> {
    decls
        .iter()
        .enumerate()
        .find_map(|(i, d)| d.offset_of(addr).map(|o| (i, o)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(base: u64, bytes: usize, exact: bool) -> ArgDecl {
        ArgDecl::range(base, bytes, exact)
    }

    fn slot(at: usize, arg: usize, delta: u64) -> Slot {
        Slot {
            at,
            arg,
            delta,
            size: 8,
        }
    }

    #[test]
    fn scan_finds_aligned_values_inside_ranges_with_their_offsets() {
        let decls = [decl(0x1000, 0x100, false), decl(0x2000, 0x10, false)];
        let mut buf = vec![0u8; 40];
        buf[0..8].copy_from_slice(&0x1000u64.to_le_bytes());
        buf[8..16].copy_from_slice(&0x10f0u64.to_le_bytes());
        buf[16..24].copy_from_slice(&0x2010u64.to_le_bytes()); // one past the end
        buf[24..32].copy_from_slice(&0x2011u64.to_le_bytes()); // two past it
        buf[32..40].copy_from_slice(&0x1100u64.to_le_bytes()); // one past arg 0
        let mut out = Vec::new();
        scan(&buf, 0, buf.len(), &decls, &mut out);
        assert_eq!(
            out,
            vec![
                slot(0, 0, 0),
                slot(8, 0, 0xf0),
                slot(16, 1, 0x10),
                slot(32, 0, 0x100)
            ]
        );
        // Unaligned values are not scanned.
        let mut buf = vec![0u8; 16];
        buf[4..12].copy_from_slice(&0x2000u64.to_le_bytes());
        out.clear();
        scan(&buf, 0, buf.len(), &decls, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn one_past_the_end_is_a_scanned_use_unless_another_argument_starts_there() {
        let decls = [decl(0x1000, 0x100, false), decl(0x1100, 0x10, false)];
        let at = |d: &[ArgDecl], v| scanned_use(d.iter().enumerate(), v);
        assert_eq!(at(&decls, 0x1100), Some((1, 0)), "arg 1's base");
        assert_eq!(at(&decls, 0x1110), Some((1, 0x10)), "one past arg 1");
        assert_eq!(at(&decls[..1], 0x1100), Some((0, 0x100)));
        assert_eq!(at(&decls, 0x1111), None);
    }

    #[test]
    fn scan_keeps_to_the_parameter_and_skips_exact_arguments() {
        let mut buf = vec![0u8; 24];
        for at in [0, 8, 16] {
            buf[at..at + 8].copy_from_slice(&0x1008u64.to_le_bytes());
        }
        let mut out = Vec::new();
        scan(&buf, 4, 20, &[decl(0x1000, 16, false)], &mut out);
        assert_eq!(out.iter().map(|s| s.at).collect::<Vec<_>>(), vec![8]);
        out.clear();
        scan(&buf, 0, 24, &[decl(0x1000, 16, true)], &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn overlapping_or_empty_declarations_are_refused() {
        let decls = [decl(0x1000, 0x100, false)];
        assert_eq!(check_new(&decls, &decl(0x1100, 8, false)).unwrap(), 1);
        assert!(check_new(&decls, &decl(0x10f8, 16, false)).is_err());
        assert!(check_new(&decls, &decl(0x800, 0x1000, false)).is_err());
        assert!(check_new(&decls, &decl(0x2000, 0, false)).is_err());
        assert!(check_new(&[], &decl(u64::MAX, 2, false)).is_err());
    }

    #[test]
    fn a_smaller_range_is_refused_whatever_its_address() {
        let d = decl(0x1000, 0x100, false);
        let b = |bytes| Binding {
            index: 0,
            ptr: 0x1000,
            bytes,
        };
        check_size(0, &b(0), &d).unwrap();
        check_size(0, &b(0x100), &d).unwrap();
        check_size(0, &b(0x200), &d).unwrap();
        // A launch that needs fewer bytes (an exact-size replay's rows).
        check_size_for(0, &b(0x80), &d, 0x80).unwrap();
        check_size_for(0, &b(0), &d, 0x80).unwrap();
        let e = check_size_for(4, &b(0x40), &d, 0x80).unwrap_err();
        assert!(e.message().contains("needs 128 bytes"), "{}", e.message());
        let e = check_size(3, &b(0x80), &d).unwrap_err();
        assert!(e.message().contains("binding 3"), "{}", e.message());
        assert!(
            e.message().contains("declared with 256 bytes"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn find_takes_the_first_range_holding_the_address() {
        let decls = [decl(0x1000, 0x100, true), decl(0x1080, 0x100, false)];
        assert_eq!(find(&decls, 0x1090), Some((0, 0x90)));
        assert_eq!(find(&decls, 0x1100), Some((1, 0x80)));
        assert_eq!(find(&decls, 0x1180), None, "exact uses lie inside");
    }

    fn scalar(v: &[u8]) -> ArgDecl {
        ArgDecl::scalar(v).unwrap()
    }

    #[test]
    fn a_scalar_matches_a_parameter_of_its_size_holding_its_marker_exactly() {
        let lr = 0.125f32.to_le_bytes();
        let decls = [
            decl(0x1000, 0x100, false),
            scalar(&lr),
            scalar(&7u64.to_le_bytes()),
        ];
        // Parameters: f32 at 0, u32 at 4 holding the marker's bits, u64 at 8.
        let mut buf = vec![0u8; 16];
        buf[0..4].copy_from_slice(&lr);
        buf[4..8].copy_from_slice(&lr);
        buf[8..16].copy_from_slice(&7u64.to_le_bytes());
        let mut out = Vec::new();
        assert!(match_scalar(&buf, 0, 4, &decls, &mut out));
        assert!(
            match_scalar(&buf, 4, 4, &decls, &mut out),
            "bytes, not types"
        );
        assert!(match_scalar(&buf, 8, 8, &decls, &mut out));
        let at = |s: &Slot| (s.at, s.arg, s.delta, s.size);
        assert_eq!(
            out.iter().map(at).collect::<Vec<_>>(),
            vec![(0, 1, 0, 4), (4, 1, 0, 4), (8, 2, 0, 8)]
        );
        // Another size never matches, even when the low bytes are the marker.
        out.clear();
        assert!(!match_scalar(&buf, 0, 8, &decls, &mut out), "8 bytes at 0");
        assert!(!match_scalar(&buf, 8, 4, &decls, &mut out), "4 of the u64");
        assert!(!match_scalar(&buf, 0, 2, &decls, &mut out));
        assert!(
            !match_scalar(&buf, 12, 8, &decls, &mut out),
            "past the buffer"
        );
        assert!(out.is_empty());
    }

    #[test]
    fn scalars_are_never_address_uses_and_addresses_never_scalar_uses() {
        let decls = [scalar(&0x1000u64.to_le_bytes()), decl(0x2000, 0x10, false)];
        let mut buf = vec![0u8; 16];
        buf[0..8].copy_from_slice(&0x1000u64.to_le_bytes());
        buf[8..16].copy_from_slice(&0x2000u64.to_le_bytes());
        let mut out = Vec::new();
        scan(&buf, 0, 16, &decls, &mut out);
        assert_eq!(out, vec![slot(8, 1, 0)], "the scan skips scalars");
        assert_eq!(find(&decls, 0x1000), None);
        assert_eq!(find(&decls, 0x1001), None, "no range around a marker");
        out.clear();
        assert!(
            !match_scalar(&buf, 8, 8, &decls, &mut out),
            "a range's base"
        );
        // A scalar overlaps no range; a range may hold a marker's value.
        assert_eq!(check_new(&decls, &decl(0x1000, 8, false)).unwrap(), 2);
    }

    #[test]
    fn bad_scalar_declarations_and_bindings_are_refused() {
        assert!(ArgDecl::scalar(&[]).is_err(), "0 bytes");
        assert!(ArgDecl::scalar(&[1; 9]).is_err(), "9 bytes");
        assert!(ArgDecl::scalar(&[0; 4]).is_err(), "an all-zero marker");
        let d = scalar(&[1, 0]);
        assert_eq!(d.base, 1);
        assert_eq!(d.bytes, 2);
        let decls = [d];
        assert!(check_new(&decls, &scalar(&[1, 0])).is_err(), "same marker");
        assert_eq!(check_new(&decls, &scalar(&[1, 0, 0, 0])).unwrap(), 1);
        let b = |ptr, bytes| Binding {
            index: 0,
            ptr,
            bytes,
        };
        check_scalar(0, &b(0xffff, 0), &d).unwrap();
        check_scalar(0, &b(0, 2), &d).unwrap();
        let e = check_scalar(1, &b(5, 8), &d).unwrap_err();
        assert!(e.message().contains("binding 1"), "{}", e.message());
        let e = check_scalar(2, &b(0x7f00_0000_1000, 0), &d).unwrap_err();
        assert!(e.message().contains("bits above"), "{}", e.message());
        check_scalar(0, &b(u64::MAX, 8), &scalar(&[1; 8])).unwrap();
    }
}
