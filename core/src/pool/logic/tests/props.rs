//! Model-based property tests: random sequences of operations (alloc, free,
//! begin, end, abort, release, trim, and refused ones) run through the
//! pool's reference model (`pool::model`, shared with the fuzz target
//! `pool_ops`), which checks the allocator after every step.

use proptest::prelude::*;

use super::{small, G};
use crate::pool::logic::model::{Addr, Begin, Model, Op, Who};
use crate::pool::logic::PoolConfig;

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 1u64..=1024,
        4 => 1u64..=G,
        2 => 1u64..=3 * G,
        1 => prop_oneof![Just(0), 64 * G..=65 * G, u64::MAX - 1024..=u64::MAX],
    ]
}

fn who() -> impl Strategy<Value = Who> {
    prop_oneof![
        3 => Just(Who::Eager),
        6 => any::<usize>().prop_map(Who::Open),
        1 => any::<u8>().prop_map(Who::Unknown),
    ]
}

fn addr() -> impl Strategy<Value = Addr> {
    prop_oneof![
        3 => (0u64..70 * G).prop_map(Addr::At),
        2 => (any::<usize>(), any::<u64>()).prop_map(|(pick, delta)| Addr::Inside { pick, delta }),
        1 => (0u64..1 << 20).prop_map(Addr::Past),
        1 => (0u64..1024).prop_map(Addr::Top),
    ]
}

fn begin() -> impl Strategy<Value = Begin> {
    prop_oneof![
        4 => Just(Begin::Fresh),
        2 => any::<u64>().prop_map(Begin::Reuse),
        1 => Just(Begin::Zero),
        1 => any::<usize>().prop_map(Begin::Open),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        16 => (size(), who()).prop_map(|(size, who)| Op::Alloc { size, who }),
        2 => (size(), who()).prop_map(|(size, who)| Op::DropPlan { size, who }),
        12 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        2 => addr().prop_map(Op::FreeBogus),
        4 => begin().prop_map(Op::Begin),
        2 => any::<usize>().prop_map(|pick| Op::End { pick }),
        2 => any::<usize>().prop_map(|pick| Op::Abort { pick }),
        2 => any::<usize>().prop_map(|pick| Op::Release { pick }),
        2 => Just(Op::Trim),
        1 => any::<u8>().prop_map(Op::EndUnknown),
        1 => any::<u8>().prop_map(Op::AbortUnknown),
        1 => Just(Op::ResetPeaks),
        1 => addr().prop_map(Op::Lookup),
    ]
}

/// A configuration: usually valid (pages of 256 B .. 64 KiB, up to 64 of
/// them), sometimes breaking one rule.
fn config() -> impl Strategy<Value = PoolConfig> {
    (8u32..=16).prop_flat_map(|gshift| {
        let g = 1u64 << gshift;
        (
            0..=gshift,
            0u64..=64,
            0..=128 * g,
            prop_oneof![Just(u64::MAX), 0..=128 * g],
            0u8..16,
        )
            .prop_map(move |(ashift, pages, initial_bytes, max_bytes, broken)| {
                let mut cfg = PoolConfig {
                    granularity: g,
                    alignment: 1 << ashift,
                    va_bytes: pages * g,
                    initial_bytes,
                    max_bytes,
                };
                match broken {
                    0 => cfg.alignment = 0,
                    1 => cfg.alignment = 3 << ashift.min(8),
                    2 => cfg.alignment = g << 1,
                    3 => cfg.granularity += 256,
                    4 => cfg.va_bytes += 1,
                    _ => {}
                }
                cfg
            })
    })
}

/// Runs `ops` on a pool of `cfg` through the model, then tears it down.
/// Returns whether `cfg` was accepted.
fn run(cfg: PoolConfig, ops: Vec<Op>) -> Result<bool, TestCaseError> {
    let Some(mut m) = Model::new(cfg).map_err(TestCaseError::fail)? else {
        return Ok(false);
    };
    for op in ops {
        m.apply(op).map_err(TestCaseError::fail)?;
    }
    m.teardown().map_err(TestCaseError::fail)?;
    Ok(true)
}

/// Operations per sequence, at most (fewer under Miri, which interprets
/// every step).
const OPS: usize = if cfg!(miri) { 40 } else { 200 };

proptest! {
    #![proptest_config(super::proptest_config(256))]

    #[test]
    fn random_sequences_keep_every_rule(
        initial in 0u64..6 * G,
        cap in prop_oneof![Just(u64::MAX), (6 * G..40 * G)],
        ops in prop::collection::vec(op(), 1..OPS),
    ) {
        prop_assert!(run(small(initial, cap), ops)?, "the small config was refused");
    }

    #[test]
    fn random_configs_keep_every_rule(
        cfg in config(),
        ops in prop::collection::vec(op(), 1..OPS),
    ) {
        run(cfg, ops)?;
    }
}
