//! Ownership of driver handles: the primary context, and the handles made
//! in it (streams, events, modules, graphs, execs), each destroyed by its
//! owner's Drop with the context made current first.
//!
//! A destroy that fails cannot fail the Drop; its error is recorded in the
//! primary context ([`PrimaryContext::defer`]), which keeps the first one,
//! and the next call that can report it returns it: `Context::synchronize`
//! (which waits for the device, so the work that a destroyed object had
//! queued is done by then).
//!
//! Why these types are `Send + Sync` (stated here once, for all of them):
//! CUDA driver handles are opaque identifiers the driver accepts from any
//! thread. graphcore never dereferences them; it only passes them back to
//! the driver, never changes a stored handle, and destroys each owned one
//! exactly once, in Drop (so never while another thread uses it: the owner
//! is shared through an `Arc`). Where CUDA requires calls on one object to be
//! serialized (building a graph, updating an exec), the owning object holds
//! the lock that serializes them.

use super::{device, graph, module, stream, CUcontext, CUdevice, CUevent, CUfunction};
use super::{CUgraph, CUgraphExec, CUgraphNode, CUmodule, CUstream};
use crate::error::{Error, Result};
use crate::lock::lock;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

/// One retain of a device's primary context, released in Drop; also where
/// the destroy errors of the handles made in it wait to be reported.
pub(crate) struct PrimaryContext {
    device: CUdevice,
    raw: CUcontext,
    deferred: Deferred,
    /// Modules whose kernels launches still in flight may run (generated
    /// chain kernels of a fused exec that is gone, or whose chain changed):
    /// unloaded only after a device-wide synchronize that began after they
    /// were retired ([`PrimaryContext::take_retired`]), or when the context
    /// goes.
    retired: Mutex<Vec<Shared<CUmodule>>>,
}

/// The first error that could not be returned where it happened, kept
/// until a call that can report it takes it.
#[derive(Default)]
struct Deferred(Mutex<Option<Error>>);

impl Deferred {
    fn defer(&self, e: Error) {
        lock(&self.0).get_or_insert(e);
    }

    fn take(&self) -> Option<Error> {
        lock(&self.0).take()
    }
}

// SAFETY: see the module doc (opaque driver handles, passed only to the
// driver; the deferred error is behind a lock).
unsafe impl Send for PrimaryContext {}
// SAFETY: as above.
unsafe impl Sync for PrimaryContext {}

impl PrimaryContext {
    /// Retains `dev`'s primary context.
    pub(crate) fn retain(dev: CUdevice) -> Result<Arc<PrimaryContext>> {
        let raw = device::retain_primary(dev)?;
        Ok(Arc::new(PrimaryContext {
            device: dev,
            raw,
            deferred: Deferred::default(),
            retired: Mutex::new(Vec::new()),
        }))
    }

    /// The raw context.
    pub(crate) fn raw(&self) -> CUcontext {
        self.raw
    }

    /// The device.
    pub(crate) fn device(&self) -> CUdevice {
        self.device
    }

    /// Makes the context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        device::set_current(self.raw)
    }

    /// Records an error that could not be returned where it happened (a
    /// destroy in a Drop); the first one is kept until taken.
    pub(crate) fn defer(&self, e: Error) {
        self.deferred.defer(e);
    }

    /// Takes the deferred error, if any (for the next call that can report
    /// it).
    pub(crate) fn take_deferred(&self) -> Option<Error> {
        self.deferred.take()
    }

    /// Keeps module `m` loaded until a device-wide synchronize that begins
    /// later has returned ([`Self::take_retired`], [`Self::unload`]).
    fn retire(&self, m: CUmodule) {
        lock(&self.retired).push(Shared::new(m));
    }

    /// The modules retired so far, to unload once a device-wide synchronize
    /// that begins after this call has returned (every launch that may run
    /// their kernels was enqueued before they were retired, so it is done
    /// by then).
    pub(crate) fn take_retired(&self) -> Vec<Shared<CUmodule>> {
        std::mem::take(&mut *lock(&self.retired))
    }

    /// Unloads `modules` (from [`Self::take_retired`], the device
    /// synchronized since; the context is current). A failure is deferred.
    pub(crate) fn unload(&self, modules: Vec<Shared<CUmodule>>) {
        for m in modules {
            if let Err(e) = module::unload(m.raw()) {
                self.defer(e.context("unloading a generated module (deferred)"));
            }
        }
    }

    /// Gives back modules taken with [`Self::take_retired`] when the
    /// synchronize failed: they stay loaded until the next one.
    pub(crate) fn keep_retired(&self, modules: Vec<Shared<CUmodule>>) {
        lock(&self.retired).extend(modules);
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // Retired modules: after the device is idle (nothing else is left
        // that could launch their kernels, but launches may be in flight).
        let retired = std::mem::take(crate::lock::get_mut(&mut self.retired));
        if !retired.is_empty() && self.bind().is_ok() && device::synchronize().is_ok() {
            for m in retired {
                let _ = module::unload(m.raw());
            }
        }
        // Nothing is left to report a failure to: the context is gone.
        device::release_primary(self.device);
    }
}

