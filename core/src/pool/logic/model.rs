//! A reference model of the pool allocator, for tests only: the property
//! tests (`tests/props.rs`, operations from proptest strategies) and the
//! fuzz target `pool_ops` (`fuzz/src/pool.rs`, operations decoded from
//! bytes) run the same [`Op`]s through it. Compiled for this crate's tests
//! and with the `model` feature (which the fuzz crate enables).
//!
//! The model knows, from the operations alone: the live blocks (offset,
//! size, owner), the pages the driver has mapped (from the plans), the
//! pages each open capture touched and mapped, the pages each live graph
//! holds, and the counters. After every operation the allocator must agree
//! with it exactly (statistics, plans, errors, block lookups), its own
//! `check_invariants` must pass, and:
//!
//! - a configuration is refused exactly when it breaks a documented rule,
//!   with the error naming that rule;
//! - a block is aligned, inside the range, overlaps no live block, sits on
//!   pages that are mapped once its plan's new pages are, and obeys the
//!   taint rule (eager blocks avoid pages of open captures and live graphs;
//!   a capture avoids pages of other open captures);
//! - growth maps the fewest new pages any free, allowed spot needs; an
//!   out-of-memory refusal names that many pages, and really needs more
//!   than `max_bytes`; "address space exhausted" means no free, allowed spot
//!   holds the block at all (so, in a pool with nothing live or tainted, a
//!   block that fits the range and the cap is never refused);
//! - sizes of 0, or too large to round up, are `InvalidSize`;
//! - refused operations (bad frees, bad captures, dropped plans) change
//!   nothing (statistics, block layout, lookups);
//! - ending a capture yields exactly the pages it touched and the bytes it
//!   holds; aborting it unmaps exactly the pages mapped for it and frees its
//!   blocks, and when nothing else acted since it began, restores the block
//!   layout of that moment; trim unmaps exactly the mapped pages holding
//!   nothing;
//! - after [`Model::teardown`] the pool is empty.

use std::collections::{BTreeMap, BTreeSet};

use super::blocks::State;
use super::pages::Zone;
use super::{Allocator, CaptureId, Footprint, Owner, PagePlan, PoolConfig, PoolError, PoolStats};

/// Who an allocation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// The eager owner.
    Eager,
    /// Open capture `pick % n` (in the order they began); eager when none
    /// is open.
    Open(usize),
    /// A capture that is not open: id `1_000_000 + seed`, or the next id up
    /// that is not open.
    Unknown(u8),
}

/// An address that is not the start of a live block: from the rule below,
/// then counted up (wrapping) past any start of a live block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    /// `1 + delta % size` bytes into live block `pick % n` (in address
    /// order); `At(delta)` when none is live.
    Inside {
        /// Which live block.
        pick: usize,
        /// How far in.
        delta: u64,
    },
    /// This many bytes past the end of the range (wrapping).
    Past(u64),
    /// This many bytes below `u64::MAX`.
    Top(u64),
    /// This offset.
    At(u64),
}

/// Which id a `begin_capture` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Begin {
    /// 0, which is invalid.
    Zero,
    /// The id of open capture `pick % n` (refused as already open); a fresh
    /// id when none is open.
    Open(usize),
    /// An id never used before.
    Fresh,
    /// Id `1 + old % (the highest id given)`, an id of the past (or 1), when
    /// it is not open; a fresh id when it is, or when none was given yet.
    Reuse(u64),
}

/// One operation on the pool. Picks among live blocks, open captures or
/// live graphs are taken modulo their number; with none there, the
/// operation does nothing (unless its doc says otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Plan and commit a block of `size` bytes.
    Alloc {
        /// Bytes asked for.
        size: u64,
        /// The owner.
        who: Who,
    },
    /// Plan a block, then drop the plan (the driver failed to map).
    DropPlan {
        /// Bytes asked for.
        size: u64,
        /// The owner.
        who: Who,
    },
    /// Free live block `pick` (in address order).
    Free {
        /// Which live block.
        pick: usize,
    },
    /// Free an offset that is not a live block's start (refused).
    FreeBogus(Addr),
    /// Begin a capture.
    Begin(Begin),
    /// End open capture `pick` (in the order they began); its graph lives.
    End {
        /// Which open capture.
        pick: usize,
    },
    /// End a capture that is not open (refused), id as [`Who::Unknown`].
    EndUnknown(u8),
    /// Abort open capture `pick` (in the order they began).
    Abort {
        /// Which open capture.
        pick: usize,
    },
    /// Abort a capture that is not open (refused), id as [`Who::Unknown`].
    AbortUnknown(u8),
    /// Release live graph `pick` (in the order they were made).
    Release {
        /// Which live graph.
        pick: usize,
    },
    /// Plan and commit a trim.
    Trim,
    /// Reset the peak statistics.
    ResetPeaks,
    /// Look up the block holding an address.
    Lookup(Addr),
}

