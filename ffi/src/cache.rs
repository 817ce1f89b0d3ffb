//! A graph cache with a budget: graphs keyed by the caller's bytes (a
//! shape signature, say), recorded on a miss by the caller's record
//! function, all in one pool of the cache's own, and evicted least
//! recently used first to stay within at most max_entries entries and
//! max_bytes bytes.
//!
//! Bytes: an entry costs the pool memory its graph keeps plus its exec's
//! estimated size. The cache's total (gc_cache_statistics.bytes) is exact
//! for the pool part: the pool pages held by live graphs (2 MiB each on
//! current GPUs; a page two entries share counts once), and estimated for
//! the execs: GC_CACHE_EXEC_BASE_BYTES plus node_bytes per node (default
//! GC_CACHE_DEFAULT_NODE_BYTES, NVIDIA CUDASTF's figure of about 10 KB per
//! kernel node: CUDA does not say what an instantiated graph costs). Per
//! entry, gc_cache_entry_info gives the most pool bytes its capture had
//! allocated at once (pages may be shared with other entries) and its
//! exec estimate. While a new entry is recorded the pool may hold more
//! for a moment; when the gc_cache_launch that added it returns, its
//! evictions are done, their memory is back in the pool, the pool is
//! trimmed (free pages go back to the driver: a wait for the device,
//! skipped while a capture is open in the context), and the cache is
//! within its budget. So an engine can size its other memory
//! after warming the cache up: the pool's reserved bytes stay within
//! max_bytes, plus any blocks the record function keeps (see below).
//!
//! Recency: a hit writes only its entry's "last used" word (when it
//! changes); the clock advances at each miss, so eviction is exactly least
//! recently used across misses, and among entries used since the same miss
//! the one recorded first goes first.
//!
//! Eager fallback: with GC_FALLBACK_EAGER set (gc_cache_set_fallback, the
//! options' flags) or GRAPHCORE_DISABLE=1 in the environment (read once per
//! process, for every cache and runner), gc_cache_launch runs the record
//! function on the caller's stream instead of launching a graph, with the
//! key given; cached entries are neither used nor dropped. Never silent:
//! each eager run is counted (eager_runs) and the first one of the process
//! prints one line on stderr. With GC_FALLBACK_HARD_FAIL set, such a
//! launch fails with GC_ERROR_INVALID_STATE instead and runs nothing. An
//! eager run does not apply bindings: the record function runs on the
//! buffers it names itself, so an engine whose record function reads its
//! buffers from user_data (and declares them with gc_capture_arg only when
//! gc_stream_is_capturing says the stream captures) gets the same results
//! eagerly as replayed. Graphs with conditional nodes: graphcore's calls
//! cannot put one into a record function's capture. Capturing into a
//! conditional body (gc_capture_begin_into) on the stream the record
//! function captures on is GC_ERROR_INVALID_STATE (the stream is already
//! capturing), which fails gc_cache_launch with the cache unchanged; the
//! other ways to a conditional node (gc_graph_add_conditional, a capture
//! into a body on another stream) make graphs of the caller's, not the
//! entry's. So no cached graph has a conditional node to fall back from,
//! and an eager run is the record function's own code on a stream that
//! does not capture: control flow there is the caller's (a record function
//! that adds a conditional node to the capture with the CUDA API itself
//! does that node's work eagerly when gc_stream_is_capturing says 0).
//!
//! Thread safety: gc_cache_launch may run from several threads at once;
//! a hit takes a read lock for the lookup and the launch, no allocation. A
//! miss records under the cache's recording lock (one at a time; other
//! keys' hits go on meanwhile, a wait for the device excepted when an
//! eviction releases memory). Entries share the pool, so the GPU work of
//! two launches must not overlap: launch on one stream, or order the
//! streams (graphcore does not detect it). gc_cache_destroy must not race
//! with other calls on the handle.

use crate::args::{bytes, read_options, Out, Versioned, VersionedOut};
use crate::context::{context, gc_context};
use crate::exec::gc_binding;
use crate::handle::Registry;
use crate::pool::{gc_pool, gc_pool_statistics, pool_statistics, POOLS};
use crate::runner::fallback_flags;
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, STREAMS};
use graphcore_core::{Cache, CacheOptions, Error, Outcome};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// A budgeted cache of graphs keyed by bytes, sharing one pool.
///
/// Ownership: gc_cache_create returns a handle the caller destroys with
/// gc_cache_destroy, which destroys the entries' graphs, the cache's
/// stream and its pool (unless a handle from gc_cache_pool is still
/// alive; then the pool goes with the last of them).
///
/// Thread safety: see the section above.
pub struct gc_cache;

