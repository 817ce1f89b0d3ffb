//! Fragmentation of the pool's placement on a seeded random trace.
//!
//! 100,000 operations: an allocation with probability 0.5 (always when
//! nothing is live) of a log-uniform size from 256 B to 64 MiB, otherwise the
//! free of a uniformly chosen live block. Prints peak allocated, peak
//! reserved and their ratio (target <= 1.15) and writes them to
//! perf/results/pool_fragmentation.json. Pure CPU: no GPU involved.
//!
//! Run: `cargo bench --bench pool_fragmentation`.

use std::time::Instant;

use graphcore_core::pool::{Allocator, Owner, PoolConfig};

const SEED: u64 = 0x6772_6170_6863_6f72; // "graphcor"
const OPS: usize = 100_000;

/// splitmix64: a tiny seeded PRNG (the same as the core test's).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() {
    let cfg = PoolConfig::default();
    let (mut a, _) = Allocator::new(cfg).expect("default config");
    let mut rng = SplitMix64(SEED);
    let (lo, hi) = ((256f64).ln(), ((64u64 << 20) as f64).ln());
    let mut live: Vec<u64> = Vec::new();
    let (mut allocs, mut max_live) = (0u64, 0usize);
    let t = Instant::now();
    for _ in 0..OPS {
        if live.is_empty() || rng.unit() < 0.5 {
            let size = (lo + rng.unit() * (hi - lo)).exp() as u64;
            live.push(a.alloc(size, Owner::Eager).expect("allocation"));
            allocs += 1;
            max_live = max_live.max(live.len());
        } else {
            let i = (rng.next() % live.len() as u64) as usize;
            a.free(live.swap_remove(i)).expect("free");
        }
    }
    let elapsed = t.elapsed();
    a.check_invariants().expect("invariants");
    let s = a.stats();
    let ratio = s.peak_reserved_bytes as f64 / s.peak_allocated_bytes as f64;
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    println!("pool fragmentation: {OPS} ops ({allocs} allocations, up to {max_live} live), seed {SEED:#x}, {:.1} ms", elapsed.as_secs_f64() * 1e3);
    println!(
        "  peak allocated  {:>12} B ({:.1} MiB)",
        s.peak_allocated_bytes,
        mib(s.peak_allocated_bytes)
    );
    println!(
        "  peak reserved   {:>12} B ({:.1} MiB)",
        s.peak_reserved_bytes,
        mib(s.peak_reserved_bytes)
    );
    println!("  ratio           {ratio:.4} (target <= 1.15)");
    let json = format!(
        "{{\n  \"bench\": \"pool_fragmentation\",\n  \"ops\": {OPS},\n  \"seed\": {SEED},\n  \
         \"sizes\": \"log-uniform 256 B ..= 64 MiB\",\n  \"granularity\": {},\n  \
         \"peak_allocated_bytes\": {},\n  \"peak_reserved_bytes\": {},\n  \"ratio\": {ratio:.4}\n}}\n",
        cfg.granularity, s.peak_allocated_bytes, s.peak_reserved_bytes
    );
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/perf/results/pool_fragmentation.json"
    );
    std::fs::write(path, json).expect("write results");
    println!("  written to perf/results/pool_fragmentation.json");
}