/// Blocks as [`layout`] lists them.
pub(crate) type Layout = Vec<(u64, u64, State)>;

/// Every block, in address order: (offset, size, state), for comparing
/// layouts (index classes may differ after a rollback, by hysteresis).
///
/// Parked blocks (freed, not yet merged) are listed as the free space they
/// become when settled: clean free space merged with clean free neighbours.
pub(crate) fn layout(a: &Allocator) -> Layout {
    let parked: BTreeSet<u64> = a.blocks.parked().map(|(o, _)| o).collect();
    let mut out: Layout = Vec::new();
    for (o, b) in a.blocks.iter() {
        let state = if parked.contains(&o) {
            State::Free(Zone::Clean)
        } else {
            b.state
        };
        match out.last_mut() {
            Some((_, size, last)) if *last == state && matches!(state, State::Free(_)) => {
                *size += b.size;
            }
            _ => out.push((o, b.size, state)),
        }
    }
    out
}

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// An open capture as the model sees it.
struct Cap {
    id: CaptureId,
    /// Unique per begin (ids may be reused after a capture closes).
    serial: u64,
    touched: BTreeSet<u64>,
    mapped: BTreeSet<u64>,
    live_bytes: u64,
    peak: u64,
    /// Statistics and layout at `begin_capture`, while nothing but this
    /// capture changed the pool since.
    quiet: Option<(PoolStats, Layout)>,
}

/// The allocator, driven by [`Op`]s and checked against the model.
pub struct Model {
    a: Allocator,
    cfg: PoolConfig,
    /// Live blocks: offset -> (size, owner, serial of the capture that made
    /// it while open, 0 for eager blocks).
    live: BTreeMap<u64, (u64, Owner, u64)>,
    caps: Vec<Cap>,
    graphs: Vec<(Footprint, BTreeSet<u64>)>,
    /// Pages mapped by the driver, from the plans alone.
    mapped: BTreeSet<u64>,
    allocs: u64,
    frees: u64,
    peak_allocated: u64,
    peak_reserved: u64,
    next_id: CaptureId,
    serial: u64,
    /// The latest operations, for error messages.
    log: Vec<String>,
    /// Rules whose checks are off (see [`Model::skip`]).
    skip: Vec<String>,
}

/// The pages `off .. off + size` touches.
fn pages(g: u64, off: u64, size: u64) -> std::ops::Range<u64> {
    off / g..(off + size - 1) / g + 1
}

fn plan_pages(plan: &PagePlan) -> BTreeSet<u64> {
    plan.ranges()
        .iter()
        .flat_map(|r| r.start..r.end())
        .collect()
}

/// What `Allocator::new` must answer for `cfg`: the pages mapped up front.
fn expected_new(cfg: &PoolConfig) -> Result<u64, PoolError> {
    let invalid = |field, value, rule| PoolError::InvalidConfig { field, value, rule };
    if !cfg.alignment.is_power_of_two() {
        return Err(invalid("alignment", cfg.alignment, "a power of two"));
    }
    if !cfg.granularity.is_power_of_two() || cfg.granularity < cfg.alignment {
        return Err(invalid(
            "granularity",
            cfg.granularity,
            "a power of two, at least alignment",
        ));
    }
    if cfg.va_bytes == 0 || cfg.va_bytes % cfg.granularity != 0 {
        return Err(invalid(
            "va_bytes",
            cfg.va_bytes,
            "a nonzero multiple of granularity",
        ));
    }
    if cfg.initial_bytes > cfg.va_bytes {
        return Err(invalid(
            "initial_bytes",
            cfg.initial_bytes,
            "at most va_bytes",
        ));
    }
    let initial = cfg.initial_bytes.div_ceil(cfg.granularity) * cfg.granularity;
    if initial > cfg.max_bytes {
        return Err(PoolError::InitialExceedsMax {
            initial,
            max: cfg.max_bytes,
        });
    }
    Ok(initial / cfg.granularity)
}

/// The allocator's state, to compare across refused operations.
type Snapshot = (PoolStats, Layout, Vec<Option<(u64, u64)>>);

impl Model {
    /// Creates a pool for `cfg` and checks the answer against the rules:
    /// `Ok(None)` when it was rightly refused.
    pub fn new(cfg: PoolConfig) -> Result<Option<Model>, String> {
        let (a, mapped) = match (Allocator::new(cfg), expected_new(&cfg)) {
            (Ok((a, plan)), Ok(pages)) => {
                let got = plan_pages(&plan);
                ensure!(
                    got == (0..pages).collect(),
                    "{cfg:?}: initial plan maps {got:?}, want pages 0..{pages}"
                );
                (a, got)
            }
            (Err(e), Err(w)) => {
                ensure!(e == w, "{cfg:?}: refused with {e:?}, want {w:?}");
                return Ok(None);
            }
            (got, want) => {
                return Err(format!(
                    "{cfg:?}: Allocator::new gave {:?}, want {want:?}",
                    got.map(|(_, p)| p)
                ))
            }
        };
        let m = Model {
            peak_reserved: mapped.len() as u64 * cfg.granularity,
            a,
            cfg,
            live: BTreeMap::new(),
            caps: Vec::new(),
            graphs: Vec::new(),
            mapped,
            allocs: 0,
            frees: 0,
            peak_allocated: 0,
            next_id: 1,
            serial: 0,
            log: Vec::new(),
            skip: Vec::new(),
        };
        m.check()
            .map_err(|e| format!("{cfg:?}: after creation: {e}"))?;
        Ok(Some(m))
    }