/// Options of gc_cache_create (NULL means all defaults).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct gc_cache_options {
    /// Set to sizeof(gc_cache_options).
    pub struct_size: usize,
    /// Most entries held; default 64. 0 is GC_ERROR_INVALID_ARGUMENT.
    pub max_entries: usize,
    /// Most bytes held (see the section above); default 1 GiB. 0 is
    /// GC_ERROR_INVALID_ARGUMENT.
    pub max_bytes: u64,
    /// Eager runs of the record function before each capture; default 1.
    pub warmup_runs: u32,
    /// GC_FALLBACK_EAGER and GC_FALLBACK_HARD_FAIL, or 0 (default).
    pub flags: u32,
    /// Estimated bytes of an exec per node; 0 (default) means
    /// GC_CACHE_DEFAULT_NODE_BYTES.
    pub node_bytes: u64,
}

impl Default for gc_cache_options {
    fn default() -> Self {
        let d = CacheOptions::default();
        gc_cache_options {
            struct_size: std::mem::size_of::<Self>(),
            max_entries: d.max_entries,
            max_bytes: d.max_bytes,
            warmup_runs: d.warmup,
            flags: 0,
            node_bytes: 0,
        }
    }
}

impl Versioned for gc_cache_options {
    const V1_SIZE: usize = std::mem::size_of::<Self>();
}

/// What an exec costs besides its nodes, in the byte budget's estimate.
pub const GC_CACHE_EXEC_BASE_BYTES: u64 = 16384;

/// The default estimate of an exec's bytes per node.
pub const GC_CACHE_DEFAULT_NODE_BYTES: u64 = 10240;

const _: () = assert!(
    GC_CACHE_EXEC_BASE_BYTES == graphcore_core::EXEC_BASE_BYTES
        && GC_CACHE_DEFAULT_NODE_BYTES == graphcore_core::DEFAULT_NODE_BYTES
);

/// gc_cache_launch's *outcome: the key's graph was cached and launched.
pub const GC_CACHE_HIT: c_int = 0;
/// gc_cache_launch's *outcome: the key's graph was recorded, then launched.
pub const GC_CACHE_MISS: c_int = 1;
/// gc_cache_launch's *outcome: the record function ran eagerly (fallback).
pub const GC_CACHE_EAGER: c_int = 2;

/// Records one entry's work on `stream` for the key (key_len bytes at
/// `key`, as given to gc_cache_launch): graphcore's gc_op_* calls,
/// gc_launch, your own kernels on gc_stream_raw(stream)... Called on a miss
/// for the warm-up runs and once under capture on the cache's stream (do
/// not destroy or synchronize it; gc_pool_alloc on the handle from
/// gc_cache_pool allocates for the capture), and for eager runs on the
/// stream given to gc_cache_launch; always on the thread that called
/// gc_cache_launch, before it returns. It must not call gc_cache_* on the
/// same cache (that would deadlock). Blocks it allocates from the cache's
/// pool during the capture and does not free are the caller's, as with
/// gc_runner_capture; they count in the pool but in no entry. Return
/// GC_SUCCESS, or the failing call's status to fail gc_cache_launch.
pub type gc_cache_record_fn = Option<
    unsafe extern "C" fn(
        stream: *mut gc_stream,
        key: *const c_void,
        key_len: usize,
        user_data: *mut c_void,
    ) -> gc_status,
>;

pub(crate) struct CacheEntry {
    cache: Cache,
    /// The handle of the cache's stream, handed to record functions.
    stream: u64,
}

impl Drop for CacheEntry {
    fn drop(&mut self) {
        let _ = STREAMS.remove(self.stream, "stream");
    }
}

pub(crate) static CACHES: Registry<Arc<CacheEntry>> = Registry::new(10, "gc_cache");

/// A cache's statistics.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct gc_cache_statistics {
    /// Set to sizeof(gc_cache_statistics) before calling gc_cache_stats.
    pub struct_size: usize,
    /// Entries held.
    pub entries: u64,
    /// Launches whose key was cached.
    pub hits: u64,
    /// Launches whose key was recorded (then launched).
    pub misses: u64,
    /// Entries evicted (to stay within the budget, or by gc_cache_clear).
    pub evictions: u64,
    /// Eager runs made instead of launches (fallback).
    pub eager_runs: u64,
    /// Recordings that failed (the record function failed or broke its
    /// capture, or the graph alone was over the budget).
    pub failed_records: u64,
    /// The bytes the budget counts: pool_bytes + exec_bytes.
    pub bytes: u64,
    /// Pool bytes held by the entries' graphs (pages; shared ones once).
    pub pool_bytes: u64,
    /// The entries' exec estimates, summed.
    pub exec_bytes: u64,
    /// The budget: most entries.
    pub max_entries: u64,
    /// The budget: most bytes.
    pub max_bytes: u64,
    /// The cache's pool's statistics.
    pub pool: gc_pool_statistics,
}

