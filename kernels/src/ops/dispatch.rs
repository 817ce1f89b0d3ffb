//! Which GEMM runs a linear layer: graphcore's own kernels or the vendor's
//! (cuBLASLt), per shape, from a table measured on the GPU and compiled in
//! (`gemm_dispatch.txt`, written by `perf/side_by_side/gemm_dispatch.py`), or
//! one measured on the machine at hand and named by the environment variable
//! `GRAPHCORE_GEMM_TABLE` (read once, at the first choice). No driver: the
//! caller (the C layer) asks, then falls back to graphcore's kernels where
//! cuBLASLt is not loaded or refuses the shape.

use std::sync::OnceLock;

/// The GEMM a linear layer runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// graphcore's own kernels (always available).
    Graphcore,
    /// cuBLASLt (where it loads and takes the shape).
    CublasLt,
}

/// One measured shape and its winner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchEntry {
    /// Rows of x and y.
    pub m: u32,
    /// Output features.
    pub n: u32,
    /// Input features.
    pub k: u32,
    /// The TF32 opt-in.
    pub tf32: bool,
    /// The faster GEMM there.
    pub winner: Backend,
}

/// Rows from which the default rule (no table) takes cuBLASLt for f32.
pub const DEFAULT_CUBLASLT_MIN_ROWS: u32 = 512;

/// The committed table's text.
const TABLE: &str = include_str!("gemm_dispatch.txt");

/// Parses a table: one `m n k tf32 winner` line per shape (`tf32` 0 or 1,
/// `winner` `graphcore` or `cublaslt`); `#` starts a comment, blank lines
/// are skipped. An error names the line.
pub fn parse_dispatch(text: &str) -> Result<Vec<DispatchEntry>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |what: &str| format!("line {}: {what}: `{line}`", i + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 5 {
            return Err(bad("expected `m n k tf32 winner`"));
        }
        let num = |s: &str| {
            s.parse::<u32>()
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| bad("a size must be a positive integer"))
        };
        let tf32 = match f[3] {
            "0" => false,
            "1" => true,
            _ => return Err(bad("tf32 must be 0 or 1")),
        };
        let winner = match f[4] {
            "graphcore" => Backend::Graphcore,
            "cublaslt" => Backend::CublasLt,
            _ => return Err(bad("winner must be `graphcore` or `cublaslt`")),
        };
        out.push(DispatchEntry {
            m: num(f[0])?,
            n: num(f[1])?,
            k: num(f[2])?,
            tf32,
            winner,
        });
    }
    Ok(out)
}

/// The default rule, where no shape of the same TF32 setting is measured:
/// cuBLASLt for TF32 and from [`DEFAULT_CUBLASLT_MIN_ROWS`] rows on,
/// graphcore's kernels below.
pub fn default_backend(m: u32, tf32: bool) -> Backend {
    if tf32 || m >= DEFAULT_CUBLASLT_MIN_ROWS {
        Backend::CublasLt
    } else {
        Backend::Graphcore
    }
}

/// The backend `table` picks for a shape: the winner of the same shape,
/// else of the nearest shape of the same TF32 setting (sum of
/// |log2(a / b)| over m, n and k; the first listed wins a tie), else the
/// [default rule](default_backend).
pub fn choose_in(table: &[DispatchEntry], m: u32, n: u32, k: u32, tf32: bool) -> Backend {
    nearest(
        table.iter().map(|e| (logs(e.m, e.n, e.k), e)),
        m,
        n,
        k,
        tf32,
    )
}

/// log2 of a shape's sizes.
fn logs(m: u32, n: u32, k: u32) -> [f64; 3] {
    [m, n, k].map(|v| (v.max(1) as f64).log2())
}