    /// Turns off the checks of the named rules (the names in brackets in
    /// error messages). For triage only: it lets fuzzing go on past a known,
    /// reported defect to find the next one.
    pub fn skip(&mut self, rules: Vec<String>) {
        self.skip = rules;
    }

    /// The pool's configuration.
    pub fn config(&self) -> &PoolConfig {
        &self.cfg
    }

    /// How many blocks are live.
    pub fn live_blocks(&self) -> usize {
        self.live.len()
    }

    /// Live block `i` in address order: (offset, size).
    pub fn live_block(&self, i: usize) -> Option<(u64, u64)> {
        self.live.iter().nth(i).map(|(&o, &(s, _, _))| (o, s))
    }

    /// How many captures are open.
    pub fn open_captures(&self) -> usize {
        self.caps.len()
    }

    /// How many graphs are live.
    pub fn live_graphs(&self) -> usize {
        self.graphs.len()
    }

    /// The last fresh capture id given (fresh ids are 2, 3, ...; 1 before
    /// any).
    pub fn last_id(&self) -> CaptureId {
        self.next_id
    }

    /// Runs `op` and checks the pool against the model; `Err` describes the
    /// first mismatch.
    pub fn apply(&mut self, op: Op) -> Result<(), String> {
        self.step(op).and_then(|_| self.check()).map_err(|e| {
            let tail: Vec<&String> = self.log.iter().rev().take(12).rev().collect();
            format!("{:?}: {e}\n  last operations: {tail:#?}", self.cfg)
        })
    }

    /// Tears the pool down: aborts every capture, releases every graph,
    /// frees every block and trims; the pool must end empty.
    pub fn teardown(mut self) -> Result<(), String> {
        while !self.caps.is_empty() {
            self.apply(Op::Abort { pick: 0 })?;
        }
        while !self.graphs.is_empty() {
            self.apply(Op::Release { pick: 0 })?;
        }
        while !self.live.is_empty() {
            self.apply(Op::Free { pick: 0 })?;
        }
        self.apply(Op::Trim)?;
        let s = self.a.stats();
        ensure!(
            s.allocated_bytes == 0
                && s.reserved_bytes == 0
                && s.tainted_pages == 0
                && s.segment_count == 0,
            "{:?}: pool not empty after teardown: {s:?}",
            self.cfg
        );
        Ok(())
    }

    fn skipped(&self, rule: &str) -> bool {
        self.skip.iter().any(|s| s == rule)
    }

    fn g(&self) -> u64 {
        self.cfg.granularity
    }

    fn reserved(&self) -> u64 {
        self.mapped.len() as u64 * self.g()
    }

    fn note(&mut self, what: String) {
        if self.log.len() >= 64 {
            self.log.remove(0);
        }
        self.log.push(what);
    }

    fn step(&mut self, op: Op) -> Result<(), String> {
        match op {
            Op::Alloc { size, who } => self.alloc(size, self.owner(who)),
            Op::DropPlan { size, who } => self.drop_plan(size, self.owner(who)),
            Op::Free { pick } => match self.live_block(pick % self.live.len().max(1)) {
                Some((off, _)) => self.free(off),
                None => Ok(()),
            },
            Op::FreeBogus(addr) => self.free_bogus(self.addr(addr)),
            Op::Begin(b) => self.begin(b),
            Op::End { pick } if !self.caps.is_empty() => self.end(pick % self.caps.len()),
            Op::EndUnknown(seed) => self.end_unknown(self.unknown_id(seed)),
            Op::Abort { pick } if !self.caps.is_empty() => self.abort(pick % self.caps.len()),
            Op::AbortUnknown(seed) => self.abort_unknown(self.unknown_id(seed)),
            Op::Release { pick } if !self.graphs.is_empty() => {
                self.release(pick % self.graphs.len())
            }
            Op::End { .. } | Op::Abort { .. } | Op::Release { .. } => Ok(()),
            Op::Trim => self.trim(),
            Op::ResetPeaks => {
                self.note("reset_peaks".into());
                self.a.reset_peaks();
                self.peak_allocated = self.live.values().map(|v| v.0).sum();
                self.peak_reserved = self.reserved();
                Ok(())
            }
            Op::Lookup(addr) => self.lookup(self.addr(addr)),
        }
    }

