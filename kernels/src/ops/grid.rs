//! Launch grids: block size, grid limits and the grid-stride shape.

use crate::{Call, Kernel, KernelArgs, Value, MAX_ARGS};

/// Threads per block of the elementwise and reduction kernels.
pub const BLOCK: u32 = 256;

/// Blocks per multiprocessor at most for grid-stride kernels.
pub(super) const STRIDE_WAVES: u64 = 8;
/// The largest grid x dimension CUDA launches.
pub(super) const MAX_GRID_X: u64 = (1 << 31) - 1;

/// Grid for a grid-stride kernel over `n` floats (float4 units), at most
/// `waves` blocks per SM.
pub(super) fn stride_grid(n: u64, sms: u32, waves: u64) -> u32 {
    let units = n.div_ceil(4);
    let want = units.div_ceil(BLOCK as u64);
    want.min(sms as u64 * waves).clamp(1, MAX_GRID_X) as u32
}

/// The launch of a grid-stride kernel over `n` floats: [`BLOCK`] threads a
/// block, at most [`STRIDE_WAVES`] blocks per SM.
pub(super) fn grid_stride_call(args: impl KernelArgs, n: u64, sms: u32) -> Call {
    Call::new(
        args,
        [stride_grid(n, sms, STRIDE_WAVES), 1, 1],
        [BLOCK, 1, 1],
        0,
    )
}

/// The launch of grid-stride kernel `kernel` over `n` floats with argument
/// `values` (a table-declared op's, at most [`MAX_ARGS`]): as
/// [`grid_stride_call`], for kernels without typed arguments.
pub(super) fn grid_stride_values(kernel: Kernel, values: &[Value], n: u64, sms: u32) -> Call {
    let mut args = [Value::U64(0); MAX_ARGS];
    args[..values.len()].copy_from_slice(values);
    Call {
        kernel,
        grid: [stride_grid(n, sms, STRIDE_WAVES), 1, 1],
        block: [BLOCK, 1, 1],
        shared_bytes: 0,
        args,
        nargs: values.len(),
        cooperative: false,
        in_order: false,
        cluster: None,
    }
}