/// [`choose_in`] over entries with their [`logs`].
fn nearest<'a>(
    entries: impl Iterator<Item = ([f64; 3], &'a DispatchEntry)>,
    m: u32,
    n: u32,
    k: u32,
    tf32: bool,
) -> Backend {
    let q = logs(m, n, k);
    let mut best: Option<(f64, Backend)> = None;
    for (l, e) in entries.filter(|(_, e)| e.tf32 == tf32) {
        let dist = (l[0] - q[0]).abs() + (l[1] - q[1]).abs() + (l[2] - q[2]).abs();
        if best.is_none_or(|(b, _)| dist < b) {
            best = Some((dist, e.winner));
        }
    }
    best.map_or_else(|| default_backend(m, tf32), |(_, w)| w)
}

/// The table in use, given `GRAPHCORE_GEMM_TABLE`'s value: the file it
/// names when it is set and not empty, else the committed one; a file that cannot be read or
/// parsed is reported once on stderr (naming the file and the line) and the
/// committed table used instead.
fn table_text(var: Option<std::ffi::OsString>) -> String {
    match var.filter(|p| !p.is_empty()) {
        None => TABLE.to_owned(),
        Some(path) => match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| parse_dispatch(&t).map(|_| t))
        {
            Ok(text) => text,
            Err(e) => {
                eprintln!(
                    "graphcore: GRAPHCORE_GEMM_TABLE={}: {e}; the GEMM dispatch uses the \
                     compiled-in table",
                    path.to_string_lossy()
                );
                TABLE.to_owned()
            }
        },
    }
}

/// The table in use ([`table_text`]), with each entry's [`logs`] (parsed
/// once).
fn compiled() -> &'static [([f64; 3], DispatchEntry)] {
    static T: OnceLock<Vec<([f64; 3], DispatchEntry)>> = OnceLock::new();
    T.get_or_init(|| {
        parse_dispatch(&table_text(std::env::var_os("GRAPHCORE_GEMM_TABLE")))
            .unwrap_or_default()
            .into_iter()
            .map(|e| (logs(e.m, e.n, e.k), e))
            .collect()
    })
}

/// The table in use: the committed one, or `GRAPHCORE_GEMM_TABLE`'s.
pub fn dispatch_table() -> Vec<DispatchEntry> {
    compiled().iter().map(|(_, e)| *e).collect()
}