    fn owner(&self, who: Who) -> Owner {
        match who {
            Who::Open(pick) if !self.caps.is_empty() => {
                Owner::Capture(self.caps[pick % self.caps.len()].id)
            }
            Who::Eager | Who::Open(_) => Owner::Eager,
            Who::Unknown(seed) => Owner::Capture(self.unknown_id(seed)),
        }
    }

    /// A capture id that is not open (0 is never valid).
    fn unknown_id(&self, seed: u8) -> CaptureId {
        let mut id = 1_000_000 + seed as u64;
        while self.caps.iter().any(|c| c.id == id) {
            id += 1;
        }
        id
    }

    fn addr(&self, addr: Addr) -> u64 {
        let mut off = match addr {
            Addr::Inside { pick, delta } if !self.live.is_empty() => {
                let (o, size) = self.live_block(pick % self.live.len()).unwrap();
                o + 1 + delta % size
            }
            Addr::Inside { delta: at, .. } | Addr::At(at) => at,
            Addr::Past(x) => self.cfg.va_bytes.wrapping_add(x),
            Addr::Top(x) => u64::MAX - x,
        };
        while self.live.contains_key(&off) {
            off = off.wrapping_add(1);
        }
        off
    }

    /// Something other than capture `except` changed the pool.
    fn disturb(&mut self, except: Option<CaptureId>) {
        for c in &mut self.caps {
            if Some(c.id) != except {
                c.quiet = None;
            }
        }
    }

    fn snapshot(&self) -> Snapshot {
        let probes = self
            .live
            .iter()
            .flat_map(|(&o, &(s, _, _))| [o, o + s - 1])
            .map(|a| self.a.block_at(a))
            .collect();
        (self.a.stats(), layout(&self.a), probes)
    }

    fn unchanged(&self, before: Snapshot, what: &str) -> Result<(), String> {
        let after = self.snapshot();
        ensure!(
            after == before,
            "{what} changed the pool: {before:?} -> {after:?}"
        );
        Ok(())
    }

    /// May `owner` place a block on page `p` (the taint rule)?
    fn allowed(&self, p: u64, owner: Owner) -> bool {
        self.caps
            .iter()
            .all(|c| owner == Owner::Capture(c.id) || !c.touched.contains(&p))
            && (owner != Owner::Eager || self.graphs.iter().all(|(_, gp)| !gp.contains(&p)))
    }

    /// The fewest unmapped pages an aligned `size`-byte block of `owner`
    /// could overlap, on bytes no live block holds and pages the taint rule
    /// lets it use; `None`: there is no such spot.
    fn fewest_new_pages(&self, size: u64, owner: Owner) -> Option<u64> {
        let (g, align, va) = (self.g(), self.cfg.alignment, self.cfg.va_bytes);
        if size > va {
            return None;
        }
        let mut taken: Vec<(u64, u64)> = self
            .live
            .iter()
            .map(|(&o, &(s, _, _))| (o, o + s))
            .collect();
        taken.extend(
            (0..va / g)
                .filter(|&p| !self.allowed(p, owner))
                .map(|p| (p * g, (p + 1) * g)),
        );
        taken.sort_unstable();
        taken.push((va, va));
        let new_pages = |x: u64| {
            pages(g, x, size)
                .filter(|p| !self.mapped.contains(p))
                .count() as u64
        };
        let mut best: Option<u64> = None;
        let mut lo = 0;
        for (start, end) in taken {
            if start >= lo && start - lo >= size {
                // A free stretch lo..start (every bound aligned). The number
                // of new pages is constant while the first and last page the
                // block overlaps are; so the lowest aligned offset of each
                // such piece is enough: lo, a page start, or the offset whose
                // last byte just crosses into a page.
                let hi = start - size;
                let candidates = (lo / g..=start / g + 1).flat_map(|k| {
                    let b = k * g;
                    [Some(b), b.checked_sub(size).map(|x| x + align)]
                });
                for x in std::iter::once(Some(lo)).chain(candidates).flatten() {
                    if (lo..=hi).contains(&x) {
                        let n = new_pages(x);
                        best = Some(best.map_or(n, |b| b.min(n)));
                    }
                }
            }
            lo = lo.max(end);
        }
        // Natively only: under Miri the brute force would take most of the
        // run, and it checks placement, not memory safety.
        #[cfg(test)]
        if !cfg!(miri) && va / align <= 1 << 14 {
            assert_eq!(best, self.fewest_new_pages_slowly(size, owner));
        }
        best
    }

