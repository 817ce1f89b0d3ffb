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
use crate::runner::{disabled_by_env, record_graph, trim_growth, Fallback};
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

/// One cached graph: 32 bytes, so that with its key a map's bucket is
/// one 64-byte line's worth (what a hit reads); the cold part is boxed.
struct Entry {
    exec: Exec,
    /// The cache's clock when it was last used.
    last_used: AtomicU64,
    /// The clock when it was recorded (breaks ties of `last_used`).
    recorded: u64,
    info: Box<EntryInfo>,
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
            h = (h.rotate_left(5) ^ tail_word(bytes, rest.len())).wrapping_mul(K);
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

/// The last `n` bytes of `bytes` (1 to 7 of them) as one word, read
/// without a copy loop: from overlapping loads, the last 8 bytes when
/// there are 8 (a hash of the bytes' length first keeps such words apart
/// for `[u8]` keys). Every byte of the `n` affects the word.
#[inline]
fn tail_word(bytes: &[u8], n: usize) -> u64 {
    let len = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
    let half =
        |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4])) as u64;
    if len >= 8 {
        word(len - 8)
    } else if n >= 4 {
        half(len - n) | (half(len - 4) << 32)
    } else {
        let r = &bytes[len - n..];
        r[0] as u64 | (r[n / 2] as u64) << 8 | (r[n - 1] as u64) << 16
    }
}

/// Shards of the map's lock and of the hit counter.
const SHARDS: usize = 16;

/// Bytes of a key kept in the map's bucket itself (longer keys are
/// boxed): a hit then compares the key without following a pointer.
const INLINE_KEY: usize = 30;

/// A cached key's bytes: inline up to [`INLINE_KEY`] bytes, else boxed.
/// Hashes and compares as its bytes (`[u8]`), so the map is searched with
/// a `&[u8]`.
#[derive(Clone)]
enum Key {
    /// `len` bytes at the start of `bytes`, the rest zero.
    Inline { len: u8, bytes: [u8; INLINE_KEY] },
    /// A longer key.
    Boxed(Box<[u8]>),
}

impl Key {
    #[inline]
    fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => &bytes[..*len as usize],
            Key::Boxed(b) => b,
        }
    }
}

impl From<&[u8]> for Key {
    fn from(k: &[u8]) -> Key {
        if k.len() <= INLINE_KEY {
            let mut bytes = [0u8; INLINE_KEY];
            bytes[..k.len()].copy_from_slice(k);
            Key::Inline {
                len: k.len() as u8,
                bytes,
            }
        } else {
            Key::Boxed(k.into())
        }
    }
}

impl std::borrow::Borrow<[u8]> for Key {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl std::hash::Hash for Key {
    /// As the bytes hash (`Borrow` needs the two hashes equal).
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Key) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

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

/// One shard: its lock and its counter, on one cache line of their own
/// (a reader writes that line only).
#[derive(Default)]
struct Shard {
    lock: RwLock<()>,
    /// Counts what the shard's readers count (the cache's hits).
    count: AtomicU64,
}

/// A reader-writer lock for read-mostly data read from many threads: a
/// reader takes the read lock of its thread's shard only, so readers on
/// different shards share no written cache line; a writer takes every
/// shard's write lock, in order. Each shard carries a counter its readers
/// may bump on the line they already hold.
///
/// The value comes first and the shards live in an allocation of their
/// own, so a small value (a map's header) shares its cache line with the
/// fields that follow it (see [`Cache`]).
#[repr(C)]
struct Sharded<T> {
    value: UnsafeCell<T>,
    shards: Box<[Padded<Shard>; SHARDS]>,
}

// SAFETY: the value is read only under a shard's read lock and written
// only under every shard's write lock, so `&Sharded<T>` gives `&T` to
// several threads at once (T: Sync) and `&mut T` to one at a time (T: Send).
unsafe impl<T: Send + Sync> Sync for Sharded<T> {}

/// A read of a [`Sharded`] value.
struct ReadGuard<'a, T> {
    _lock: RwLockReadGuard<'a, ()>,
    value: &'a T,
    /// The counter of the reader's shard.
    count: &'a AtomicU64,
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
            value: UnsafeCell::new(value),
            shards: Box::default(),
        }
    }

    /// A read through this thread's [`shard`].
    #[inline]
    fn read(&self) -> ReadGuard<'_, T> {
        let shard = &self.shards[shard() % SHARDS].0;
        let lock = shard.lock.read().unwrap_or_else(|e| e.into_inner());
        // SAFETY: a shard's read lock is held: no writer holds every write
        // lock, so nothing writes the value while the guard lives.
        let value = unsafe { &*self.value.get() };
        ReadGuard {
            _lock: lock,
            value,
            count: &shard.count,
        }
    }

    /// The shards' counters, summed.
    fn count(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.0.count.load(Ordering::Relaxed))
            .sum()
    }

    fn write(&self) -> WriteGuard<'_, T> {
        let locks: Vec<_> = self
            .shards
            .iter()
            .map(|s| s.0.lock.write().unwrap_or_else(|e| e.into_inner()))
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

