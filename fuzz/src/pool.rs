//! The pool allocator against its reference model.
//!
//! The model (`graphcore_core::pool::model`, shared with the property tests
//! in core/src/pool/logic/tests/props.rs) runs typed operations and checks the
//! allocator after each; its docs list the rules. This target decodes the
//! bytes into a random configuration (usually valid, sometimes breaking one
//! rule) and a sequence of those operations (sizes up to `u64::MAX`,
//! captures, graphs, trims, bogus frees, lookups), then tears the pool
//! down. How many bytes an operation reads may depend on the model's state
//! (how many blocks are live, captures open, graphs live), as it did before
//! the model moved: the committed corpus and artifacts keep their meaning.

use crate::Input;
use graphcore_core::pool::model::{Addr, Begin, Model, Op, Who};
use graphcore_core::pool::PoolConfig;

/// Most operations one input runs (keeps each execution short).
const MAX_OPS: usize = 400;

/// Rules listed in `GC_FUZZ_SKIP` (comma-separated), whose checks are off.
/// For triage only: it lets fuzzing go on past a known, reported defect to
/// find the next one. CI never sets it.
fn skipped() -> Vec<String> {
    static SKIP: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SKIP.get_or_init(|| {
        std::env::var("GC_FUZZ_SKIP")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
    .clone()
}

/// Runs the operations `data` encodes; `Err` describes the first mismatch.
pub fn run(data: &[u8]) -> Result<(), String> {
    let mut input = Input::new(data);
    let Some(mut m) = Model::new(config(&mut input))? else {
        return Ok(());
    };
    m.skip(skipped());
    let mut ops = 0;
    while !input.is_empty() && ops < MAX_OPS {
        ops += 1;
        let op = op(&mut input, &m);
        m.apply(op)?;
    }
    m.teardown()
}

/// A configuration from the input: usually valid, sometimes breaking one
/// rule.
fn config(input: &mut Input) -> PoolConfig {
    let gshift = 8 + input.below(9) as u32; // 256 B .. 64 KiB pages
    let mut granularity = 1u64 << gshift;
    let mut alignment = 1u64 << input.below(gshift as u64 + 1);
    match input.below(16) {
        0 => alignment = 0,
        1 => alignment = 3 << input.below(8),
        2 => alignment = granularity << 1, // a power of two above the page
        3 => granularity += 256,           // not a power of two
        _ => {}
    }
    let va_pages = match input.below(8) {
        0 => 0,
        1 => 1,
        _ => 1 + input.below(64),
    };
    let mut va_bytes = va_pages.wrapping_mul(granularity);
    if input.below(16) == 0 {
        va_bytes += 1;
    }
    let initial_bytes = match input.below(4) {
        0 | 1 => 0,
        2 => input.below(va_bytes.max(1) + 1),
        _ => input.below(va_bytes.saturating_mul(2).max(1)),
    };
    let max_bytes = match input.below(4) {
        0 | 1 => u64::MAX,
        _ => input.below(va_bytes.max(1).saturating_mul(2)),
    };
    PoolConfig {
        granularity,
        alignment,
        va_bytes,
        initial_bytes,
        max_bytes,
    }
}

/// The next operation.
fn op(input: &mut Input, m: &Model) -> Op {
    let pick = |input: &mut Input, n: usize| input.below(n as u64) as usize;
    match input.below(20) {
        0..=6 => {
            let size = size(input, m);
            Op::Alloc {
                size,
                who: who(input),
            }
        }
        7 => {
            let size = size(input, m);
            Op::DropPlan {
                size,
                who: who(input),
            }
        }
        8..=11 => match m.live_blocks() {
            0 => Op::Free { pick: 0 },
            n => Op::Free {
                pick: pick(input, n),
            },
        },
        12 => Op::FreeBogus(addr(input, m)),
        13 => Op::Begin(begin(input, m)),
        14 => {
            let n = m.open_captures();
            if n == 0 || input.below(8) == 0 {
                Op::EndUnknown(input.u8())
            } else {
                Op::End {
                    pick: pick(input, n),
                }
            }
        }
        15 => match m.open_captures() {
            0 => Op::AbortUnknown(input.u8()),
            n => Op::Abort {
                pick: pick(input, n),
            },
        },
        16 => match m.live_graphs() {
            0 => Op::Release { pick: 0 },
            n => Op::Release {
                pick: pick(input, n),
            },
        },
        17 => Op::Trim,
        18 => Op::ResetPeaks,
        _ => Op::Lookup(addr(input, m)),
    }
}

/// A request size: small, page-sized, range-sized, or extreme.
fn size(input: &mut Input, m: &Model) -> u64 {
    let cfg = m.config();
    let (g, va, align) = (cfg.granularity, cfg.va_bytes, cfg.alignment);
    match input.below(16) {
        0 => 0,
        1 => u64::MAX - input.below(2 * align),
        2 => input.u64(),
        3 => 1 + input.below(va.saturating_mul(2)),
        4..=8 => 1 + input.below((4 * align).max(4096)),
        _ => 1 + input.below(3 * g),
    }
}

/// An owner: eager, an open capture, or (one in 16) one that is not open.
fn who(input: &mut Input) -> Who {
    let who = input.u8();
    if who % 16 == 15 {
        Who::Unknown(who)
    } else if who.is_multiple_of(3) {
        Who::Eager
    } else {
        Who::Open(who as usize)
    }
}

/// An offset that is not the start of a live block: inside one, past the
/// range, or anywhere.
fn addr(input: &mut Input, m: &Model) -> Addr {
    match input.below(4) {
        0 if m.live_blocks() > 0 => {
            let i = input.below(m.live_blocks() as u64) as usize;
            let (_, size) = m.live_block(i).unwrap();
            Addr::Inside {
                pick: i,
                delta: input.below(size),
            }
        }
        1 => Addr::Past(input.below(1 << 20)),
        2 => Addr::Top(input.below(1 << 10)),
        _ => Addr::At(input.below(m.config().va_bytes + 1)),
    }
}

/// A capture id for `begin_capture`: 0, an open one, a fresh one, or
/// (sometimes) one of a capture that already closed.
fn begin(input: &mut Input, m: &Model) -> Begin {
    match input.below(8) {
        0 => Begin::Zero,
        1 if m.open_captures() > 0 => Begin::Open(input.below(m.open_captures() as u64) as usize),
        _ => {
            if input.below(4) == 0 && m.last_id() > 1 {
                Begin::Reuse(input.below(m.last_id() - 1))
            } else {
                Begin::Fresh
            }
        }
    }
}