    /// `fewest_new_pages` by brute force over every aligned offset, to test
    /// it with.
    #[cfg(test)]
    fn fewest_new_pages_slowly(&self, size: u64, owner: Owner) -> Option<u64> {
        let (g, a, va) = (self.g(), self.cfg.alignment, self.cfg.va_bytes);
        // Per aligned slot: free and on an allowed page; prefix counts.
        let slots = (va / a) as usize;
        let mut ok = vec![true; slots];
        for (&o, &(s, _, _)) in &self.live {
            ok[(o / a) as usize..((o + s) / a) as usize].fill(false);
        }
        for (i, v) in ok.iter_mut().enumerate() {
            *v = *v && self.allowed(i as u64 * a / g, owner);
        }
        let mut bad = vec![0; slots + 1];
        for i in 0..slots {
            bad[i + 1] = bad[i] + usize::from(!ok[i]);
        }
        let n = (size / a) as usize;
        (0..(slots + 1).checked_sub(n)?)
            .filter(|&i| bad[i + n] == bad[i])
            .map(|i| {
                let x = i as u64 * a;
                pages(g, x, size)
                    .filter(|p| !self.mapped.contains(p))
                    .count() as u64
            })
            .min()
    }

    fn alloc(&mut self, size: u64, owner: Owner) -> Result<(), String> {
        let (g, align, va) = (self.g(), self.cfg.alignment, self.cfg.va_bytes);
        self.note(format!("alloc {size} for {owner:?}"));
        let rounded = size
            .checked_add(align - 1)
            .filter(|_| size > 0)
            .map(|s| s & !(align - 1));
        let open = match owner {
            Owner::Capture(id) => self.caps.iter().any(|c| c.id == id),
            Owner::Eager => true,
        };
        let quiet = self.live.is_empty() && self.caps.is_empty() && self.graphs.is_empty();
        let before = self.snapshot();
        // As the device pool does: a parked block of the size first, else a
        // plan.
        let parked = self.a.alloc_parked(size, owner);
        let plan = match parked {
            Some(_) => None,
            None => match self.a.plan_alloc(size, owner) {
                Ok(plan) => Some(plan),
                Err(e) => {
                    self.unchanged(before, "a refused allocation")?;
                    return self.refused(e, size, rounded, owner, open, quiet);
                }
            },
        };
        let Some(r) = rounded else {
            return Err(format!("alloc({size}) planned, but the size is invalid"));
        };
        ensure!(
            open,
            "alloc for capture {owner:?}, which is not open, was planned"
        );
        ensure!(
            parked.is_none() || owner == Owner::Eager,
            "a parked block was handed to {owner:?}"
        );
        let (off, sz) = match (&plan, parked) {
            (Some(plan), _) => (plan.offset(), plan.size()),
            (None, off) => (off.expect("parked or planned"), r),
        };
        ensure!(sz == r, "planned size {sz}, want {r}");
        ensure!(
            off % align == 0 && off.checked_add(sz).is_some_and(|e| e <= va),
            "block {off}+{sz} unaligned or outside the {va}-byte range"
        );
        if let Some((&o, &(s, _, _))) = self.live.range(..off + sz).next_back() {
            ensure!(o + s <= off, "block {off}+{sz} overlaps live block {o}+{s}");
        }
        let want_new: Vec<u64> = pages(g, off, sz)
            .filter(|p| !self.mapped.contains(p))
            .collect();
        let got_new: Vec<u64> = plan
            .iter()
            .flat_map(|p| p.new_pages())
            .flat_map(|r| r.start..r.end())
            .collect();
        ensure!(
            got_new == want_new,
            "block {off}+{sz} needs new pages {want_new:?}, the plan maps {got_new:?}"
        );
        let counted = plan.as_ref().map_or(0, |p| p.new_page_count());
        ensure!(
            counted == got_new.len() as u64,
            "the plan counts {counted} new pages, its runs hold {}",
            got_new.len()
        );
        ensure!(
            self.reserved() + got_new.len() as u64 * g <= self.cfg.max_bytes,
            "the plan maps past max_bytes"
        );
        if !got_new.is_empty() {
            let fewest = self.fewest_new_pages(sz, owner);
            ensure!(
                fewest == Some(got_new.len() as u64) || self.skipped("fewest-pages"),
                "[fewest-pages] block {off}+{sz} maps {} new pages, the fewest any free spot \
                 needs is {fewest:?}",
                got_new.len()
            );
        }
        for p in pages(g, off, sz) {
            for c in &self.caps {
                ensure!(
                    owner == Owner::Capture(c.id) || !c.touched.contains(&p),
                    "{owner:?} block {off}+{sz} on page {p} of open capture {}",
                    c.id
                );
            }
            if owner == Owner::Eager {
                for (fp, gp) in &self.graphs {
                    ensure!(
                        !gp.contains(&p),
                        "eager block {off}+{sz} on page {p} of the graph of capture {}",
                        fp.capture_id()
                    );
                }
            }
        }
        if let Some(plan) = plan {
            let committed = self.a.commit_alloc(plan);
            ensure!(committed == off, "committed at {committed}, planned {off}");
        }
        let got = self.a.block_at(off);
        ensure!(
            got == Some((off, sz)),
            "block {off}+{sz} handed out, the pool has {got:?} there"
        );
        self.mapped.extend(got_new.iter().copied());
        self.allocs += 1;
        let serial = match owner {
            Owner::Eager => {
                self.disturb(None);
                0
            }
            Owner::Capture(id) => {
                self.disturb(Some(id));
                let c = self.caps.iter_mut().find(|c| c.id == id).unwrap();
                c.touched.extend(pages(g, off, sz));
                c.mapped.extend(got_new);
                c.live_bytes += sz;
                c.peak = c.peak.max(c.live_bytes);
                c.serial
            }
        };
        self.live.insert(off, (sz, owner, serial));
        let allocated: u64 = self.live.values().map(|v| v.0).sum();
        self.peak_allocated = self.peak_allocated.max(allocated);
        self.peak_reserved = self.peak_reserved.max(self.reserved());
        Ok(())
    }