impl Versioned for gc_cache_statistics {
    const V1_SIZE: usize = std::mem::size_of::<Self>();
}

/// One entry in gc_cache_entry_info.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct gc_cache_entry {
    /// Set to sizeof(gc_cache_entry) before calling gc_cache_entry_info.
    pub struct_size: usize,
    /// Nodes in its graph.
    pub node_count: u64,
    /// The most pool bytes its capture had allocated at once.
    pub pool_bytes: u64,
    /// Its exec's estimated size.
    pub exec_bytes: u64,
    /// pool_bytes + exec_bytes.
    pub bytes: u64,
    /// Microseconds from the start of its capture to its uploaded exec.
    pub capture_us: f64,
}

impl Versioned for gc_cache_entry {
    const V1_SIZE: usize = std::mem::size_of::<Self>();
}

/// Creates a cache with a pool of its own (no initial bytes) and a stream
/// of its own for warm-ups and captures. options may be NULL (defaults).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a wrong
/// options->struct_size, max_entries or max_bytes is 0, an unknown flag),
/// GC_ERROR_NOT_SUPPORTED (pools need virtual memory management),
/// GC_ERROR_OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn gc_cache_create(
    ctx: *mut gc_context,
    options: *const gc_cache_options,
    cache: *mut *mut gc_cache,
) -> gc_status {
    boundary("gc_cache_create", || {
        let out = Out::new(cache, "cache")?;
        let o = read_options(options, "options")?;
        let opts = CacheOptions {
            max_entries: o.max_entries,
            max_bytes: o.max_bytes,
            warmup: o.warmup_runs,
            node_bytes: o.node_bytes,
            fallback: fallback_flags(o.flags, "options->flags")?,
        };
        if opts.max_entries == 0 || opts.max_bytes == 0 {
            return Err(Error::invalid_argument(format!(
                "the budget is {} entries and {} bytes: `options->max_entries` and \
                 `options->max_bytes` must be at least 1",
                opts.max_entries, opts.max_bytes
            )));
        }
        let c = Cache::new(&context(ctx)?, opts)?;
        let stream = STREAMS.insert(c.stream().clone())?;
        let entry = Arc::new(CacheEntry { cache: c, stream });
        out.set(CACHES.insert(entry)? as *mut gc_cache);
        Ok(())
    })
}

/// Looks the key (key_len bytes at `key`, compared byte for byte) up and
/// launches its graph on `stream` with `bindings` (n of them; n may be 0
/// and bindings NULL: a plain launch), as gc_exec_launch_with does; writes
/// GC_CACHE_HIT, GC_CACHE_MISS or GC_CACHE_EAGER to *outcome (outcome may
/// be NULL). On a miss, `record` runs warmup_runs times on the cache's
/// stream, then once under capture into the cache's pool; the graph is
/// instantiated and uploaded (waited for), added, and the least recently
/// used entries are evicted (never the new one) until the cache is within
/// its budget, and the pool is trimmed; then it is launched. Its arguments are those the record
/// function declared with gc_capture_arg, in order. On a hit `record` is
/// not called (it may be NULL if the caller knows the key is cached:
/// a miss with a NULL record is GC_ERROR_INVALID_ARGUMENT, nothing
/// changed). For eager runs see the section above.
/// Failures leave the cache as it was (no entry added or evicted, the
/// pool's growth given back), except that a bad binding after a miss
/// leaves the new entry cached.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (key NULL or key_len 0,
/// bindings NULL while n is not 0, a bad binding as for
/// gc_exec_launch_with, or a miss with record NULL), GC_ERROR_CAPTURE (the
/// record function broke its capture), GC_ERROR_OUT_OF_MEMORY (the new
/// graph alone is over max_bytes, or the pool or the device ran out),
/// GC_ERROR_INVALID_STATE (an eager run in hard-fail mode), or any status
/// `record` returned (its message kept in gc_last_error()).
#[no_mangle]
pub extern "C" fn gc_cache_launch(
    cache: *mut gc_cache,
    key: *const c_void,
    key_len: usize,
    stream: *mut gc_stream,
    bindings: *const gc_binding,
    n: usize,
    record: gc_cache_record_fn,
    user_data: *mut c_void,
    outcome: *mut c_int,
) -> gc_status {
    boundary("gc_cache_launch", || {
        let k = bytes(key, key_len, "key")?;
        let b = crate::exec::bindings(bindings, n)?;
        // The hot path: no clone of the cache or the stream.
        let hit = CACHES.with(cache as u64, "cache", |entry| {
            STREAMS.with(stream as u64, "stream", |s| {
                entry.cache.launch_cached(k, s, b)
            })
        })?;
        let o = match hit {
            Some(o) => o,
            None => launch_missed(cache, k, stream, b, record, user_data)?,
        };
        if !outcome.is_null() {
            let v = match o {
                Outcome::Hit => GC_CACHE_HIT,
                Outcome::Miss => GC_CACHE_MISS,
                Outcome::Eager => GC_CACHE_EAGER,
            };
            // SAFETY: non-NULL; the caller passes a writable int.
            unsafe { outcome.write(v) };
        }
        Ok(())
    })
}

