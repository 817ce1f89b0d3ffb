//! The device memory pool: the allocator logic of [`crate::pool`] backed by
//! one reserved virtual address range with 2 MiB physical pages mapped on
//! demand (cuMemAddressReserve / cuMemCreate / cuMemMap), so addresses are
//! stable, free space coalesces across the whole range, and mapping never
//! breaks an open stream capture (it runs in relaxed capture mode).

use super::{
    AllocPlan, Allocator, CaptureId, Footprint, Owner, PagePlan, PageRange, PoolConfig, PoolError,
    PoolStats,
};
use crate::context::{Context, PoolBlocks};
use crate::driver::{self, memory as dm};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::lock::{SpinGuard, SpinLock};
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::thread::ThreadId;

/// How to make a pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolOptions {
    /// Bytes mapped at creation (rounded up to pages), like PyTorch's
    /// `CUDAGraphPool(device, size)`.
    pub initial_bytes: u64,
    /// Hard cap on reserved bytes; 0 means no cap (the device's memory).
    pub max_bytes: u64,
}

/// A device memory pool that graphs allocate from. Cheap to clone (clones
/// share the pool); `Send + Sync`: allocations may come from any thread.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<PoolShared>,
}

struct PoolShared {
    ctx: Context,
    granularity: u64,
    /// What the context's pool registry reaches ([`Blocks`]): reached
    /// through `Deref` (`sh.state`, `sh.base`).
    blocks: Arc<Blocks>,
}

/// The part of a pool the context's registry holds weakly, and a registry
/// lookup (on any thread) holds for a moment: its addresses and allocator.
/// Dropping it touches no device (the pool's Drop gives the memory back
/// and takes the peers' contexts out first), so a lookup that happens to
/// hold it last neither synchronizes nor makes a context current on its
/// thread (which may be capturing on another device).
struct Blocks {
    base: u64,
    va_bytes: u64,
    /// The pool's device.
    ordinal: i32,
    /// The allocator and pages: a spin lock, held only for the
    /// allocator's own work on the hot path (see [`SpinLock`]).
    state: SpinLock<PoolState>,
}

impl std::ops::Deref for PoolShared {
    type Target = Blocks;
    fn deref(&self) -> &Blocks {
        &self.blocks
    }
}

struct PoolState {
    alloc: Allocator,
    /// Physical page handles by page index.
    pages: HashMap<u64, dm::PhysHandle>,
    /// Captures open on this pool, by the thread that began them: the
    /// thread's allocations belong to its capture.
    captures: Vec<(ThreadId, CaptureId)>,
    next_capture: CaptureId,
    /// Devices granted peer access (`Pool::enable_peer_access`): every
    /// mapped page, and every page mapped later, is readable and writable
    /// by them too.
    peers: Vec<Context>,
}

impl PoolState {
    /// The devices that get access to a newly mapped page: the pool's own,
    /// then its peers.
    fn access(&self, own: driver::CUdevice) -> Vec<driver::CUdevice> {
        std::iter::once(own)
            .chain(self.peers.iter().map(Context::device))
            .collect()
    }
}

impl From<PoolError> for Error {
    fn from(e: PoolError) -> Self {
        let kind = match e {
            PoolError::OutOfMemory { .. } | PoolError::AddressSpaceExhausted { .. } => {
                ErrorKind::OutOfMemory
            }
            _ => ErrorKind::InvalidArgument,
        };
        Error::new(kind, e.to_string())
    }
}