    /// Checks a refused `plan_alloc(size, owner)`.
    fn refused(
        &self,
        e: PoolError,
        size: u64,
        rounded: Option<u64>,
        owner: Owner,
        open: bool,
        quiet: bool,
    ) -> Result<(), String> {
        let (g, va, max) = (self.g(), self.cfg.va_bytes, self.cfg.max_bytes);
        match (e, rounded) {
            (PoolError::InvalidSize { size: s }, None) if s == size => Ok(()),
            (PoolError::CaptureNotOpen { id }, Some(_)) if !open && owner == Owner::Capture(id) => {
                Ok(())
            }
            (
                PoolError::OutOfMemory {
                    requested,
                    needed,
                    reserved,
                    max: m,
                },
                Some(r),
            ) if open => {
                ensure!(
                    requested == r && reserved == self.reserved() && m == max,
                    "OutOfMemory {{ requested {requested}, reserved {reserved}, max {m} }} \
                     for a {r}-byte block with {} reserved",
                    self.reserved()
                );
                ensure!(
                    needed > 0 && reserved.saturating_add(needed) > max,
                    "OutOfMemory but {reserved} + {needed} fits the cap {max}"
                );
                ensure!(
                    !(quiet && r <= va && self.reserved() + r.div_ceil(g) * g <= max)
                        || self.skipped("empty-pool-fits"),
                    "[empty-pool-fits] a {r}-byte block was refused (out of memory) by an \
                     empty pool it fits"
                );
                let fewest = self.fewest_new_pages(r, owner);
                ensure!(
                    fewest.map(|n| n * g) == Some(needed) || self.skipped("fewest-pages"),
                    "[fewest-pages] OutOfMemory needs {needed} bytes for a {r}-byte block; the \
                     fewest pages any free spot needs is {fewest:?}"
                );
                Ok(())
            }
            (
                PoolError::AddressSpaceExhausted {
                    requested,
                    va_bytes,
                },
                Some(r),
            ) if open => {
                ensure!(
                    requested == r && va_bytes == va,
                    "AddressSpaceExhausted {{ {requested}, {va_bytes} }} for {r} in {va}"
                );
                ensure!(
                    !(quiet && r <= va) || self.skipped("empty-pool-fits"),
                    "[empty-pool-fits] a {r}-byte block found no room in an empty \
                     {va}-byte range (AddressSpaceExhausted says no free run is large \
                     enough, but the whole range is free)"
                );
                let fewest = self.fewest_new_pages(r, owner);
                ensure!(
                    fewest.is_none() || self.skipped("fewest-pages"),
                    "[fewest-pages] AddressSpaceExhausted for a {r}-byte block, but a free \
                     spot needs {fewest:?} new pages"
                );
                Ok(())
            }
            (e, _) => Err(format!(
                "alloc({size}, {owner:?}) refused with {e:?}; rounded {rounded:?}, open {open}"
            )),
        }
    }

    fn drop_plan(&mut self, size: u64, owner: Owner) -> Result<(), String> {
        self.note(format!("plan and drop {size} for {owner:?}"));
        let before = self.snapshot();
        drop(self.a.plan_alloc(size, owner));
        self.unchanged(before, "a dropped plan")
    }

    fn free(&mut self, off: u64) -> Result<(), String> {
        self.note(format!("free {off}"));
        let (size, _, serial) = self.live[&off];
        let r = self.a.free(off);
        ensure!(
            r == Ok(size),
            "free({off}) of a live {size}-byte block gave {r:?}"
        );
        self.live.remove(&off);
        self.frees += 1;
        let by = self
            .caps
            .iter_mut()
            .find(|c| serial != 0 && c.serial == serial)
            .map(|c| {
                c.live_bytes -= size;
                c.id
            });
        self.disturb(by);
        Ok(())
    }

    fn free_bogus(&mut self, off: u64) -> Result<(), String> {
        self.note(format!("free bogus {off}"));
        let before = self.snapshot();
        let r = self.a.free(off);
        ensure!(
            r == Err(PoolError::NotAllocated { offset: off }),
            "free({off}) of no live block gave {r:?}"
        );
        self.unchanged(before, "a bogus free")
    }

