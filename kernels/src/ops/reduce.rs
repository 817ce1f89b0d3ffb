//! Reductions: column sums (bias gradient and update) and the summed squared error.

use super::check::{apart, buf, elems, floats, nonzero, opt_buf, positive_sms, F32};
use super::grid::{stride_grid, BLOCK};
use crate::{args, Call, SizeError};

/// Blocks per multiprocessor at most for the MSE kernel (fewer partial sums).
const MSE_WAVES: u64 = 4;

/// Checks a column sum of `dy` (row-major `rows x cols`) into `out` (`cols`
/// floats, named `out_name`); returns the launch shape: grid ceil(cols / 32),
/// block (32, TY) with about 4 rows per thread, TY a power of two up to 32.
fn column_sum_shape(
    out_name: &'static str,
    out: u64,
    dy: u64,
    rows: u32,
    cols: u32,
    sms: u32,
) -> Result<([u32; 3], [u32; 3]), SizeError> {
    positive_sms(sms)?;
    nonzero("rows", rows as u64)?;
    nonzero("cols", cols as u64)?;
    let n = elems("dy", rows as u64, cols as u64)?;
    let o = buf(out_name, out, cols as u64 * F32)?;
    let d = buf("dy", dy, n * F32)?;
    apart(o, d, false)?;
    let ty = (rows as u64).div_ceil(4).next_power_of_two().min(32) as u32;
    Ok(([(cols as u64).div_ceil(32) as u32, 1, 1], [32, ty, 1]))
}

/// `db[c] = sum over r of dy[r, c]` (row-major `rows x cols`), deterministic.
pub fn bias_grad(db: u64, dy: u64, rows: u32, cols: u32, sms: u32) -> Result<Call, SizeError> {
    let (grid, block) = column_sum_shape("db", db, dy, rows, cols, sms)?;
    Ok(Call::new(
        args::BiasGrad { db, dy, rows, cols },
        grid,
        block,
        0,
    ))
}

/// `b[c] -= lr * sum over r of dy[r, c]`, bitwise equal to [`bias_grad`]
/// followed by [`sgd`](super::sgd), without the intermediate buffer.
pub fn bias_sgd(
    b: u64,
    dy: u64,
    rows: u32,
    cols: u32,
    lr: f32,
    sms: u32,
) -> Result<Call, SizeError> {
    let (grid, block) = column_sum_shape("b", b, dy, rows, cols, sms)?;
    Ok(Call::new(
        args::BiasSgd {
            b,
            dy,
            rows,
            cols,
            lr,
        },
        grid,
        block,
        0,
    ))
}

fn mse_blocks(n: u64, sms: u32) -> u32 {
    stride_grid(n, sms.max(1), MSE_WAVES)
}

/// Bytes of workspace [`mse`] needs for `n` elements on a device with `sms`
/// multiprocessors: a counter (16 bytes) and one partial sum per block.
/// The workspace must be zeroed once before its first use; the kernel leaves
/// it zeroed after every launch.
pub fn mse_workspace_bytes(n: u64, sms: u32) -> u64 {
    16 + F32 * mse_blocks(n, sms) as u64
}

/// Sum-of-squares loss and its gradient:
/// `loss[0] = sum (pred[i] - target[i])^2` and, when `grad != 0`,
/// `grad[i] = 2 * grad_scale * (pred[i] - target[i])` (`grad_scale = 1/n`
/// gives the gradient of the mean). `workspace` holds at least
/// [`mse_workspace_bytes`]`(n, sms)` bytes (`workspace_bytes` says how many),
/// zeroed before the first launch and not shared with a concurrent launch.
#[allow(clippy::too_many_arguments)]
pub fn mse(
    loss: u64,
    grad: u64,
    pred: u64,
    target: u64,
    n: u64,
    grad_scale: f32,
    workspace: u64,
    workspace_bytes: u64,
    sms: u32,
) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    let bytes = floats("n", n)?;
    let need = mse_workspace_bytes(n, sms);
    if workspace_bytes < need {
        return Err(SizeError::WorkspaceTooSmall {
            bytes: workspace_bytes,
            needed: need,
        });
    }
    let l = buf("loss", loss, F32)?;
    let g = opt_buf("grad", grad, bytes)?;
    let p = buf("pred", pred, bytes)?;
    let t = buf("target", target, bytes)?;
    let w = buf("workspace", workspace, need)?;
    for other in [g, p, t, w] {
        apart(l, other, false)?;
    }
    for other in [g, p, t] {
        apart(w, other, false)?;
    }
    apart(g, p, true)?;
    apart(g, t, true)?;
    let grid = mse_blocks(n, sms);
    Ok(Call::new(
        args::Mse {
            loss,
            grad,
            pred,
            target,
            n,
            grad_scale,
            workspace,
        },
        [grid, 1, 1],
        [BLOCK, 1, 1],
        0,
    ))
}

/// How [`mse_reduced`] reduces the squared errors (PyTorch's
/// `nn.MSELoss(reduction=...)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// `loss[0]` = the sum of the squared errors, gradient `2 * d`.
    Sum,
    /// `loss[0]` = the sum times `1.0f32 / n` (one float multiply, as
    /// PyTorch's CUDA mean), gradient `d * (2 * (1.0f32 / n))`, bitwise
    /// PyTorch's `2 / n` scale.
    Mean,
}