type Map<E = Entry> = HashMap<Key, E, BuildHasherDefault<KeyHasher>>;

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
///
/// What a hit reads of it (the map's header and its shards' address, the
/// clock, the fallback flags) is its first 49 bytes, on one cache line;
/// only misses write there (the clock).
#[repr(C, align(64))]
pub struct Cache {
    /// The map; its shards' counters count the hits (a hit writes only its
    /// shard's line and, when it changes, its entry's recency word).
    map: Sharded<Map>,
    clock: AtomicU64,
    /// The fallback flags (bit 0 eager, bit 1 hard fail) and, in bit 2,
    /// `GRAPHCORE_DISABLE=1` (read once per process), read by every launch
    /// without a lock.
    fallback: AtomicU8,
    pool: Pool,
    stream: Stream,
    opts: RwLock<CacheOptions>,
    /// Serializes recordings (they capture on the cache's one stream).
    recording: Mutex<()>,
    page_bytes: u64,
    misses: AtomicU64,
    evictions: AtomicU64,
    eager_runs: AtomicU64,
    failed_records: AtomicU64,
}

const _: () = assert!(
    std::mem::offset_of!(Cache, fallback) < 64 && std::mem::offset_of!(Cache, clock) < 64,
    "a hit's fields share the cache's first line"
);

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
            eager: b & EAGER != 0,
            hard_fail: b & HARD_FAIL != 0,
        }
    }

    /// Sets the fallback flags; they apply to later launches.
    pub fn set_fallback(&self, f: Fallback) {
        self.fallback.store(fallback_bits(f), Ordering::Relaxed);
    }

    /// Whether launches run eagerly: the eager flag or
    /// `GRAPHCORE_DISABLE=1` ([`Fallback::is_eager`]), from one load.
    #[inline]
    fn is_eager(&self) -> bool {
        self.fallback.load(Ordering::Relaxed) & (EAGER | DISABLED) != 0
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
        if self.is_eager() {
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
        let map = self.map.read();
        let e = lookup(&map, key, &self.clock, map.count)?;
        // A plain launch goes straight to the exec (the code gc_exec_launch
        // runs), not through the bindings' path.
        Some(if bindings.is_empty() {
            e.exec.launch(stream)
        } else {
            e.exec.launch_with(stream, bindings)
        })
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
            info: Box::new(info),
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
                    .filter(|(k, _)| keep != Some(k.as_bytes()))
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
            hits: self.map.count(),
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
        map.get(key).map(|e| *e.info)
    }

    /// Every entry, least recently used first.
    pub fn entries(&self) -> Vec<(Vec<u8>, EntryInfo)> {
        let map = self.map.read();
        let mut v: Vec<_> = map
            .iter()
            .map(|(k, e)| {
                (
                    (e.last_used.load(Ordering::Relaxed), e.recorded),
                    k.as_bytes().to_vec(),
                    *e.info,
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

/// Bits of [`Cache::fallback`]: the eager flag, hard fail, and
/// `GRAPHCORE_DISABLE=1`.
const EAGER: u8 = 1;
const HARD_FAIL: u8 = 2;
const DISABLED: u8 = 4;

/// The flags' bits, with `GRAPHCORE_DISABLE=1`'s.
fn fallback_bits(f: Fallback) -> u8 {
    let env = if disabled_by_env() { DISABLED } else { 0 };
    (if f.eager { EAGER } else { 0 }) | (if f.hard_fail { HARD_FAIL } else { 0 }) | env
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
            .map(|i| (key(i)[..].into(), Fake(AtomicU64::new(0))))
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
        let keys: Vec<Vec<u8>> = (0..1000).map(key).collect();
        let run = |t: usize| {
            best_ns_per_lookup(&keys, t, |k| {
                let m = map.read();
                lookup(&m, k, &clock, m.count).is_some()
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
    fn keys_of_every_length_hash_as_their_bytes_and_are_found() {
        let b = BuildHasherDefault::<KeyHasher>::default();
        let mut map = Map::<Fake>::default();
        let keys: Vec<Vec<u8>> = (1..=3 * INLINE_KEY)
            .map(|n| (0..n).map(|i| (i * 31 + n) as u8).collect())
            .collect();
        for k in &keys {
            let key = Key::from(&k[..]);
            assert_eq!(key.as_bytes(), &k[..]);
            assert_eq!(matches!(key, Key::Inline { .. }), k.len() <= INLINE_KEY);
            assert_eq!(b.hash_one(&key), b.hash_one(&k[..]));
            map.insert(key, Fake(AtomicU64::new(k.len() as u64)));
        }
        for k in &keys {
            let e = map.get(&k[..]).unwrap();
            assert_eq!(e.0.load(Ordering::Relaxed), k.len() as u64);
            // One byte changed anywhere: another key (and, here, another hash).
            for i in 0..k.len() {
                let mut other = k.clone();
                other[i] ^= 0x80;
                assert!(!map.contains_key(&other[..]));
                assert_ne!(b.hash_one(&other[..]), b.hash_one(&k[..]), "{k:?} byte {i}");
            }
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