    fn fresh_id(&mut self) -> CaptureId {
        self.next_id += 1;
        self.next_id
    }

    fn begin(&mut self, b: Begin) -> Result<(), String> {
        let before = self.snapshot();
        let id = match b {
            Begin::Zero => {
                self.note("begin 0".into());
                let r = self.a.begin_capture(0);
                ensure!(r == Err(PoolError::InvalidCaptureId), "begin(0) gave {r:?}");
                return self.unchanged(before, "begin(0)");
            }
            Begin::Open(pick) if !self.caps.is_empty() => {
                let id = self.caps[pick % self.caps.len()].id;
                self.note(format!("begin open {id}"));
                let r = self.a.begin_capture(id);
                ensure!(
                    r == Err(PoolError::CaptureAlreadyOpen { id }),
                    "begin({id}) of an open capture gave {r:?}"
                );
                return self.unchanged(before, "a second begin");
            }
            Begin::Reuse(old) if self.next_id > 1 => {
                let old = 1 + old % (self.next_id - 1);
                if self.caps.iter().any(|c| c.id == old) {
                    self.fresh_id()
                } else {
                    old
                }
            }
            Begin::Open(_) | Begin::Fresh | Begin::Reuse(_) => self.fresh_id(),
        };
        self.note(format!("begin {id}"));
        let r = self.a.begin_capture(id);
        ensure!(r == Ok(()), "begin({id}) gave {r:?}");
        self.serial += 1;
        self.caps.push(Cap {
            id,
            serial: self.serial,
            touched: BTreeSet::new(),
            mapped: BTreeSet::new(),
            live_bytes: 0,
            peak: 0,
            quiet: Some((self.a.stats(), layout(&self.a))),
        });
        Ok(())
    }

    fn end_unknown(&mut self, id: CaptureId) -> Result<(), String> {
        self.note(format!("end unknown {id}"));
        let before = self.snapshot();
        let r = self.a.end_capture(id);
        ensure!(
            r == Err(PoolError::CaptureNotOpen { id }),
            "end of capture {id} (not open) gave {r:?}"
        );
        self.unchanged(before, "end of an unknown capture")
    }

    fn end(&mut self, i: usize) -> Result<(), String> {
        let c = self.caps.remove(i);
        self.note(format!("end {}", c.id));
        let fp = self
            .a
            .end_capture(c.id)
            .map_err(|e| format!("end of open capture {} gave {e:?}", c.id))?;
        let fp_pages: BTreeSet<u64> = fp.pages().iter().flat_map(|r| r.start..r.end()).collect();
        ensure!(
            fp_pages == c.touched,
            "capture {} touched {:?}, its footprint holds {fp_pages:?}",
            c.id,
            c.touched
        );
        ensure!(
            fp.page_count() == c.touched.len() as u64,
            "footprint page_count {} for {} pages",
            fp.page_count(),
            c.touched.len()
        );
        ensure!(
            (fp.held_bytes(), fp.peak_bytes(), fp.capture_id()) == (c.live_bytes, c.peak, c.id),
            "footprint holds {} bytes (peak {}) of capture {}, want {} (peak {}) of {}",
            fp.held_bytes(),
            fp.peak_bytes(),
            fp.capture_id(),
            c.live_bytes,
            c.peak,
            c.id
        );
        self.graphs.push((fp, fp_pages));
        self.disturb(None);
        Ok(())
    }

    fn abort_unknown(&mut self, id: CaptureId) -> Result<(), String> {
        self.note(format!("abort unknown {id}"));
        let before = self.snapshot();
        let r = self.a.abort_capture(id);
        ensure!(
            r == Err(PoolError::CaptureNotOpen { id }),
            "abort of capture {id} (not open) gave {r:?}"
        );
        self.unchanged(before, "abort of an unknown capture")
    }

