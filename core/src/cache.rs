//! A graph cache with a budget: graphs keyed by the caller's bytes (a shape
//! signature), recorded on a miss by the caller's record function, all in
//! one pool of the cache's own, evicted least recently used first when the
//! cache holds more than its entries or bytes allow.
//!
//! Bytes of an entry: what its graph keeps of the pool plus an estimate of
//! its exec's own size. The cache's total is exact for the pool part: the
//! pool's pages held by live graphs (shared pages counted once), plus the
//! entries' exec estimates ([`CacheOptions::node_bytes`] per node plus
//! [`EXEC_BASE_BYTES`]; CUDA does not say what an instantiated graph costs).
//!
//! Recency: lookups never write shared state but the entry's own "last
//! used" word, and only when it changes. The clock advances at each miss,
//! so the least recently used entry is exact across misses; among entries
//! used since the same miss, the one recorded first goes first.

use crate::arg::Binding;
use crate::context::Context;
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::exec::Exec;
use crate::lock::lock;
use crate::pool::{Pool, PoolOptions};
use crate::runner::{record_graph, trim_growth, Fallback};
use crate::stream::Stream;
use std::cell::{Cell, UnsafeCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// What an exec costs besides its nodes, in the byte budget's estimate.
pub const EXEC_BASE_BYTES: u64 = 16 << 10;

/// The default estimate of an exec's bytes per node: NVIDIA's CUDASTF caps
/// its cache of executable graphs at about 10 KB per kernel node.
pub const DEFAULT_NODE_BYTES: u64 = 10 << 10;

/// How to make a cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheOptions {
    /// Most entries held (at least 1).
    pub max_entries: usize,
    /// Most bytes held (at least 1): the pool's pages held by the entries'
    /// graphs plus their execs' estimated size. While a new entry is
    /// recorded the pool may hold more for a moment; once the launch that
    /// added it returns (its evictions made, the pool trimmed), the cache
    /// is within the budget.
    pub max_bytes: u64,
    /// Eager runs of the record function on the cache's stream before each
    /// capture (as the PyTorch notes warm up before capturing).
    pub warmup: u32,
    /// Estimated bytes of an exec per node (0: [`DEFAULT_NODE_BYTES`]).
    pub node_bytes: u64,
    /// The fallback flags.
    pub fallback: Fallback,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            max_entries: 64,
            max_bytes: 1 << 30,
            warmup: 1,
            node_bytes: DEFAULT_NODE_BYTES,
            fallback: Fallback::default(),
        }
    }
}

/// Records one entry's work on the stream given, for the key given:
/// graphcore's kernels, your own, cuBLAS... Called for warm-ups and under
/// capture on the cache's stream, and on the caller's stream for eager runs.
pub type CacheRecord<'a> = dyn FnMut(&Stream, &[u8]) -> Result<()> + 'a;

/// What a [`Cache::launch`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The key's graph was cached and launched.
    Hit,
    /// The key's graph was recorded, then launched.
    Miss,
    /// The record function ran eagerly on the caller's stream (fallback).
    Eager,
}

/// One cached graph.
struct Entry {
    exec: Exec,
    /// The cache's clock when it was last used.
    last_used: AtomicU64,
    /// The clock when it was recorded (breaks ties of `last_used`).
    recorded: u64,
    info: EntryInfo,
}

/// What an entry costs and holds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EntryInfo {
    /// Nodes in its graph.
    pub node_count: usize,
    /// The most pool bytes its capture had allocated at once (what the
    /// graph needs while it runs; pages may be shared with other entries).
    pub pool_bytes: u64,
    /// Its exec's estimated size.
    pub exec_bytes: u64,
    /// Microseconds from the start of its capture to its uploaded exec.
    pub capture_us: f64,
}

impl EntryInfo {
    /// The entry's bytes: pool bytes plus the exec estimate.
    pub fn bytes(&self) -> u64 {
        self.pool_bytes + self.exec_bytes
    }
}

