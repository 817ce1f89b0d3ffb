//! graphcore's fuzz targets: each takes raw bytes, decodes them into a
//! sequence of operations on one of graphcore's pure components, runs them
//! against a simple reference model and returns `Err` on the first
//! disagreement (a panic inside graphcore is a finding too).
//!
//! - [`pool::run`]: the pool allocator (`graphcore_core::pool::Allocator`),
//!   with random configurations, sizes up to `u64::MAX`, captures, graphs,
//!   trims, bogus frees;
//! - [`graph::run`]: graph descriptions (`graphcore_core::graph::GraphDesc`):
//!   nodes with random (also out-of-range and repeated) dependencies, edges
//!   (also self-loops, repeats and cycles), topology comparison.

pub mod graph;
pub mod pool;

/// Reads operations from fuzz bytes; past the end every read is zero, so
/// any input (even empty) decodes to something.
pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data, pos: 0 }
    }

    /// True once every byte was read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// The next `n` bytes as a little-endian number.
    fn bytes(&mut self, n: usize) -> u64 {
        (0..n).fold(0u64, |v, i| v | (self.u8() as u64) << (8 * i))
    }

    /// The next u16.
    pub fn u16(&mut self) -> u16 {
        self.bytes(2) as u16
    }

    /// The next u32.
    pub fn u32(&mut self) -> u32 {
        self.bytes(4) as u32
    }

    /// The next u64.
    pub fn u64(&mut self) -> u64 {
        self.bytes(8)
    }

    /// A number in `0..n` (`n > 0`), from as few bytes as `n` needs.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let v = match n {
            0..=0x100 => self.u8() as u64,
            0x101..=0x1_0000 => self.u16() as u64,
            0x1_0001..=0x1_0000_0000 => self.u32() as u64,
            _ => self.u64(),
        };
        v % n
    }
}

/// splitmix64: random inputs for the stable runner (tests/corpus.rs).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}