    fn abort(&mut self, i: usize) -> Result<(), String> {
        let c = self.caps.remove(i);
        self.note(format!("abort {}", c.id));
        let reserved = self.a.stats().reserved_bytes;
        let plan = self
            .a
            .abort_capture(c.id)
            .map_err(|e| format!("abort of open capture {} gave {e:?}", c.id))?;
        let unmapped = plan_pages(&plan);
        ensure!(
            unmapped == c.mapped,
            "abort of capture {} unmaps {unmapped:?}; it mapped {:?}",
            c.id,
            c.mapped
        );
        let after = self.a.stats().reserved_bytes;
        ensure!(
            after == reserved - self.g() * c.mapped.len() as u64,
            "abort of capture {} left {after} bytes reserved of {reserved}, unmapping {} pages",
            c.id,
            c.mapped.len()
        );
        for p in &unmapped {
            self.mapped.remove(p);
        }
        let mine: Vec<u64> = self
            .live
            .iter()
            .filter(|(_, v)| v.2 == c.serial)
            .map(|(&o, _)| o)
            .collect();
        for o in mine {
            ensure!(
                self.a.block_at(o).is_none(),
                "block {o} of aborted capture {} is still live",
                c.id
            );
            self.live.remove(&o);
            self.frees += 1;
        }
        // Nothing else acted since the capture began: its abort restores
        // the pool of that moment (but for counters and peaks).
        if let Some((was, blocks)) = c.quiet {
            let s = self.a.stats();
            let key = |s: &PoolStats| {
                (
                    s.allocated_bytes,
                    s.reserved_bytes,
                    s.segment_count,
                    s.block_count,
                    s.free_block_count,
                    s.tainted_pages,
                )
            };
            ensure!(
                key(&s) == key(&was),
                "abort of capture {} (alone since it began) leaves {s:?}, it began at {was:?}",
                c.id
            );
            let now = layout(&self.a);
            ensure!(
                now == blocks,
                "abort of capture {} (alone since it began) leaves blocks {now:?}, it began \
                 with {blocks:?}",
                c.id
            );
        }
        self.disturb(None);
        Ok(())
    }

    fn release(&mut self, i: usize) -> Result<(), String> {
        let (fp, _) = self.graphs.remove(i);
        self.note(format!("release graph of capture {}", fp.capture_id()));
        self.a
            .release_graph(fp)
            .map_err(|e| format!("release of a live graph gave {e:?}"))?;
        self.disturb(None);
        Ok(())
    }

    fn trim(&mut self) -> Result<(), String> {
        self.note("trim".into());
        let g = self.g();
        let plan = self.a.plan_trim();
        let want: BTreeSet<u64> = self
            .mapped
            .iter()
            .copied()
            .filter(|&p| {
                !self.graphs.iter().any(|(_, gp)| gp.contains(&p))
                    && !self.caps.iter().any(|c| c.touched.contains(&p))
                    && !self
                        .live
                        .iter()
                        .any(|(&o, &(s, _, _))| o < (p + 1) * g && o + s > p * g)
            })
            .collect();
        let got = plan_pages(&plan);
        ensure!(got == want, "trim plans {got:?}, want {want:?}");
        if !got.is_empty() {
            self.disturb(None);
        }
        self.a.commit_trim(plan);
        for p in got {
            self.mapped.remove(&p);
        }
        Ok(())
    }

    fn lookup(&mut self, addr: u64) -> Result<(), String> {
        self.note(format!("lookup {addr}"));
        let want = self
            .live
            .range(..=addr)
            .next_back()
            .filter(|(&o, &(s, _, _))| addr < o + s)
            .map(|(&o, &(s, _, _))| (o, s));
        let got = self.a.block_at(addr);
        ensure!(got == want, "block_at({addr}) = {got:?}, want {want:?}");
        Ok(())
    }

    /// Everything the model knows, against the allocator.
    fn check(&self) -> Result<(), String> {
        self.a
            .check_invariants()
            .map_err(|e| format!("invariant broken: {e}"))?;
        let s = self.a.stats();
        let g = self.g();
        let allocated: u64 = self.live.values().map(|v| v.0).sum();
        let mut tainted: BTreeSet<u64> = BTreeSet::new();
        for c in &self.caps {
            tainted.extend(&c.touched);
        }
        for (_, gp) in &self.graphs {
            tainted.extend(gp);
        }
        let segments = self
            .mapped
            .iter()
            .filter(|&&p| p == 0 || !self.mapped.contains(&(p - 1)))
            .count() as u64;
        let want = PoolStats {
            allocated_bytes: allocated,
            reserved_bytes: self.reserved(),
            peak_allocated_bytes: self.peak_allocated,
            peak_reserved_bytes: self.peak_reserved,
            segment_count: segments,
            block_count: self.live.len() as u64,
            free_block_count: s.free_block_count, // the layout's business
            alloc_count: self.allocs,
            free_count: self.frees,
            tainted_pages: tainted.len() as u64,
            open_captures: self.caps.len() as u64,
            live_graphs: self.graphs.len() as u64,
        };
        ensure!(s == want, "statistics {s:?}, model says {want:?}");
        ensure!(
            s.reserved_bytes <= self.cfg.max_bytes,
            "reserved {} over max {}",
            s.reserved_bytes,
            self.cfg.max_bytes
        );
        for (&o, &(size, _, _)) in &self.live {
            for a in [o, o + size - 1] {
                ensure!(
                    self.a.block_at(a) == Some((o, size)),
                    "block_at({a}) = {:?}, live block {o}+{size}",
                    self.a.block_at(a)
                );
            }
            for p in pages(g, o, size) {
                ensure!(
                    self.mapped.contains(&p),
                    "live block {o}+{size} on page {p}, which is not mapped"
                );
            }
        }
        Ok(())
    }
}