/// A cache's counters and totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Entries held.
    pub entries: usize,
    /// Launches whose key was cached.
    pub hits: u64,
    /// Launches whose key was recorded (and launched).
    pub misses: u64,
    /// Entries evicted to stay within the budget.
    pub evictions: u64,
    /// Eager runs made instead of replays (fallback).
    pub eager_runs: u64,
    /// Recordings that failed (the record function failed, broke its
    /// capture, or its graph alone was over the budget).
    pub failed_records: u64,
    /// Pool bytes held by the entries' graphs (pages, shared ones once).
    pub pool_bytes: u64,
    /// The entries' exec estimates, summed.
    pub exec_bytes: u64,
}

impl CacheStats {
    /// The bytes the budget counts: `pool_bytes + exec_bytes`.
    pub fn bytes(&self) -> u64 {
        self.pool_bytes + self.exec_bytes
    }
}

/// A fast hash of short keys (the FxHash mix: 8 bytes at a time).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        self.0 = h;
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Shards of the map's lock and of the hit counter.
const SHARDS: usize = 16;

/// A value on a cache line of its own.
#[derive(Default)]
#[repr(align(128))]
struct Padded<T>(T);

/// This thread's shard (threads take them in turn).
#[inline]
fn shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SHARD.with(|s| {
        let v = s.get();
        if v < SHARDS {
            return v;
        }
        let v = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
        s.set(v);
        v
    })
}

/// A reader-writer lock for read-mostly data read from many threads: a
/// reader takes the read lock of its thread's shard only, so readers on
/// different shards share no written cache line; a writer takes every
/// shard's write lock, in order.
struct Sharded<T> {
    locks: [Padded<RwLock<()>>; SHARDS],
    value: UnsafeCell<T>,
}

// SAFETY: the value is read only under a shard's read lock and written
// only under every shard's write lock, so `&Sharded<T>` gives `&T` to
// several threads at once (T: Sync) and `&mut T` to one at a time (T: Send).
unsafe impl<T: Send + Sync> Sync for Sharded<T> {}

/// A read of a [`Sharded`] value.
struct ReadGuard<'a, T> {
    _lock: RwLockReadGuard<'a, ()>,
    value: &'a T,
}

impl<T> std::ops::Deref for ReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

/// A write of a [`Sharded`] value.
struct WriteGuard<'a, T> {
    _locks: Vec<RwLockWriteGuard<'a, ()>>,
    value: &'a mut T,
}

impl<T> std::ops::Deref for WriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> std::ops::DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

impl<T> Sharded<T> {
    fn new(value: T) -> Self {
        Sharded {
            locks: Default::default(),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    fn read(&self) -> ReadGuard<'_, T> {
        self.read_at(shard())
    }

    /// A read through shard `at` (the caller's [`shard`]).
    #[inline]
    fn read_at(&self, at: usize) -> ReadGuard<'_, T> {
        let lock = self.locks[at % SHARDS]
            .0
            .read()
            .unwrap_or_else(|e| e.into_inner());
        // SAFETY: a shard's read lock is held: no writer holds every write
        // lock, so nothing writes the value while the guard lives.
        let value = unsafe { &*self.value.get() };
        ReadGuard { _lock: lock, value }
    }

    fn write(&self) -> WriteGuard<'_, T> {
        let locks: Vec<_> = self
            .locks
            .iter()
            .map(|l| l.0.write().unwrap_or_else(|e| e.into_inner()))
            .collect();
        // SAFETY: every shard's write lock is held: no reader and no other
        // writer can reach the value while the guard lives.
        let value = unsafe { &mut *self.value.get() };
        WriteGuard {
            _locks: locks,
            value,
        }
    }
}

type Map<E = Entry> = HashMap<Box<[u8]>, E, BuildHasherDefault<KeyHasher>>;

/// Something with a "last used" word (an entry).
trait Recency {
    fn last_used(&self) -> &AtomicU64;
}