/// The loss `reduction` asks for and its gradient: [`mse`] with
/// `grad_scale` 1 for [`Reduction::Sum`] (the same launch), and for
/// [`Reduction::Mean`] `grad_scale = 1.0f32 / n` and the loss scaled by the
/// same factor in the kernel (`gc_mse_scaled_f32`). Same checks and
/// workspace as [`mse`].
#[allow(clippy::too_many_arguments)]
pub fn mse_reduced(
    loss: u64,
    grad: u64,
    pred: u64,
    target: u64,
    n: u64,
    reduction: Reduction,
    workspace: u64,
    workspace_bytes: u64,
    sms: u32,
) -> Result<Call, SizeError> {
    match reduction {
        Reduction::Sum => mse(
            loss,
            grad,
            pred,
            target,
            n,
            1.0,
            workspace,
            workspace_bytes,
            sms,
        ),
        Reduction::Mean => {
            let scale = 1.0f32 / n as f32;
            let checked = mse(
                loss,
                grad,
                pred,
                target,
                n,
                scale,
                workspace,
                workspace_bytes,
                sms,
            )?;
            Ok(Call::new(
                args::MseScaled {
                    loss,
                    grad,
                    pred,
                    target,
                    n,
                    grad_scale: scale,
                    loss_scale: scale,
                    workspace,
                },
                checked.grid,
                checked.block,
                0,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::*;
    use crate::{Kernel, Value};

    #[test]
    fn column_sums() {
        for (rows, cols) in [(1, 1), (64, 1024), (1000, 3), (5, 33), (1 << 20, 1)] {
            for call in [
                bias_grad(A, B, rows, cols, SMS).unwrap(),
                bias_sgd(A, B, rows, cols, 0.1, SMS).unwrap(),
            ] {
                assert_eq!(call.block[0], 32);
                assert!((1..=32).contains(&call.block[1]));
                assert!(call.block[1].is_power_of_two());
                assert_eq!(call.grid[0] as u64 * 32, (cols as u64).div_ceil(32) * 32);
                assert!(call.grid[0] as u64 * 32 >= cols as u64);
            }
            // Same block shape for both, so bias_sgd == bias_grad + sgd bitwise.
            assert_eq!(
                bias_grad(A, B, rows, cols, SMS).unwrap().block,
                bias_sgd(A, B, rows, cols, 0.1, SMS).unwrap().block
            );
        }
        err(bias_grad(A, B, 0, 3, SMS), "rows must be > 0");
        err(bias_grad(A, B, 1 << 20, 1 << 12, SMS), "2^32");
        err(bias_grad(A, A, 4, 4, SMS), "overlap");
        err(bias_sgd(0, B, 4, 4, 0.1, SMS), "b is a null pointer");
    }

    #[test]
    fn mse_workspace_and_grid() {
        for n in [1u64, 5, 1024, 1 << 20, (1 << 20) + 3, 1 << 36] {
            for sms in [1, 132] {
                let ws = mse_workspace_bytes(n, sms);
                let call = mse(A, B, C, D, n, 1.0, WS, ws, sms).unwrap();
                assert_eq!(ws, 16 + 4 * call.grid[0] as u64);
                assert!(call.grid[0] as u64 <= sms as u64 * MSE_WAVES);
                assert_eq!(call.block, [BLOCK, 1, 1]);
                assert_eq!(
                    mse(A, B, C, D, n, 1.0, WS, ws - 1, sms),
                    Err(SizeError::WorkspaceTooSmall {
                        bytes: ws - 1,
                        needed: ws
                    })
                );
            }
        }
        let ws = mse_workspace_bytes(100, SMS);
        assert!(mse(A, 0, C, D, 100, 1.0, WS, ws, SMS).is_ok());
        assert!(mse(A, C, C, D, 100, 1.0, WS, ws, SMS).is_ok());
        err(mse(A, B, C, D, 0, 1.0, WS, ws, SMS), "n must be > 0");
        err(mse(0, B, C, D, 100, 1.0, WS, ws, SMS), "loss is a null");
        err(mse(A, B, C, D, 100, 1.0, 0, ws, SMS), "workspace is a null");
        err(mse(C + 4, B, C, D, 100, 1.0, WS, ws, SMS), "overlap");
        err(mse(A, B, C, D, 100, 1.0, D + 8, ws, SMS), "overlap");
        err(mse(A, C + 4, C, D, 100, 1.0, WS, ws, SMS), "overlap");
    }

    #[test]
    fn mse_reduced_sum_is_mse_and_mean_scales_by_the_float_reciprocal() {
        let n = 1000u64;
        let ws = mse_workspace_bytes(n, SMS);
        let sum = mse_reduced(A, B, C, D, n, Reduction::Sum, WS, ws, SMS).unwrap();
        let plain = mse(A, B, C, D, n, 1.0, WS, ws, SMS).unwrap();
        assert_eq!(sum.kernel, plain.kernel);
        assert_eq!(sum.args(), plain.args());
        let mean = mse_reduced(A, B, C, D, n, Reduction::Mean, WS, ws, SMS).unwrap();
        assert_eq!(mean.kernel, Kernel::MseScaled);
        assert_eq!((mean.grid, mean.block), (plain.grid, plain.block));
        let s = 1.0f32 / 1000.0;
        assert_eq!(
            mean.args(),
            &[
                Value::Ptr(A),
                Value::Ptr(B),
                Value::Ptr(C),
                Value::Ptr(D),
                Value::U64(n),
                Value::F32(s),
                Value::F32(s),
                Value::Ptr(WS)
            ]
        );
        // The gradient's scale 2 * s is bitwise PyTorch's float(2 / n).
        assert_eq!(2.0 * s, (2.0f64 / 1000.0) as f32);
        // Same checks as mse.
        err(
            mse_reduced(A, B, C, D, n, Reduction::Mean, WS, ws - 1, SMS),
            "workspace",
        );
        err(
            mse_reduced(C + 4, B, C, D, n, Reduction::Mean, WS, ws, SMS),
            "overlap",
        );
        err(
            mse_reduced(A, B, C, D, 0, Reduction::Mean, WS, ws, SMS),
            "n must be > 0",
        );
    }
}