/// A kind of driver handle an [`Owned`] can destroy.
pub(crate) trait Destroy: Copy {
    /// What the handle is, for messages ("stream").
    const WHAT: &'static str;

    /// Destroys the handle (its context is current).
    fn destroy(self) -> Result<()>;
}

impl Destroy for CUstream {
    const WHAT: &'static str = "stream";
    fn destroy(self) -> Result<()> {
        stream::destroy(self)
    }
}

impl Destroy for CUevent {
    const WHAT: &'static str = "event";
    fn destroy(self) -> Result<()> {
        stream::event_destroy(self)
    }
}

impl Destroy for CUmodule {
    const WHAT: &'static str = "module";
    fn destroy(self) -> Result<()> {
        module::unload(self)
    }
}

impl Destroy for CUgraph {
    const WHAT: &'static str = "graph";
    fn destroy(self) -> Result<()> {
        graph::destroy(self)
    }
}

impl Destroy for CUgraphExec {
    const WHAT: &'static str = "executable graph";
    fn destroy(self) -> Result<()> {
        graph::exec_destroy(self)
    }
}

/// A driver handle made in a primary context, which it keeps retained; Drop
/// destroys the handle and defers a failure to the context.
pub(crate) struct Owned<H: Destroy> {
    raw: H,
    ctx: Arc<PrimaryContext>,
}

// SAFETY: see the module doc (an opaque handle, destroyed once, in Drop).
unsafe impl<H: Destroy> Send for Owned<H> {}
// SAFETY: as above; `&Owned` only hands out the handle's value.
unsafe impl<H: Destroy> Sync for Owned<H> {}

impl<H: Destroy> Owned<H> {
    /// Takes ownership of `raw`, a live handle made in `ctx` that nothing
    /// else destroys.
    pub(crate) fn new(raw: H, ctx: &Arc<PrimaryContext>) -> Self {
        Owned {
            raw,
            ctx: Arc::clone(ctx),
        }
    }

    /// The handle.
    pub(crate) fn raw(&self) -> H {
        self.raw
    }
}

impl Owned<CUmodule> {
    /// Gives the module to its context instead of unloading it now: it is
    /// unloaded after the next device-wide synchronize that begins later
    /// (`Context::synchronize`, a pool's trim or drop, a graph's memory
    /// given back), or when the context goes. For a module whose kernels a
    /// launch still in flight may run: unloading it under a running kernel
    /// is undefined in CUDA.
    pub(crate) fn retire(self) {
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: `ctx` is read out once from a value that is never
        // dropped, so the Arc's count stays right.
        let ctx = unsafe { std::ptr::read(&me.ctx) };
        ctx.retire(me.raw);
    }
}

impl<H: Destroy> Drop for Owned<H> {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.bind().and_then(|()| self.raw.destroy()) {
            self.ctx
                .defer(e.context(&format!("destroying a {} (deferred)", H::WHAT)));
        }
    }
}

/// A driver handle that something else owns and keeps alive: a borrowed
/// stream, a function of a loaded module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shared<H: Copy>(H);

// SAFETY: see the module doc (an opaque handle, only passed to the driver).
unsafe impl<H: Copy> Send for Shared<H> {}
// SAFETY: as above.
unsafe impl<H: Copy> Sync for Shared<H> {}

impl<H: Copy> Shared<H> {
    /// Wraps `raw`, which its owner keeps alive for as long as this is used.
    pub(crate) fn new(raw: H) -> Self {
        Shared(raw)
    }

    /// The handle.
    pub(crate) fn raw(self) -> H {
        self.0
    }
}

/// A function handle of a loaded module.
pub(crate) type SharedFunction = Shared<CUfunction>;

/// The node handles of a graph, indexed as its description (the graph owns
/// them: they go with it).
#[derive(Clone, Default)]
pub(crate) struct Nodes(Vec<CUgraphNode>);

// SAFETY: see the module doc (opaque handles; changed only under the
// owning graph's lock).
unsafe impl Send for Nodes {}
// SAFETY: as above.
unsafe impl Sync for Nodes {}

impl From<Vec<CUgraphNode>> for Nodes {
    fn from(v: Vec<CUgraphNode>) -> Self {
        Nodes(v)
    }
}

impl Deref for Nodes {
    type Target = Vec<CUgraphNode>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Nodes {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::Deferred;
    use crate::error::Error;

    #[test]
    fn the_first_deferred_error_is_reported_once() {
        let d = Deferred::default();
        assert_eq!(d.take(), None);
        d.defer(Error::invalid_state("first"));
        d.defer(Error::invalid_state("second"));
        assert_eq!(d.take().unwrap().message(), "first");
        assert_eq!(d.take(), None);
    }

    #[test]
    fn a_panic_under_the_lock_leaves_it_usable() {
        let d = std::sync::Arc::new(Deferred::default());
        let d2 = std::sync::Arc::clone(&d);
        let r = std::thread::spawn(move || {
            let _held = crate::lock::lock(&d2.0);
            panic!("a panic while the lock is held");
        })
        .join();
        assert!(r.is_err() && d.0.is_poisoned());
        d.defer(Error::invalid_state("after the panic"));
        assert_eq!(d.take().unwrap().message(), "after the panic");
    }
}