impl Recency for Entry {
    #[inline]
    fn last_used(&self) -> &AtomicU64 {
        &self.last_used
    }
}

/// The lookup of a hit: the entry of `key`, marked used at `clock`'s time
/// (its word written only when it changes), and counted in `hits`.
#[inline]
fn lookup<'m, E: Recency>(
    map: &'m Map<E>,
    key: &[u8],
    clock: &AtomicU64,
    hits: &AtomicU64,
) -> Option<&'m E> {
    let e = map.get(key)?;
    let now = clock.load(Ordering::Relaxed);
    let word = e.last_used();
    if word.load(Ordering::Relaxed) != now {
        word.store(now, Ordering::Relaxed);
    }
    hits.fetch_add(1, Ordering::Relaxed);
    Some(e)
}

/// A budgeted cache of graphs keyed by bytes, sharing one pool.
pub struct Cache {
    pool: Pool,
    stream: Stream,
    opts: RwLock<CacheOptions>,
    /// The fallback flags (bit 0 eager, bit 1 hard fail), read by every
    /// launch without a lock.
    fallback: AtomicU8,
    map: Sharded<Map>,
    /// Serializes recordings (they capture on the cache's one stream).
    recording: Mutex<()>,
    clock: AtomicU64,
    page_bytes: u64,
    /// Hits, one counter per shard (no shared write on a hit).
    hits: [Padded<AtomicU64>; SHARDS],
    misses: AtomicU64,
    evictions: AtomicU64,
    eager_runs: AtomicU64,
    failed_records: AtomicU64,
}

impl Cache {
    /// A cache on `ctx` with a pool and a stream of its own. A budget of 0
    /// entries or 0 bytes is [`ErrorKind::InvalidArgument`].
    pub fn new(ctx: &Context, opts: CacheOptions) -> Result<Cache> {
        check_budget(&opts)?;
        // One page mapped at creation tells the page size; trimmed at once.
        let pool = Pool::new(
            ctx,
            PoolOptions {
                initial_bytes: 1,
                max_bytes: 0,
            },
        )?;
        let page_bytes = pool.stats().reserved_bytes.max(1);
        // Best effort: refused while a capture is open in the context.
        let _ = pool.trim();
        Ok(Cache {
            pool,
            stream: Stream::new(ctx)?,
            opts: RwLock::new(fill_defaults(opts)),
            fallback: AtomicU8::new(fallback_bits(opts.fallback)),
            map: Sharded::new(Map::default()),
            recording: Mutex::new(()),
            clock: AtomicU64::new(1),
            page_bytes,
            hits: Default::default(),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            eager_runs: AtomicU64::new(0),
            failed_records: AtomicU64::new(0),
        })
    }

    /// The pool the entries share (record functions allocate from it).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The cache's stream (warm-ups and captures run on it).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The options in force.
    pub fn options(&self) -> CacheOptions {
        let mut o = *self.opts.read().unwrap_or_else(|e| e.into_inner());
        o.fallback = self.fallback();
        o
    }

    /// The fallback flags.
    pub fn fallback(&self) -> Fallback {
        let b = self.fallback.load(Ordering::Relaxed);
        Fallback {
            eager: b & 1 != 0,
            hard_fail: b & 2 != 0,
        }
    }

    /// Sets the fallback flags; they apply to later launches.
    pub fn set_fallback(&self, f: Fallback) {
        self.fallback.store(fallback_bits(f), Ordering::Relaxed);
    }

    /// Changes the budget: entries over it are evicted at once (least
    /// recently used first). A budget of 0 is refused and nothing changes.
    pub fn set_budget(&self, max_entries: usize, max_bytes: u64) -> Result<()> {
        let mut o = self.options();
        o.max_entries = max_entries;
        o.max_bytes = max_bytes;
        check_budget(&o)?;
        let _rec = lock(&self.recording);
        {
            let mut w = self.opts.write().unwrap_or_else(|e| e.into_inner());
            w.max_entries = max_entries;
            w.max_bytes = max_bytes;
        }
        self.enforce(None, &o)
    }

