//! Why an operation's sizes or pointers were refused: [`SizeError`].

use core::fmt;

/// Why an operation's sizes or pointers were refused (no launch happens).
/// Each variant names the argument and carries the numbers; the message
/// ([`fmt::Display`]) does not name the operation: the caller adds that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeError {
    /// The multiprocessor count was 0.
    NoMultiprocessors,
    /// A count or size argument was 0.
    Zero {
        /// The argument.
        arg: &'static str,
    },
    /// `floats` elements do not fit a 64-bit byte count.
    ByteOverflow {
        /// The count argument.
        arg: &'static str,
        /// Its value, in floats.
        floats: u64,
    },
    /// A matrix has `2^32` elements or more (the kernels index with 32 bits).
    TooManyElements {
        /// The matrix.
        matrix: &'static str,
        /// Its rows.
        rows: u64,
        /// Its columns (or row stride).
        cols: u64,
    },
    /// A required pointer was null.
    Null {
        /// The pointer argument.
        arg: &'static str,
    },
    /// A pointer was not 4-byte (`float`) aligned.
    Misaligned {
        /// The pointer argument.
        arg: &'static str,
        /// Its address.
        addr: u64,
    },
    /// A buffer would run past the end of the 64-bit address space.
    PastAddressSpace {
        /// The pointer argument.
        arg: &'static str,
        /// Its address.
        addr: u64,
        /// The buffer's length in bytes.
        bytes: u64,
    },
    /// An output overlaps an input.
    Overlap {
        /// The output.
        output: &'static str,
        /// The input.
        input: &'static str,
        /// Whether exact in-place use (same address and length) would be allowed.
        in_place_allowed: bool,
    },
    /// A chain was given more operations than one launch applies.
    TooManyOps {
        /// Operations given.
        count: usize,
        /// Most allowed.
        max: usize,
    },
    /// A chain operation's opcode is not one of the `OP_*` codes.
    UnknownOpcode {
        /// Position of the operation in the list.
        index: usize,
        /// The opcode given.
        opcode: u32,
    },
    /// A comparison code other than the `CMP_*` of a conditional setter.
    UnknownComparison {
        /// The code given.
        cmp: u32,
    },
    /// A workspace is smaller than the operation needs.
    WorkspaceTooSmall {
        /// Bytes given.
        bytes: u64,
        /// Bytes needed.
        needed: u64,
    },
    /// A matrix's leading dimension (row stride) is less than its columns.
    LeadingDimension {
        /// The matrix.
        matrix: &'static str,
        /// The leading dimension given.
        ld: u32,
        /// The matrix's columns.
        cols: u32,
    },
    /// A layer's input width is not the previous layer's output width.
    LayerWidths {
        /// The layer (0-based).
        layer: usize,
        /// Its input width.
        inputs: u32,
        /// The previous layer's output width.
        previous: u32,
    },
    /// The launch would need more blocks than a grid holds.
    GridTooLarge {
        /// Blocks needed.
        blocks: u64,
    },
    /// A size is larger than the operation takes.
    TooLarge {
        /// The argument.
        arg: &'static str,
        /// Its value.
        value: u64,
        /// The most allowed.
        max: u64,
    },
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SizeError::NoMultiprocessors => f.write_str("sms (multiprocessor count) must be > 0"),
            SizeError::Zero { arg } => write!(f, "{arg} must be > 0"),
            SizeError::ByteOverflow { arg, floats } => {
                write!(f, "{arg} = {floats} floats overflows the byte count")
            }
            SizeError::TooManyElements { matrix, rows, cols } => write!(
                f,
                "{matrix} has {rows} x {cols} elements; at most 2^32 - 1 are supported"
            ),
            SizeError::Null { arg } => write!(f, "{arg} is a null pointer"),
            SizeError::Misaligned { arg, addr } => {
                write!(f, "{arg} = {addr:#x} is not 4-byte aligned")
            }
            SizeError::PastAddressSpace { arg, addr, bytes } => write!(
                f,
                "{arg} = {addr:#x} + {bytes} bytes runs past the address space"
            ),
            SizeError::Overlap {
                output,
                input,
                in_place_allowed,
            } => write!(
                f,
                "{output} and {input} overlap{}",
                if in_place_allowed {
                    " (only exact in-place use is allowed)"
                } else {
                    ""
                }
            ),
            SizeError::TooManyOps { count, max } => {
                write!(f, "{count} operations; at most {max} per call")
            }
            SizeError::UnknownOpcode { index, opcode } => {
                write!(f, "operation {index}: unknown opcode {opcode}")
            }
            SizeError::UnknownComparison { cmp } => {
                write!(
                    f,
                    "cmp {cmp} is not a comparison (0: <, 1: <=, 2: >, 3: >=)"
                )
            }
            SizeError::WorkspaceTooSmall { bytes, needed } => write!(
                f,
                "workspace has {bytes} bytes; {needed} are needed (its workspace-size query says so)"
            ),
            SizeError::LayerWidths {
                layer,
                inputs,
                previous,
            } => write!(
                f,
                "layer {layer} takes {inputs} inputs but layer {} gives {previous} outputs",
                layer - 1
            ),
            SizeError::LeadingDimension { matrix, ld, cols } => write!(
                f,
                "leading dimension of {matrix} ({ld}) is less than its {cols} columns"
            ),
            SizeError::GridTooLarge { blocks } => {
                write!(f, "{blocks} blocks exceed the grid limit")
            }
            SizeError::TooLarge { arg, value, max } => {
                write!(f, "{arg} is {value}; at most {max}")
            }
        }
    }
}

impl std::error::Error for SizeError {}