/// The backend the table in use picks for a linear layer of `m` rows,
/// `n` outputs, `k` inputs (`tf32`: the TF32 opt-in on a GPU that has it).
/// Costs three logarithms and a pass over the table's entries (no lock, no
/// allocation).
pub fn choose_backend(m: u32, n: u32, k: u32, tf32: bool) -> Backend {
    nearest(compiled().iter().map(|(l, e)| (*l, e)), m, n, k, tf32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_table_parses() {
        let t = parse_dispatch(TABLE).unwrap();
        assert_eq!(dispatch_table(), t);
        // The compiled table decides as `choose_in` over the parsed one.
        for (m, n, k) in [
            (1, 64, 64),
            (300, 1024, 1024),
            (512, 4096, 4096),
            (4096, 256, 8192),
        ] {
            for tf32 in [false, true] {
                assert_eq!(choose_backend(m, n, k, tf32), choose_in(&t, m, n, k, tf32));
            }
        }
    }

    #[test]
    fn a_table_file_replaces_the_committed_one_unless_it_is_bad() {
        let dir = std::env::temp_dir().join(format!("gc-gemm-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.txt");
        std::fs::write(&good, "64 1024 1024 0 cublaslt\n").unwrap();
        assert_eq!(table_text(Some(good.into())), "64 1024 1024 0 cublaslt\n");
        let bad = dir.join("bad.txt");
        std::fs::write(&bad, "64 1024 1024 0 nobody\n").unwrap();
        for var in [
            None,
            Some("".into()),
            Some(bad.into()),
            Some(dir.join("missing.txt").into()),
        ] {
            assert_eq!(table_text(var.clone()), TABLE, "{var:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_a_table_the_default_rule_decides() {
        for (m, tf32, want) in [
            (1, false, Backend::Graphcore),
            (511, false, Backend::Graphcore),
            (512, false, Backend::CublasLt),
            (4096, false, Backend::CublasLt),
            (1, true, Backend::CublasLt),
            (300, true, Backend::CublasLt),
        ] {
            assert_eq!(choose_in(&[], m, 1024, 1024, tf32), want, "{m} {tf32}");
        }
    }

    #[test]
    fn exact_and_nearest_shapes_decide_within_their_tf32_setting() {
        let t = parse_dispatch(
            "# comment\n\n64 1024 1024 0 graphcore\n1024 1024 1024 0 cublaslt  # c\n\
             64 1024 1024 1 graphcore\n",
        )
        .unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(choose_in(&t, 64, 1024, 1024, false), Backend::Graphcore);
        assert_eq!(choose_in(&t, 1024, 1024, 1024, false), Backend::CublasLt);
        // Nearer 64 rows than 1024 (log2: 1 against 3).
        assert_eq!(choose_in(&t, 128, 1024, 1024, false), Backend::Graphcore);
        assert_eq!(choose_in(&t, 600, 1024, 1024, false), Backend::CublasLt);
        // TF32 looks at TF32 entries only.
        assert_eq!(choose_in(&t, 4096, 4096, 4096, true), Backend::Graphcore);
        // A tie goes to the first listed.
        assert_eq!(choose_in(&t, 256, 1024, 1024, false), Backend::Graphcore);
    }

    /// What the C layer dispatches per layer of an MLP: `mlp_layer_io`
    /// gives each layer's input and output exactly when `mlp`'s calls are
    /// one `linear` per layer on them, in order.
    #[test]
    fn mlp_layer_io_names_the_per_layer_forms_linear_calls() {
        use crate::ops::{linear, mlp, mlp_layer_io, mlp_workspace_bytes, MlpForm, MlpLayer};
        let layers = [
            MlpLayer {
                w: 0x10_0000,
                b: 0x20_0000,
                inputs: 64,
                outputs: 128,
                relu: true,
            },
            MlpLayer {
                w: 0x30_0000,
                b: 0,
                inputs: 128,
                outputs: 96,
                relu: true,
            },
            MlpLayer {
                w: 0x40_0000,
                b: 0x50_0000,
                inputs: 96,
                outputs: 10,
                relu: false,
            },
        ];
        let (y, x, ws) = (0x100_0000u64, 0x200_0000u64, 0x300_0000u64);
        for (rows, form) in [
            (1024, MlpForm::PerLayer),
            (1024, MlpForm::FusedAlways),
            (4, MlpForm::PerLayer),
            (600, MlpForm::Fused),
        ] {
            let bytes = mlp_workspace_bytes(rows, &layers);
            let calls = mlp(y, x, ws, bytes, rows, &layers, form, false, 132, true).unwrap();
            let io = mlp_layer_io(y, x, ws, bytes, rows, &layers, form, false, 132)
                .unwrap()
                .expect("the per-layer form");
            assert_eq!(io.len(), layers.len());
            assert_eq!((io[0].0, io[2].1), (x, y));
            for (i, (l, &(input, output))) in layers.iter().zip(&io).enumerate() {
                let want = linear(
                    output, input, l.w, l.b, rows, l.outputs, l.inputs, l.relu, 132, true,
                );
                assert_eq!(calls[i], want.unwrap(), "layer {i}, {rows} rows, {form:?}");
            }
        }
        // Fused: no per-layer io.
        let bytes = mlp_workspace_bytes(4, &layers);
        assert_eq!(
            mlp_layer_io(
                y,
                x,
                ws,
                bytes,
                4,
                &layers,
                MlpForm::FusedAlways,
                false,
                132
            )
            .unwrap(),
            None
        );
        // Bad arguments are refused as `mlp` refuses them.
        assert!(mlp_layer_io(y, x, ws, 16, 1024, &layers, MlpForm::PerLayer, false, 132).is_err());
    }

    /// The training step's GEMM path keeps dY where `linear_mse_step_grad`
    /// says: its first call is the forward `linear` into it; the small-batch
    /// path has none.
    #[test]
    fn linear_mse_step_grad_names_the_gemm_paths_gradient() {
        use crate::ops::{
            linear, linear_mse_step, linear_mse_step_grad, linear_mse_step_workspace_bytes,
            LinearMseStep,
        };
        for (rows, want_gemm) in [(1024u32, true), (8, false)] {
            let step = LinearMseStep {
                w: 0x10_0000,
                b: 0x20_0000,
                x: 0x30_0000,
                target: 0x40_0000,
                loss: 0x50_0000,
                rows,
                inputs: 256,
                outputs: 128,
                grad_scale: 1.0,
                lr: 0.01,
            };
            let ws = 0x100_0000;
            let bytes = linear_mse_step_workspace_bytes(rows, 256, 128, 132, true);
            let calls = linear_mse_step(&step, ws, bytes, 132, true).unwrap();
            let grad = linear_mse_step_grad(&step, ws, 132, true);
            assert_eq!(grad.is_some(), want_gemm, "{rows} rows");
            if let Some(grad) = grad {
                assert_eq!(calls.len(), 3);
                assert!(grad >= ws && grad + rows as u64 * 128 * 4 <= ws + bytes);
                let fwd = linear(
                    grad, step.x, step.w, step.b, rows, 128, 256, false, 132, true,
                );
                assert_eq!(calls[0], fwd.unwrap());
            }
        }
    }

    /// The two-layer step's per-layer form keeps h, dP and dH where
    /// `mlp2_mse_step_buffers` says: its GEMM calls are the linear layers
    /// and the input gradient on them; the fused form has none.
    #[test]
    fn mlp2_mse_step_buffers_name_the_per_layer_forms_buffers() {
        use crate::ops::{
            linear, linear_backward_input, mlp2_mse_step, mlp2_mse_step_buffers,
            mlp2_mse_step_workspace_bytes, Mlp2MseStep,
        };
        for ((m, k0, k1, k2), per_layer) in [
            ((1024u32, 1024u32, 1024u32, 512u32), true),
            ((64, 128, 128, 10), false),
        ] {
            let step = Mlp2MseStep {
                w1: 0x1000_0000,
                b1: 0x2000_0000,
                w2: 0x3000_0000,
                b2: 0x4000_0000,
                x: 0x5000_0000,
                target: 0x6000_0000,
                loss: 0x7000_0000,
                rows: m,
                inputs: k0,
                hidden: k1,
                outputs: k2,
                grad_scale: 1.0,
                lr: 0.01,
            };
            let ws = 0x1_0000_0000;
            let bytes = mlp2_mse_step_workspace_bytes(m, k1, k2, 132);
            let calls = mlp2_mse_step(&step, ws, bytes, 132, true).unwrap();
            let buffers = mlp2_mse_step_buffers(&step, ws, 132);
            assert_eq!(buffers.is_some(), per_layer, "{m} rows");
            let Some([h, dp, dh]) = buffers else { continue };
            assert_eq!(calls.len(), 7);
            let (x, w1, b1, w2, b2) = (step.x, step.w1, step.b1, step.w2, step.b2);
            assert_eq!(
                calls[0],
                linear(h, x, w1, b1, m, k1, k0, true, 132, true).unwrap()
            );
            assert_eq!(
                calls[1],
                linear(dp, h, w2, b2, m, k2, k1, false, 132, true).unwrap()
            );
            assert_eq!(
                calls[3],
                linear_backward_input(dh, dp, w2, m, k2, k1, 132, true).unwrap()
            );
            for b in [h, dp, dh] {
                assert!(b >= ws && b < ws + bytes);
            }
        }
    }

    #[test]
    fn bad_lines_are_refused_with_their_number() {
        for (text, what) in [
            ("1 2 3 0", "expected"),
            ("1 2 3 0 cublas", "winner"),
            ("1 2 3 2 graphcore", "tf32"),
            ("0 2 3 0 graphcore", "positive"),
            ("x 2 3 0 graphcore", "positive"),
            ("1 2 3 0 graphcore extra", "expected"),
        ] {
            let e = parse_dispatch(&format!("# ok\n{text}\n")).unwrap_err();
            assert!(e.starts_with("line 2:") && e.contains(what), "{text}: {e}");
        }
    }
}