    /// Looks `key` up and launches its graph on `stream` with `bindings`
    /// (as [`Exec::launch_with`]; none for a plain launch). On a miss,
    /// `record` runs `warmup` times on the cache's stream, then once under
    /// capture into the cache's pool; the graph is instantiated, uploaded,
    /// added, and entries are evicted (least recently used first, never
    /// the new one) until the cache is within its budget; then it is
    /// launched. While the cache runs eagerly ([`Fallback::is_eager`]),
    /// `record` runs on `stream` instead and `bindings` are not applied
    /// (the record function works on the buffers it names itself).
    ///
    /// Errors, each leaving the cache as it was (no entry added, none
    /// evicted, the pool's growth given back): an empty key
    /// ([`ErrorKind::InvalidArgument`]); `record` failing (its error) or
    /// breaking its capture ([`ErrorKind::Capture`]); a graph over the
    /// budget on its own ([`ErrorKind::OutOfMemory`]); in hard-fail mode,
    /// an eager run ([`ErrorKind::InvalidState`]). A bad binding is
    /// refused as by [`Exec::launch_with`] (after a miss, the entry stays).
    pub fn launch(
        &self,
        key: &[u8],
        stream: &Stream,
        bindings: &[Binding],
        record: &mut CacheRecord,
    ) -> Result<Outcome> {
        ensure_arg!(
            !key.is_empty(),
            "`key` has length 0: a key needs at least one byte"
        );
        let fallback = self.fallback();
        if fallback.is_eager() {
            return self.run_eagerly(key, stream, &fallback, record);
        }
        if let Some(r) = self.try_hit(key, stream, bindings) {
            return r.map(|()| Outcome::Hit);
        }
        let opts = self.options();
        let _rec = lock(&self.recording);
        // Another thread may have recorded it meanwhile.
        if let Some(r) = self.try_hit(key, stream, bindings) {
            return r.map(|()| Outcome::Hit);
        }
        self.record(key, &opts, record)?;
        self.misses.fetch_add(1, Ordering::Relaxed);
        let map = self.map.read();
        match map.get(key) {
            Some(e) => e.exec.launch_with(stream, bindings).map(|()| Outcome::Miss),
            None => Err(Error::invalid_state(
                "the new entry was evicted before its launch (the budget shrank meanwhile)",
            )),
        }
    }

    /// The hot path of [`launch`](Self::launch), without a record
    /// function: launches `key`'s graph if it is cached
    /// (`Some(Outcome::Hit)`); `None` when the record function is needed
    /// (a miss, or the cache runs eagerly). An empty key is
    /// [`ErrorKind::InvalidArgument`].
    #[inline]
    pub fn launch_cached(
        &self,
        key: &[u8],
        stream: &Stream,
        bindings: &[Binding],
    ) -> Result<Option<Outcome>> {
        ensure_arg!(
            !key.is_empty(),
            "`key` has length 0: a key needs at least one byte"
        );
        if self.fallback().is_eager() {
            return Ok(None);
        }
        match self.try_hit(key, stream, bindings) {
            Some(r) => r.map(|()| Some(Outcome::Hit)),
            None => Ok(None),
        }
    }

    /// The hot path: a cached key's launch, or `None` on a miss (and in
    /// eager mode, where nothing is cached).
    #[inline]
    fn try_hit(&self, key: &[u8], stream: &Stream, bindings: &[Binding]) -> Option<Result<()>> {
        let at = shard();
        let map = self.map.read_at(at);
        let e = lookup(&map, key, &self.clock, &self.hits[at].0)?;
        Some(e.exec.launch_with(stream, bindings))
    }

    fn run_eagerly(
        &self,
        key: &[u8],
        stream: &Stream,
        fallback: &Fallback,
        record: &mut CacheRecord,
    ) -> Result<Outcome> {
        fallback.enter("the graph cache", &self.eager_runs)?;
        record(stream, key).map_err(|e| e.context("eager run of the record function"))?;
        Ok(Outcome::Eager)
    }

