//! The fuzz targets without libFuzzer, on stable Rust: every committed
//! corpus input (fuzz/corpus/<target>/*) and every saved crash
//! (fuzz/artifacts/<target>/*, if any) is replayed, then random inputs
//! (splitmix64; GC_FUZZ_RANDOM inputs per target, default 2000, or as many
//! as fit in GC_FUZZ_SECS seconds; the seed is printed, and GC_FUZZ_SEED
//! replays a run) are run. Any model mismatch
//! or panic fails the test and names the input.

use graphcore_fuzz::SplitMix64;
use std::path::{Path, PathBuf};

type Target = fn(&[u8]) -> Result<(), String>;

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn replay(name: &str, target: Target) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = files(&root.join("corpus").join(name));
    assert!(!corpus.is_empty(), "fuzz/corpus/{name} has no seed inputs");
    let artifacts = files(&root.join("artifacts").join(name));
    for f in corpus.iter().chain(&artifacts) {
        let data = std::fs::read(f).unwrap();
        if let Err(e) = target(&data) {
            panic!("{}: {e}", f.display());
        }
    }
    let n: usize = std::env::var("GC_FUZZ_RANDOM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let seed: u64 = std::env::var("GC_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let mut rng = SplitMix64(seed);
    // GC_FUZZ_SECS bounds the run by time instead of by count.
    let secs: Option<f64> = std::env::var("GC_FUZZ_SECS")
        .ok()
        .and_then(|v| v.parse().ok());
    let start = std::time::Instant::now();
    let mut i = 0usize;
    while match secs {
        Some(s) => start.elapsed().as_secs_f64() < s,
        None => i < n,
    } {
        i += 1;
        let len = (rng.next_u64() % 2048) as usize;
        let data = rng.bytes(len);
        if let Err(e) = target(&data) {
            panic!("{name}: random input {i} of GC_FUZZ_SEED={seed} fails: {e}");
        }
    }
    println!(
        "{name}: {} corpus inputs, {} artifacts, {i} random inputs in {:.1} s (GC_FUZZ_SEED={seed})",
        corpus.len(),
        artifacts.len(),
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn pool_ops() {
    replay("pool_ops", graphcore_fuzz::pool::run);
}

#[test]
fn graph_ops() {
    replay("graph_ops", graphcore_fuzz::graph::run);
}
