//! Tests of the pool logic: unit tests per rule and error, model-based
//! property tests, and the fragmentation trace.

mod props;
mod trace;
mod unit;

pub(crate) use super::model::layout;
use super::{Allocator, Owner, PoolConfig};

/// The property tests' config: `cases` natively; under Miri (which
/// interprets every step, about a thousand times slower: 4 cases took 85
/// to 105 s per test on the 2-core VM) two cases, to look for undefined
/// behaviour, and no regression files (Miri's isolation has no file
/// system).
pub(crate) fn proptest_config(cases: u32) -> proptest::prelude::ProptestConfig {
    let base = proptest::prelude::ProptestConfig::default();
    if cfg!(miri) {
        proptest::prelude::ProptestConfig {
            cases: 2,
            failure_persistence: None,
            ..base
        }
    } else {
        proptest::prelude::ProptestConfig { cases, ..base }
    }
}

/// Small pages so tests cross page boundaries cheaply.
pub(crate) const G: u64 = 4096;

/// A config with 4 KiB pages, 256-byte alignment and 64 pages of range.
pub(crate) fn small(initial: u64, max: u64) -> PoolConfig {
    PoolConfig {
        granularity: G,
        alignment: 256,
        va_bytes: 64 * G,
        initial_bytes: initial,
        max_bytes: max,
    }
}

/// A new pool with the small config.
pub(crate) fn pool(initial: u64, max: u64) -> Allocator {
    Allocator::new(small(initial, max)).expect("valid config").0
}

/// Plans and commits, checking invariants; panics on refusal.
pub(crate) fn alloc(a: &mut Allocator, size: u64, owner: Owner) -> u64 {
    let plan = a.plan_alloc(size, owner).expect("allocation");
    let off = a.commit_alloc(plan);
    a.check_invariants().unwrap();
    off
}