    /// Records `key`'s graph and adds it, then evicts to the budget (the
    /// caller holds the recording lock). On failure the cache is unchanged.
    fn record(&self, key: &[u8], opts: &CacheOptions, record: &mut CacheRecord) -> Result<()> {
        let reserved_before = self.pool.stats().reserved_bytes;
        let failed = |e: Error| {
            self.failed_records.fetch_add(1, Ordering::Relaxed);
            trim_growth(&self.pool, reserved_before);
            e
        };
        let s = &self.stream;
        let warm = (|| {
            for _ in 0..opts.warmup {
                record(s, key)?;
            }
            s.synchronize()
        })();
        warm.map_err(|e| failed(e.context("warm-up of a new cache entry")))?;
        let r = record_graph(s, &self.pool, "a new cache entry", |s| record(s, key))
            .map_err(&failed)?;
        let info = EntryInfo {
            node_count: r.node_count,
            pool_bytes: r.peak_bytes,
            exec_bytes: EXEC_BASE_BYTES + r.node_count as u64 * opts.node_bytes,
            capture_us: r.capture_us,
        };
        // Alone, the graph holds at least its peak's pages.
        let alone = r.peak_bytes.div_ceil(self.page_bytes) * self.page_bytes + info.exec_bytes;
        if alone > opts.max_bytes {
            let msg = format!(
                "the new entry needs at least {alone} bytes ({} pool bytes at its peak, in pages \
                 of {}, and an exec estimated at {} bytes for {} nodes), over the cache's budget \
                 of {} bytes",
                r.peak_bytes, self.page_bytes, info.exec_bytes, r.node_count, opts.max_bytes
            );
            drop(r);
            return Err(failed(Error::new(ErrorKind::OutOfMemory, msg)));
        }
        let now = self.clock.fetch_add(1, Ordering::Relaxed) + 1;
        let entry = Entry {
            exec: r.exec,
            last_used: AtomicU64::new(now),
            recorded: now,
            info,
        };
        self.map.write().insert(key.into(), entry);
        if let Err(e) = self.enforce(Some(key), opts) {
            self.failed_records.fetch_add(1, Ordering::Relaxed);
            return Err(e);
        }
        Ok(())
    }

    /// Evicts the least recently used entries (never `keep`) until the
    /// cache is within `opts`' budget, then gives free pages back to the
    /// driver (a trim, best effort: it waits for the device). If only `keep` is left and the
    /// cache is still over, `keep` goes too and this fails.
    fn enforce(&self, keep: Option<&[u8]>, opts: &CacheOptions) -> Result<()> {
        let result = loop {
            let st = self.stats();
            if st.entries <= opts.max_entries && st.bytes() <= opts.max_bytes {
                break Ok(());
            }
            let gone = {
                let mut map = self.map.write();
                let victim = map
                    .iter()
                    .filter(|(k, _)| keep != Some(&k[..]))
                    .min_by_key(|(_, e)| (e.last_used.load(Ordering::Relaxed), e.recorded))
                    .map(|(k, _)| k.clone());
                match victim {
                    Some(k) => map.remove(&k),
                    None => {
                        let k = keep.unwrap_or_default();
                        break Err((map.remove(k), st));
                    }
                }
            };
            // Dropped outside the lock: releasing a graph's memory waits
            // for the device.
            drop(gone);
            self.evictions.fetch_add(1, Ordering::Relaxed);
        };
        match result {
            Ok(()) => {
                // Evicted graphs' pages, and pages a new entry's warm-ups
                // mapped and its capture did not keep, go back (best
                // effort: not while a capture is open in the context).
                let _ = self.pool.trim();
                Ok(())
            }
            Err((gone, st)) => {
                drop(gone);
                let _ = self.pool.trim();
                Err(Error::new(
                    ErrorKind::OutOfMemory,
                    format!(
                        "the cache holds {} bytes ({} of pool pages, {} of exec estimates) with \
                         every other entry evicted, over its budget of {} bytes: the new entry \
                         is not kept",
                        st.bytes(),
                        st.pool_bytes,
                        st.exec_bytes,
                        opts.max_bytes
                    ),
                ))
            }
        }
    }