/// gc_cache_launch past a miss (or in eager mode): out of line, so that a
/// hit's code stays compact (fewer instruction cache lines per call).
#[cold]
#[inline(never)]
fn launch_missed(
    cache: *mut gc_cache,
    k: &[u8],
    stream: *mut gc_stream,
    b: &[graphcore_core::Binding],
    record: gc_cache_record_fn,
    user_data: *mut c_void,
) -> graphcore_core::Result<Outcome> {
    let entry = CACHES.get(cache as u64, "cache")?;
    let s = STREAMS.get(stream as u64, "stream")?;
    let record = record.ok_or_else(|| {
        Error::invalid_argument(
            "`record` is NULL and the key is not cached (or the cache runs eagerly)",
        )
    })?;
    let own = entry.stream as *mut gc_stream;
    let mut call = |on: &graphcore_core::Stream, key: &[u8]| {
        let h = if on.same(entry.cache.stream()) {
            own
        } else {
            stream
        };
        // SAFETY: the caller vouches for `record` and `user_data`; `key` is
        // the caller's key, alive for the call.
        unsafe { record(h, key.as_ptr() as *const c_void, key.len(), user_data) }
            .into_result("the record function")
    };
    entry.cache.launch(k, &s, b, &mut call)
}

/// Fills *stats (set stats->struct_size = sizeof(gc_cache_statistics)):
/// the counters, the bytes the budget counts, the budget, and the pool's
/// statistics.
/// Errors: GC_ERROR_INVALID_ARGUMENT (cache or stats is NULL, or a wrong
/// struct_size), GC_ERROR_INVALID_HANDLE (cache destroyed).
#[no_mangle]
pub extern "C" fn gc_cache_stats(
    cache: *mut gc_cache,
    stats: *mut gc_cache_statistics,
) -> gc_status {
    boundary("gc_cache_stats", || {
        let out = VersionedOut::new(stats, "stats")?;
        let entry = CACHES.get(cache as u64, "cache")?;
        let c = &entry.cache;
        let st = c.stats();
        let o = c.options();
        out.set(&gc_cache_statistics {
            struct_size: std::mem::size_of::<gc_cache_statistics>(),
            entries: st.entries as u64,
            hits: st.hits,
            misses: st.misses,
            evictions: st.evictions,
            eager_runs: st.eager_runs,
            failed_records: st.failed_records,
            bytes: st.bytes(),
            pool_bytes: st.pool_bytes,
            exec_bytes: st.exec_bytes,
            max_entries: o.max_entries as u64,
            max_bytes: o.max_bytes,
            pool: pool_statistics(c.pool()),
        });
        Ok(())
    })
}

/// Fills *info (set info->struct_size = sizeof(gc_cache_entry)) for the
/// key's entry. Does not count as a use (recency is unchanged).
/// Errors: GC_ERROR_INVALID_ARGUMENT (cache, key or info is NULL, key_len
/// is 0, or a wrong struct_size), GC_ERROR_INVALID_HANDLE (cache
/// destroyed), GC_ERROR_NOT_FOUND (the key is not cached).
#[no_mangle]
pub extern "C" fn gc_cache_entry_info(
    cache: *mut gc_cache,
    key: *const c_void,
    key_len: usize,
    info: *mut gc_cache_entry,
) -> gc_status {
    boundary("gc_cache_entry_info", || {
        let out = VersionedOut::new(info, "info")?;
        let k = bytes(key, key_len, "key")?;
        // No clone of the cache (a shared count written per call).
        let e = CACHES.with(cache as u64, "cache", |entry| Ok(entry.cache.entry(k)))?;
        let e = e.ok_or_else(|| {
            Error::new(
                graphcore_core::ErrorKind::NotFound,
                format!("no entry has this key ({key_len} bytes)"),
            )
        })?;
        out.set(&gc_cache_entry {
            struct_size: std::mem::size_of::<gc_cache_entry>(),
            node_count: e.node_count as u64,
            pool_bytes: e.pool_bytes,
            exec_bytes: e.exec_bytes,
            bytes: e.bytes(),
            capture_us: e.capture_us,
        });
        Ok(())
    })
}