impl PoolShared {
    /// Maps the pages of `r`; on failure unmaps what it mapped and fails.
    fn map(&self, st: &mut PoolState, r: PageRange) -> Result<()> {
        let dev = self.ctx.device();
        let access = st.access(dev);
        let _relaxed = driver::RelaxedCaptureMode::enter()?;
        for (done, p) in (r.start..r.end()).enumerate() {
            let va = self.base + p * self.granularity;
            let step = dm::create_physical(dev, self.granularity).and_then(|h| {
                dm::map(va, self.granularity, h, &access)
                    .inspect_err(|_| dm::release_physical(h))
                    .map(|_| h)
            });
            match step {
                Ok(h) => {
                    st.pages.insert(p, h);
                }
                Err(e) => {
                    self.unmap(
                        st,
                        PageRange {
                            start: r.start,
                            count: done as u64,
                        },
                    );
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Unmaps and releases the pages of `r`.
    fn unmap(&self, st: &mut PoolState, r: PageRange) {
        for p in r.start..r.end() {
            if let Some(h) = st.pages.remove(&p) {
                dm::unmap(self.base + p * self.granularity, self.granularity);
                dm::release_physical(h);
            }
        }
    }

    fn unmap_plan(&self, st: &mut PoolState, plan: &PagePlan) {
        for &r in plan.ranges() {
            self.unmap(st, r);
        }
    }

    /// The slow path of [`Pool::alloc`]: maps the plan's new pages, then
    /// commits it (under the lock throughout: the plan must stay valid).
    #[cold]
    #[inline(never)]
    fn grow(&self, mut st: SpinGuard<'_, PoolState>, plan: AllocPlan, bytes: u64) -> Result<u64> {
        let runs = plan.new_pages();
        self.ctx.bind()?;
        for (k, &r) in runs.iter().enumerate() {
            // `map` undoes its own run on failure; undo the runs before it
            // too, so the pool is unchanged.
            if let Err(e) = self.map(&mut st, r) {
                for &done in &runs[..k] {
                    self.unmap(&mut st, done);
                }
                return Err(e.context(&format!(
                    "growing the pool by {} bytes for a {bytes}-byte block",
                    plan.new_page_count() * self.granularity
                )));
            }
        }
        Ok(self.base + st.alloc.commit_alloc(plan))
    }

    /// Who an allocation made now on this thread belongs to. No capture
    /// open on the pool (the common case) needs no thread lookup.
    #[inline]
    fn owner(st: &PoolState) -> Owner {
        if st.captures.is_empty() {
            return Owner::Eager;
        }
        let me = std::thread::current().id();
        st.captures
            .iter()
            .find(|(t, _)| *t == me)
            .map_or(Owner::Eager, |&(_, id)| Owner::Capture(id))
    }
}

impl PoolBlocks for Blocks {
    fn block_of(&self, ptr: u64) -> Option<(u64, u64)> {
        if !(self.base..self.base + self.va_bytes).contains(&ptr) {
            return None;
        }
        let st = self.state.acquire();
        st.alloc
            .block_at(ptr - self.base)
            .map(|(off, size)| (self.base + off, size))
    }

    fn accessible_from(&self, ordinal: i32) -> bool {
        ordinal == self.ordinal
            || self
                .state
                .acquire()
                .peers
                .iter()
                .any(|p| p.ordinal() == ordinal)
    }
}

impl Drop for PoolShared {
    fn drop(&mut self) {
        // Out of the registry first: no lookup finds the pool from here
        // on, nor mistakes a later pool at these addresses for it.
        self.ctx
            .unregister_pool(self.base..self.base + self.va_bytes);
        // Every graph using the memory holds this pool, so none is left;
        // wait for launches still in flight, on the pool's device and on
        // each peer granted access (copies there may use the memory),
        // unless a capture is open in that context, which a device-wide
        // synchronize would break: then the caller must have waited, as
        // documented.
        let peers = std::mem::take(&mut self.state.acquire().peers);
        for p in &peers {
            let _ = p.synchronize_unless_capturing();
        }
        let _ = self.ctx.synchronize_unless_capturing();
        if self.ctx.bind().is_err() {
            return;
        }
        let mut st = self.state.acquire();
        for (&p, &h) in st.pages.iter() {
            dm::unmap(self.base + p * self.granularity, self.granularity);
            dm::release_physical(h);
        }
        st.pages.clear();
        dm::unreserve(self.base, self.va_bytes);
        drop(st);
        // The peers' contexts go here, on the dropping thread, not with the
        // block table (which a registry lookup may hold last).
        drop(peers);
    }
}

/// The pages of `after` that `before` holds too, as a plan against
/// `after`'s state: what a trim may give back after a wait that began once
/// `before` was planned (a page freed since may still be in use by work
/// the wait did not cover).
fn pages_in_both(before: &PagePlan, after: PagePlan) -> PagePlan {
    let mut ranges = Vec::new();
    for b in after.ranges() {
        for a in before.ranges() {
            let (start, end) = (a.start.max(b.start), a.end().min(b.end()));
            if start < end {
                ranges.push(PageRange {
                    start,
                    count: end - start,
                });
            }
        }
    }
    PagePlan {
        ranges,
        generation: after.generation,
    }
}

/// A graph's hold on pool memory: its footprint, released when the last
/// graph or exec using it goes.
pub(crate) struct GraphMemory {
    pool: Pool,
    footprint: Option<Footprint>,
}

impl GraphMemory {
    /// Bytes the graph's capture allocated and still held when it ended.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.footprint.as_ref().map_or(0, |f| f.held_bytes())
    }

    /// The capture's own peak of allocated bytes.
    pub(crate) fn peak_bytes(&self) -> u64 {
        self.footprint.as_ref().map_or(0, |f| f.peak_bytes())
    }
}

impl Drop for GraphMemory {
    fn drop(&mut self) {
        if let Some(fp) = self.footprint.take() {
            // Launches of the graph may still run: the memory goes back to
            // eager use once they are done (unless a capture is open; then
            // the caller must have waited, as documented).
            let _ = self.pool.inner.ctx.synchronize_unless_capturing();
            let mut st = self.pool.inner.state.acquire();
            let _ = st.alloc.release_graph(fp);
        }
    }
}

impl Pool {
    /// Creates a pool on `ctx`'s device. Needs virtual memory management
    /// (every GPU graphcore supports on Linux has it).
    pub fn new(ctx: &Context, opts: PoolOptions) -> Result<Pool> {
        if !ctx.vmm_supported() {
            return Err(Error::new(
                ErrorKind::NotSupported,
                "the device does not support CUDA virtual memory management, which pools need",
            ));
        }
        ctx.bind()?;
        let granularity = dm::granularity(ctx.device())?;
        let max_bytes = if opts.max_bytes == 0 {
            u64::MAX
        } else {
            opts.max_bytes
        };
        ensure_arg!(
            opts.initial_bytes <= max_bytes,
            "initial_bytes ({}) exceeds max_bytes ({})",
            opts.initial_bytes,
            opts.max_bytes
        );
        ensure_arg!(
            opts.initial_bytes <= ctx.total_memory(),
            "initial_bytes ({}) exceeds the device's memory ({})",
            opts.initial_bytes,
            ctx.total_memory()
        );
        // Virtual space is cheap: twice the device's memory (or the cap),
        // so fragmentation of addresses never limits physical use. (Both
        // operands are at most the device's memory: no overflow.)
        let want = (2 * ctx.total_memory().min(max_bytes).max(opts.initial_bytes))
            .div_ceil(granularity)
            * granularity;
        let (base, va_bytes) = reserve_halving(want, granularity)?;
        let cfg = PoolConfig {
            granularity,
            alignment: 256,
            va_bytes,
            initial_bytes: opts.initial_bytes,
            max_bytes,
        };
        let (alloc, initial) =
            Allocator::new(cfg).inspect_err(|_| dm::unreserve(base, va_bytes))?;
        let shared = PoolShared {
            ctx: ctx.clone(),
            granularity,
            blocks: Arc::new(Blocks {
                base,
                va_bytes,
                ordinal: ctx.ordinal(),
                state: SpinLock::new(PoolState {
                    alloc,
                    pages: HashMap::new(),
                    captures: Vec::new(),
                    next_capture: 1,
                    peers: Vec::new(),
                }),
            }),
        };
        {
            let mut st = shared.state.acquire();
            for &r in initial.ranges() {
                // On failure, dropping `shared` unmaps and unreserves.
                shared.map(&mut st, r)?;
            }
        }
        let pool = Pool {
            inner: Arc::new(shared),
        };
        let registered: Weak<dyn PoolBlocks> = Arc::downgrade(&pool.inner.blocks) as Weak<Blocks>;
        ctx.register_pool(pool.va_range(), registered);
        Ok(pool)
    }

    /// Allocates `bytes` (rounded up to 256) and returns the device address.
    /// On the thread that began a capture into this pool, the block belongs
    /// to that capture. Over `max_bytes`, or out of device memory, it fails
    /// with [`ErrorKind::OutOfMemory`] and the pool is unchanged.
    pub fn alloc(&self, bytes: u64) -> Result<u64> {
        let sh = &*self.inner;
        let mut st = sh.state.acquire();
        let owner = PoolShared::owner(&st);
        // The hottest path: a parked block of this size, made live again.
        if let Some(offset) = st.alloc.alloc_parked(bytes, owner) {
            drop(st);
            return Ok(sh.base + offset);
        }
        let plan = match st.alloc.plan_alloc(bytes, owner) {
            Ok(plan) => plan,
            Err(e) => {
                drop(st);
                return Err(e.into());
            }
        };
        if !plan.new_pages().is_empty() {
            return sh.grow(st, plan, bytes);
        }
        // The hot path: a block on mapped pages, under the lock only the
        // allocator's own work.
        let offset = st.alloc.commit_alloc(plan);
        drop(st);
        Ok(sh.base + offset)
    }

    /// Returns a block to the pool. A pointer the pool did not hand out, or
    /// one already freed, is an error and nothing changes.
    pub fn free(&self, ptr: u64) -> Result<()> {
        ensure_arg!(
            self.va_range().contains(&ptr),
            "0x{ptr:x} does not belong to this pool"
        );
        let sh = &*self.inner;
        // The guard is dropped at the end of the statement: errors are
        // formatted after the lock is released.
        let freed = sh.state.acquire().alloc.free(ptr - sh.base);
        freed?;
        Ok(())
    }

    /// The virtual address range the pool reserved.
    pub(crate) fn va_range(&self) -> std::ops::Range<u64> {
        self.inner.base..self.inner.base + self.inner.va_bytes
    }

    /// The live block containing `ptr`: its address and size.
    pub fn block_of(&self, ptr: u64) -> Option<(u64, u64)> {
        self.inner.block_of(ptr)
    }

    /// Statistics, named as PyTorch names them.
    pub fn stats(&self) -> PoolStats {
        self.inner.state.acquire().alloc.stats()
    }

    /// Returns physical pages that hold no block and no graph's memory to
    /// the driver (after waiting for the device). Addresses stay reserved.
    /// While a graphcore capture is open in the context (into any pool or
    /// none) this is [`ErrorKind::InvalidState`], even with nothing to trim
    /// (the wait would invalidate it).
    pub fn trim(&self) -> Result<()> {
        let sh = &*self.inner;
        let capturing = "trim while a capture is open in the context (trim synchronizes the \
                         device, which would invalidate it); trim after it ends";
        // The pool's lock is not held across the wait (other threads'
        // allocations go on meanwhile): the pages given back are those
        // free both before the wait and after it.
        let before = {
            let mut st = sh.state.acquire();
            ensure_state(st.captures.is_empty() && !sh.ctx.capturing(), capturing)?;
            st.alloc.plan_trim()
        };
        if before.is_empty() {
            return Ok(());
        }
        ensure_state(sh.ctx.synchronize_unless_capturing()?, capturing)?;
        let mut st = sh.state.acquire();
        ensure_state(st.captures.is_empty(), capturing)?;
        let plan = pages_in_both(&before, st.alloc.plan_trim());
        sh.unmap_plan(&mut st, &plan);
        st.alloc.commit_trim(plan);
        Ok(())
    }

    /// Grants `peer`'s device read and write access to the pool's memory:
    /// every page mapped now and every page mapped later (the pool maps
    /// pages as it grows). Copies and sets on `peer`'s streams, and copy
    /// nodes of `peer`'s graphs, may then use the pool's blocks. Enabling
    /// it again is a no-op. `peer` of the pool's own device is
    /// [`ErrorKind::InvalidArgument`]; a device with no peer path to the
    /// pool's (cuDeviceCanAccessPeer) is [`ErrorKind::NotSupported`]. On
    /// failure the pool is unchanged. Access stays on for the pool's life.
    pub fn enable_peer_access(&self, peer: &Context) -> Result<()> {
        let sh = &*self.inner;
        let (own, other) = (sh.ctx.ordinal(), peer.ordinal());
        ensure_arg!(
            !peer.same(&sh.ctx),
            "the peer context is of device {other}, the pool's own device, which always has \
             access: name a context of another device"
        );
        if !driver::device::can_access_peer(peer.device(), sh.ctx.device())? {
            return Err(Error::new(
                ErrorKind::NotSupported,
                format!(
                    "device {other} cannot access memory of device {own}: there is no peer path \
                     between them (cuDeviceCanAccessPeer)"
                ),
            ));
        }
        let mut st = sh.state.acquire();
        if st.peers.iter().any(|p| p.same(peer)) {
            return Ok(());
        }
        sh.ctx.bind()?;
        let _relaxed = driver::RelaxedCaptureMode::enter()?;
        let pages: Vec<u64> = st.pages.keys().copied().collect();
        for (done, &p) in pages.iter().enumerate() {
            let va = sh.base + p * sh.granularity;
            if let Err(e) = dm::set_access(va, sh.granularity, &[peer.device()], true) {
                for &q in &pages[..done] {
                    let _ = dm::set_access(
                        sh.base + q * sh.granularity,
                        sh.granularity,
                        &[peer.device()],
                        false,
                    );
                }
                return Err(e.context(&format!(
                    "granting device {other} access to the pool of device {own}"
                )));
            }
        }
        st.peers.push(peer.clone());
        Ok(())
    }

    /// True when `ordinal`'s device may use the pool's memory: the pool's
    /// own device, or a peer granted access.
    pub fn peer_access(&self, ordinal: i32) -> bool {
        self.inner.accessible_from(ordinal)
    }

    /// The pool's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Opens a capture on the calling thread: its allocations belong to it
    /// until it ends ([`PoolCapture::end`]) or is dropped (rolled back).
    pub(crate) fn begin_capture(&self) -> Result<PoolCapture> {
        let mut st = self.inner.state.acquire();
        let me = std::thread::current().id();
        ensure_state(
            !st.captures.iter().any(|(t, _)| *t == me),
            "this thread already has a capture open into the pool",
        )?;
        let id = st.next_capture;
        st.next_capture += 1;
        st.alloc.begin_capture(id)?;
        st.captures.push((me, id));
        Ok(PoolCapture {
            pool: self.clone(),
            id,
        })
    }

    /// True when `self` and `other` are the same pool.
    pub fn same(&self, other: &Pool) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

fn ensure_state(cond: bool, what: &str) -> Result<()> {
    if cond {
        Ok(())
    } else {
        Err(Error::invalid_state(what.to_string()))
    }
}

/// A capture open on a pool. Ended, it becomes the graph's hold on the
/// pool's memory; dropped without ending (the capture failed, or its stream
/// went away), it rolls back: its blocks are freed and the pages mapped for
/// it are released.
pub(crate) struct PoolCapture {
    pool: Pool,
    /// The capture's id; 0 once ended.
    id: CaptureId,
}

impl PoolCapture {
    /// Closes the capture, which became a graph: returns its hold on the
    /// pool's memory.
    pub(crate) fn end(mut self) -> Result<GraphMemory> {
        let id = std::mem::take(&mut self.id);
        let mut st = self.pool.inner.state.acquire();
        st.captures.retain(|&(_, c)| c != id);
        let fp = st.alloc.end_capture(id)?;
        Ok(GraphMemory {
            pool: self.pool.clone(),
            footprint: Some(fp),
        })
    }
}

impl Drop for PoolCapture {
    fn drop(&mut self) {
        if self.id == 0 {
            return;
        }
        let sh = &*self.pool.inner;
        let mut st = sh.state.acquire();
        st.captures.retain(|&(_, c)| c != self.id);
        if let Ok(plan) = st.alloc.abort_capture(self.id) {
            // Nothing ran on these pages: the capture only recorded work.
            if !plan.is_empty() && sh.ctx.bind().is_ok() {
                let _relaxed = driver::RelaxedCaptureMode::enter();
                sh.unmap_plan(&mut st, &plan);
            }
        }
    }
}

/// Reserves `want` bytes of address space, halving down to 1 GiB if the
/// driver refuses.
fn reserve_halving(mut want: u64, granularity: u64) -> Result<(u64, u64)> {
    loop {
        match dm::reserve(want, granularity) {
            Ok(base) => return Ok((base, want)),
            Err(e) if want > (1 << 30) => {
                let _ = e;
                want = (want / 2).div_ceil(granularity) * granularity;
            }
            Err(e) => return Err(e.context("reserving the pool's address range")),
        }
    }
}