    /// The counters and totals.
    pub fn stats(&self) -> CacheStats {
        let (entries, exec_bytes) = {
            let map = self.map.read();
            (map.len(), map.values().map(|e| e.info.exec_bytes).sum())
        };
        CacheStats {
            entries,
            hits: self.hits.iter().map(|h| h.0.load(Ordering::Relaxed)).sum(),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            eager_runs: self.eager_runs.load(Ordering::Relaxed),
            failed_records: self.failed_records.load(Ordering::Relaxed),
            pool_bytes: self.pool.stats().tainted_pages * self.page_bytes,
            exec_bytes,
        }
    }

    /// The entry of `key`, if cached.
    pub fn entry(&self, key: &[u8]) -> Option<EntryInfo> {
        let map = self.map.read();
        map.get(key).map(|e| e.info)
    }

    /// Every entry, least recently used first.
    pub fn entries(&self) -> Vec<(Vec<u8>, EntryInfo)> {
        let map = self.map.read();
        let mut v: Vec<_> = map
            .iter()
            .map(|(k, e)| {
                (
                    (e.last_used.load(Ordering::Relaxed), e.recorded),
                    k.to_vec(),
                    e.info,
                )
            })
            .collect();
        v.sort_by_key(|(t, _, _)| *t);
        v.into_iter().map(|(_, k, i)| (k, i)).collect()
    }

    /// Evicts every entry and gives the pool's free pages back.
    pub fn clear(&self) -> Result<()> {
        let _rec = lock(&self.recording);
        let all = std::mem::take(&mut *self.map.write());
        let n = all.len() as u64;
        drop(all);
        self.evictions.fetch_add(n, Ordering::Relaxed);
        self.pool.trim()
    }
}

fn check_budget(o: &CacheOptions) -> Result<()> {
    ensure_arg!(
        o.max_entries > 0,
        "`max_entries` is 0: a cache holds at least one entry"
    );
    ensure_arg!(
        o.max_bytes > 0,
        "`max_bytes` is 0: a budget needs at least one byte"
    );
    Ok(())
}

fn fallback_bits(f: Fallback) -> u8 {
    u8::from(f.eager) | (u8::from(f.hard_fail) << 1)
}