/// Sets the cache's fallback flags (GC_FALLBACK_EAGER,
/// GC_FALLBACK_HARD_FAIL, or 0) for the launches after this call; entries
/// stay cached while the cache runs eagerly.
/// Errors: GC_ERROR_INVALID_ARGUMENT (cache is NULL, or an unknown flag),
/// GC_ERROR_INVALID_HANDLE (cache destroyed).
#[no_mangle]
pub extern "C" fn gc_cache_set_fallback(cache: *mut gc_cache, flags: u32) -> gc_status {
    boundary("gc_cache_set_fallback", || {
        let f = fallback_flags(flags, "flags")?;
        CACHES.get(cache as u64, "cache")?.cache.set_fallback(f);
        Ok(())
    })
}

/// Changes the budget; entries over the new one are evicted at once (least
/// recently used first) and the pool trimmed. A budget of 0 entries or 0
/// bytes is refused and nothing changes.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (max_entries or max_bytes
/// is 0), GC_ERROR_OUT_OF_MEMORY (the pool still holds more than max_bytes
/// with every entry evicted: blocks the caller kept; the budget is set).
#[no_mangle]
pub extern "C" fn gc_cache_set_budget(
    cache: *mut gc_cache,
    max_entries: usize,
    max_bytes: u64,
) -> gc_status {
    boundary("gc_cache_set_budget", || {
        CACHES
            .get(cache as u64, "cache")?
            .cache
            .set_budget(max_entries, max_bytes)
    })
}

/// Writes a new handle to the cache's pool to *pool, for record functions
/// to allocate from (during a capture, for the capture) and for its
/// statistics. The caller destroys the handle with gc_pool_destroy; the
/// pool lives while the cache or a handle does.
/// Errors: GC_ERROR_INVALID_ARGUMENT (cache or pool is NULL),
/// GC_ERROR_INVALID_HANDLE (cache destroyed), GC_ERROR_OUT_OF_MEMORY (too
/// many live pool handles).
#[no_mangle]
pub extern "C" fn gc_cache_pool(cache: *mut gc_cache, pool: *mut *mut gc_pool) -> gc_status {
    boundary("gc_cache_pool", || {
        let out = Out::new(pool, "pool")?;
        let entry = CACHES.get(cache as u64, "cache")?;
        out.set(POOLS.insert(entry.cache.pool().clone())? as *mut gc_pool);
        Ok(())
    })
}

/// Evicts every entry (counted in evictions) and trims the pool (as
/// gc_pool_trim, which waits for the device).
/// Errors: common, and GC_ERROR_INVALID_STATE (a capture is open in the
/// context: the entries are gone, the trim is not done).
#[no_mangle]
pub extern "C" fn gc_cache_clear(cache: *mut gc_cache) -> gc_status {
    boundary("gc_cache_clear", || {
        CACHES.get(cache as u64, "cache")?.cache.clear()
    })
}

/// Destroys the cache, its graphs and its stream, and drops its hold on
/// its pool. NULL is a no-op.
/// Errors: GC_ERROR_INVALID_HANDLE (cache already destroyed, or not a
/// cache).
#[no_mangle]
pub extern "C" fn gc_cache_destroy(cache: *mut gc_cache) -> gc_status {
    boundary("gc_cache_destroy", || {
        CACHES.remove(cache as u64, "cache")?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{GC_FALLBACK_EAGER, GC_FALLBACK_HARD_FAIL};

    #[test]
    fn flags_and_outcomes_are_distinct() {
        assert_ne!(GC_FALLBACK_EAGER, GC_FALLBACK_HARD_FAIL);
        assert_eq!([GC_CACHE_HIT, GC_CACHE_MISS, GC_CACHE_EAGER], [0, 1, 2]);
        assert!(fallback_flags(4, "flags").is_err());
    }
}
