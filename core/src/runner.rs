//! Bucketed graphs: one graph per batch size, all sharing one pool, as the
//! PyTorch notes serve an MLP with `torch.cuda.graph(g, pool=…)` per batch
//! size. A replay picks the smallest bucket that holds the rows asked for.

use crate::context::Context;
use crate::device_pool::{Pool, PoolOptions};
use crate::driver::stream::CaptureMode;
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::exec::Exec;
use crate::stream::Stream;
use std::time::Instant;

/// One bucket: its batch size, its graph, and what capturing it cost.
pub struct Bucket {
    /// Rows the graph was captured for.
    pub batch: u32,
    exec: Exec,
    /// Microseconds from the start of its capture to its uploaded exec.
    pub capture_us: f64,
    /// Nodes in its graph.
    pub node_count: usize,
    /// Pool bytes its capture allocated and still held when it ended.
    pub pool_bytes: u64,
}

/// A family of graphs keyed by batch size, sharing one pool.
pub struct Runner {
    pool: Pool,
    stream: Stream,
    buckets: Vec<Bucket>,
}

/// Records one bucket's work on the stream it is given (graphcore's kernels,
/// your own, cuBLAS...): called for the warm-up runs, then under capture.
pub type Record<'a> = dyn FnMut(&Stream, u32) -> Result<()> + 'a;

impl Runner {
    /// A runner on `ctx` whose graphs allocate from `pool` (a new pool when
    /// `None`).
    pub fn new(ctx: &Context, pool: Option<&Pool>) -> Result<Runner> {
        let pool = match pool {
            Some(p) => {
                ensure_arg!(p.context().same(ctx), "the pool belongs to another context");
                p.clone()
            }
            None => Pool::new(ctx, PoolOptions::default())?,
        };
        Ok(Runner {
            pool,
            stream: Stream::new(ctx)?,
            buckets: Vec::new(),
        })
    }

    /// The runner's side stream (warm-ups and captures run on it).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The pool the graphs share.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The buckets, smallest first.
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// Warms each bucket up `warmup` times eagerly on the runner's side
    /// stream (as the PyTorch notes do before capturing), then captures the
    /// buckets largest first into the shared pool, and instantiates and
    /// uploads them. If `record` fails, or breaks a capture, nothing is
    /// added, the graphs of this call are gone, and the pool has given back
    /// the memory this call mapped (it is trimmed).
    pub fn capture(&mut self, batches: &[u32], record: &mut Record, warmup: u32) -> Result<()> {
        ensure_arg!(!batches.is_empty(), "no buckets given");
        let mut order: Vec<u32> = batches.to_vec();
        order.sort_unstable_by(|a, b| b.cmp(a));
        for (i, &b) in order.iter().enumerate() {
            ensure_arg!(b > 0, "bucket sizes must be at least 1");
            ensure_arg!(
                !order[..i].contains(&b) && !self.buckets.iter().any(|x| x.batch == b),
                "bucket {b} is given twice"
            );
        }
        let reserved_before = self.pool.stats().reserved_bytes;
        match self.capture_all(&order, record, warmup) {
            Ok(mut new) => {
                self.buckets.append(&mut new);
                self.buckets.sort_by_key(|b| b.batch);
                Ok(())
            }
            Err(e) => {
                // The partial graphs are dropped by now; give back growth.
                if self.pool.stats().reserved_bytes > reserved_before {
                    let _ = self.pool.trim();
                }
                Err(e)
            }
        }
    }

    fn capture_all(&self, order: &[u32], record: &mut Record, warmup: u32) -> Result<Vec<Bucket>> {
        let s = &self.stream;
        for &b in order {
            for _ in 0..warmup {
                record(s, b).map_err(|e| e.context(&format!("warm-up of bucket {b}")))?;
            }
        }
        s.synchronize()?;
        let mut out = Vec::with_capacity(order.len());
        for &b in order {
            let t = Instant::now();
            s.begin_capture(Some(&self.pool), CaptureMode::ThreadLocal)?;
            if let Err(e) = record(s, b) {
                // End (and discard) the capture; report the record error.
                let _ = s.end_capture();
                return Err(e.context(&format!("recording bucket {b}")));
            }
            let graph = s
                .end_capture()
                .map_err(|e| e.context(&format!("capturing bucket {b}")))?;
            let exec = Exec::new(&graph, 0)?;
            exec.upload(s)?;
            s.synchronize()?;
            out.push(Bucket {
                batch: b,
                capture_us: t.elapsed().as_secs_f64() * 1e6,
                node_count: graph.node_count(),
                pool_bytes: graph.pool_bytes(),
                exec,
            });
        }
        Ok(out)
    }

    /// Replays the smallest bucket of at least `rows` rows on `stream` and
    /// returns its batch size (the caller pads to it). More rows than the
    /// largest bucket is [`ErrorKind::NoBucket`]: fall back to eager work.
    pub fn replay(&self, rows: u32, stream: &Stream) -> Result<u32> {
        ensure_arg!(rows > 0, "`rows` is 0");
        let b = self.bucket_for(rows)?;
        b.exec.launch(stream)?;
        Ok(b.batch)
    }

    /// The bucket a replay of `rows` rows uses.
    pub fn bucket_for(&self, rows: u32) -> Result<&Bucket> {
        self.buckets
            .iter()
            .find(|b| b.batch >= rows)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NoBucket,
                    match self.buckets.last() {
                        Some(l) => format!(
                            "{rows} rows is more than the largest bucket ({}): run it eagerly",
                            l.batch
                        ),
                        None => "the runner has no buckets yet (gc_runner_capture)".into(),
                    },
                )
            })
    }
}