fn fill_defaults(mut o: CacheOptions) -> CacheOptions {
    if o.node_bytes == 0 {
        o.node_bytes = DEFAULT_NODE_BYTES;
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn budgets_of_zero_are_refused() {
        let mut o = CacheOptions::default();
        check_budget(&o).unwrap();
        o.max_entries = 0;
        assert_eq!(
            check_budget(&o).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        o.max_entries = 1;
        o.max_bytes = 0;
        let e = check_budget(&o).unwrap_err();
        assert!(e.message().contains("max_bytes"), "{}", e.message());
        assert_eq!(
            fill_defaults(CacheOptions { node_bytes: 0, ..o }).node_bytes,
            DEFAULT_NODE_BYTES
        );
    }

    struct Fake(AtomicU64);
    impl Recency for Fake {
        fn last_used(&self) -> &AtomicU64 {
            &self.0
        }
    }

    /// A key like an engine's shape signature: 24 bytes.
    fn key(i: u32) -> Vec<u8> {
        let mut k = b"mlp:b=0000;s=0000;f16:".to_vec();
        k.extend_from_slice(&i.to_le_bytes()[..2]);
        k
    }

    /// A map of 1000 entries, keys `key(0..1000)`.
    fn thousand() -> Map<Fake> {
        (0..1000)
            .map(|i| (key(i).into(), Fake(AtomicU64::new(0))))
            .collect()
    }

    /// The best of 5 timings of 200,000 lookups by `find` of the 1000 keys
    /// (thread `t`'s order), in ns per lookup.
    fn best_ns_per_lookup(keys: &[Vec<u8>], t: usize, find: impl Fn(&[u8]) -> bool) -> f64 {
        const N: usize = 200_000;
        let mut best = f64::MAX;
        for _ in 0..5 {
            let start = std::time::Instant::now();
            for i in 0..N {
                std::hint::black_box(find(&keys[(i * 7 + t * 13) % 1000]));
            }
            best = best.min(start.elapsed().as_nanos() as f64 / N as f64);
        }
        best
    }

    #[test]
    fn lookups_find_their_entry_and_mark_it_used() {
        let map = thousand();
        let (clock, hits) = (AtomicU64::new(7), AtomicU64::new(0));
        let e = lookup(&map, &key(500), &clock, &hits).unwrap();
        assert_eq!(e.0.load(Ordering::Relaxed), 7);
        assert!(lookup(&map, b"absent", &clock, &hits).is_none());
        assert_eq!(hits.load(Ordering::Relaxed), 1);
    }

    /// The CPU cost a cache hit adds to an exec launch (the read lock, the
    /// hash and lookup of a 24-byte key among 1000 entries, the recency
    /// word, the hit counter), one thread and several on one map. Run with
    /// `cargo test --release -p graphcore-core -- --ignored --nocapture cache_lookup_timing`.
    #[test]
    #[ignore = "timing; run by hand"]
    fn cache_lookup_timing() {
        let map = Sharded::new(thousand());
        let clock = AtomicU64::new(1);
        let hits: [Padded<AtomicU64>; SHARDS] = Default::default();
        let keys: Vec<Vec<u8>> = (0..1000).map(key).collect();
        let run = |t: usize| {
            best_ns_per_lookup(&keys, t, |k| {
                let at = shard();
                let m = map.read_at(at);
                lookup(&m, k, &clock, &hits[at].0).is_some()
            })
        };
        // The same with one RwLock and one counter, for comparison.
        let plain = RwLock::new(thousand());
        let one = AtomicU64::new(0);
        let run_plain = |t: usize| {
            best_ns_per_lookup(&keys, t, |k| {
                let m = plain.read().unwrap_or_else(|e| e.into_inner());
                lookup(&m, k, &clock, &one).is_some()
            })
        };
        for _ in 0..3 {
            println!(
                "1 thread: sharded {:.1} ns, one RwLock {:.1} ns per lookup (best of 5)",
                run(0),
                run_plain(0)
            );
        }
        let ns: Vec<f64> = std::thread::scope(|s| {
            let ts: Vec<_> = (0..2).map(|t| s.spawn(move || run_plain(t))).collect();
            ts.into_iter().map(|t| t.join().unwrap()).collect()
        });
        println!(
            "2 threads, one RwLock: {:.1} ns per lookup per thread",
            ns.iter().sum::<f64>() / 2.0
        );
        for threads in [2, 4, 16] {
            let ns: Vec<f64> = std::thread::scope(|s| {
                let ts: Vec<_> = (0..threads).map(|t| s.spawn(move || run(t))).collect();
                ts.into_iter().map(|t| t.join().unwrap()).collect()
            });
            let mean = ns.iter().sum::<f64>() / threads as f64;
            println!("{threads} threads on one map: {mean:.1} ns per lookup per thread");
        }
    }

    #[test]
    fn keys_hash_by_every_byte() {
        let b = BuildHasherDefault::<KeyHasher>::default();
        let h = |k: &[u8]| b.hash_one(k);
        assert_ne!(h(b"shape 1x2"), h(b"shape 1x3"));
        assert_ne!(h(&[0u8; 9]), h(&[0u8; 10]));
        assert_ne!(
            h(&[1, 0, 0, 0, 0, 0, 0, 0, 0]),
            h(&[0, 0, 0, 0, 0, 0, 0, 0, 1])
        );
        assert_eq!(h(b"same"), h(b"same"));
    }
}
