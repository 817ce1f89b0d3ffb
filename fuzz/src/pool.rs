//! The pool allocator against a reference model.
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
//! - sizes of 0, or too large to round up, are `InvalidSize`; an
//!   out-of-memory refusal really needs more than `max_bytes`; in a pool with
//!   nothing live or tainted, a block that fits the range and the cap is
//!   never refused;
//! - refused operations (bad frees, bad captures, dropped plans) change
//!   nothing;
//! - ending a capture yields exactly the pages it touched and the bytes it
//!   holds; aborting it unmaps exactly the pages mapped for it and frees its
//!   blocks; trim unmaps exactly the mapped pages holding nothing.

use crate::Input;
use graphcore_core::pool::{
    Allocator, CaptureId, Footprint, Owner, PagePlan, PoolConfig, PoolError, PoolStats,
};
use std::collections::{BTreeMap, BTreeSet};

/// Most operations one input runs (keeps each execution short).
const MAX_OPS: usize = 400;

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
}

struct Model {
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
    log: Vec<String>,
}

/// True when rule `name` is listed in `GC_FUZZ_SKIP` (comma-separated).
/// For triage only: it lets fuzzing go on past a known, reported defect to
/// find the next one. CI never sets it.
fn skipped(name: &str) -> bool {
    static SKIP: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SKIP.get_or_init(|| {
        std::env::var("GC_FUZZ_SKIP")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
    .iter()
    .any(|s| s == name)
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

/// A configuration from the input: usually valid, sometimes breaking one
/// rule.
fn config(input: &mut Input) -> PoolConfig {
    let gshift = 8 + input.below(9) as u32; // 256 B .. 64 KiB pages
    let mut granularity = 1u64 << gshift;
    let mut alignment = 1u64 << input.below(gshift as u64 + 1);
    match input.below(16) {
        0 => alignment = 0,
        1 => alignment = 3 << input.below(8),
        2 => alignment = granularity << 1, // a power of two above the page
        3 => granularity += 256,           // not a power of two
        _ => {}
    }
    let va_pages = match input.below(8) {
        0 => 0,
        1 => 1,
        _ => 1 + input.below(64),
    };
    let mut va_bytes = va_pages.wrapping_mul(granularity);
    if input.below(16) == 0 {
        va_bytes += 1;
    }
    let initial_bytes = match input.below(4) {
        0 | 1 => 0,
        2 => input.below(va_bytes.max(1) + 1),
        _ => input.below(va_bytes.saturating_mul(2).max(1)),
    };
    let max_bytes = match input.below(4) {
        0 | 1 => u64::MAX,
        _ => input.below(va_bytes.max(1).saturating_mul(2)),
    };
    PoolConfig {
        granularity,
        alignment,
        va_bytes,
        initial_bytes,
        max_bytes,
    }
}

/// What `Allocator::new` must answer for `cfg`.
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
    if cfg.va_bytes == 0 || !cfg.va_bytes.is_multiple_of(cfg.granularity) {
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

/// Runs the operations `data` encodes; `Err` describes the first mismatch.
pub fn run(data: &[u8]) -> Result<(), String> {
    let mut input = Input::new(data);
    let cfg = config(&mut input);
    let want = expected_new(&cfg);
    let (a, plan) = match (Allocator::new(cfg), want) {
        (Ok((a, plan)), Ok(pages)) => {
            let got = plan_pages(&plan);
            ensure!(
                got == (0..pages).collect(),
                "{cfg:?}: initial plan maps {got:?}, want pages 0..{pages}"
            );
            (a, plan)
        }
        (Err(e), Err(w)) => {
            ensure!(e == w, "{cfg:?}: refused with {e:?}, want {w:?}");
            return Ok(());
        }
        (got, want) => {
            return Err(format!(
                "{cfg:?}: Allocator::new gave {:?}, want {want:?}",
                got.map(|(_, p)| p)
            ))
        }
    };
    let mapped = plan_pages(&plan);
    let mut m = Model {
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
    };
    m.check()
        .map_err(|e| format!("{cfg:?}: after creation: {e}"))?;
    let mut ops = 0;
    while !input.is_empty() && ops < MAX_OPS {
        ops += 1;
        m.step(&mut input).and_then(|_| m.check()).map_err(|e| {
            let tail: Vec<&String> = m.log.iter().rev().take(12).rev().collect();
            format!("{cfg:?}: {e}\n  last operations: {tail:#?}")
        })?;
    }
    // Tear down: everything goes, and the pool ends empty.
    while !m.caps.is_empty() {
        m.abort(0)?;
        m.check()?;
    }
    while !m.graphs.is_empty() {
        m.release(0)?;
    }
    let offsets: Vec<u64> = m.live.keys().copied().collect();
    for off in offsets {
        m.free(off)?;
    }
    m.trim()?;
    m.check()?;
    let s = m.a.stats();
    ensure!(
        s.allocated_bytes == 0 && s.reserved_bytes == 0 && s.tainted_pages == 0,
        "pool not empty after teardown: {s:?}"
    );
    Ok(())
}

impl Model {
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

    fn step(&mut self, input: &mut Input) -> Result<(), String> {
        match input.below(20) {
            0..=6 => {
                let size = self.size(input);
                let owner = self.owner(input);
                self.alloc(size, owner)
            }
            7 => {
                let size = self.size(input);
                let owner = self.owner(input);
                self.drop_plan(size, owner)
            }
            8..=11 => {
                if self.live.is_empty() {
                    return Ok(());
                }
                let i = input.below(self.live.len() as u64) as usize;
                let off = *self.live.keys().nth(i).unwrap();
                self.free(off)
            }
            12 => {
                let off = self.bogus_offset(input);
                self.free_bogus(off)
            }
            13 => self.begin(input),
            14 => {
                if self.caps.is_empty() || input.below(8) == 0 {
                    let id = self.unknown_id(input);
                    return self.end_unknown(id);
                }
                let i = input.below(self.caps.len() as u64) as usize;
                self.end(i)
            }
            15 => {
                if self.caps.is_empty() {
                    let id = self.unknown_id(input);
                    self.note(format!("abort unknown {id}"));
                    let before = self.snapshot();
                    let r = self.a.abort_capture(id);
                    ensure!(
                        r == Err(PoolError::CaptureNotOpen { id }),
                        "abort of capture {id} (not open) gave {r:?}"
                    );
                    return self.unchanged(before, "abort of an unknown capture");
                }
                let i = input.below(self.caps.len() as u64) as usize;
                self.abort(i)
            }
            16 => {
                if self.graphs.is_empty() {
                    return Ok(());
                }
                let i = input.below(self.graphs.len() as u64) as usize;
                self.release(i)
            }
            17 => self.trim(),
            18 => {
                self.note("reset_peaks".into());
                self.a.reset_peaks();
                self.peak_allocated = self.live.values().map(|v| v.0).sum();
                self.peak_reserved = self.reserved();
                Ok(())
            }
            _ => {
                let addr = self.bogus_offset(input);
                self.lookup(addr)
            }
        }
    }

    /// A request size: small, page-sized, range-sized, or extreme.
    fn size(&self, input: &mut Input) -> u64 {
        let (g, va, align) = (self.g(), self.cfg.va_bytes, self.cfg.alignment);
        match input.below(16) {
            0 => 0,
            1 => u64::MAX - input.below(2 * align),
            2 => input.u64(),
            3 => 1 + input.below(va.saturating_mul(2)),
            4..=8 => 1 + input.below((4 * align).max(4096)),
            _ => 1 + input.below(3 * g),
        }
    }

    fn owner(&self, input: &mut Input) -> Owner {
        let who = input.u8();
        if who % 16 == 15 {
            return Owner::Capture(self.unknown_id_from(who as u64));
        }
        if self.caps.is_empty() || who.is_multiple_of(3) {
            Owner::Eager
        } else {
            Owner::Capture(self.caps[who as usize % self.caps.len()].id)
        }
    }

    /// A capture id that is not open (0 is never valid).
    fn unknown_id_from(&self, seed: u64) -> CaptureId {
        let mut id = 1_000_000 + seed;
        while self.caps.iter().any(|c| c.id == id) {
            id += 1;
        }
        id
    }

    fn unknown_id(&self, input: &mut Input) -> CaptureId {
        let seed = input.u8() as u64;
        self.unknown_id_from(seed)
    }

    /// An offset that is not the start of a live block: inside one, past the
    /// range, or anywhere.
    fn bogus_offset(&self, input: &mut Input) -> u64 {
        let off = match input.below(4) {
            0 if !self.live.is_empty() => {
                let i = input.below(self.live.len() as u64) as usize;
                let (&o, &(size, _, _)) = self.live.iter().nth(i).unwrap();
                o + 1 + input.below(size)
            }
            1 => self.cfg.va_bytes + input.below(1 << 20),
            2 => u64::MAX - input.below(1 << 10),
            _ => input.below(self.cfg.va_bytes + 1),
        };
        let mut off = off;
        while self.live.contains_key(&off) {
            off = off.wrapping_add(1);
        }
        off
    }

    /// The allocator's state, to compare across refused operations.
    fn snapshot(&self) -> (PoolStats, Vec<Option<(u64, u64)>>) {
        let probes = self
            .live
            .iter()
            .flat_map(|(&o, &(s, _, _))| [o, o + s - 1])
            .map(|a| self.a.block_at(a))
            .collect();
        (self.a.stats(), probes)
    }

    fn unchanged(
        &self,
        before: (PoolStats, Vec<Option<(u64, u64)>>),
        what: &str,
    ) -> Result<(), String> {
        let after = self.snapshot();
        ensure!(
            after == before,
            "{what} changed the pool: {before:?} -> {after:?}"
        );
        Ok(())
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
        let plan = match self.a.plan_alloc(size, owner) {
            Ok(plan) => plan,
            Err(e) => {
                self.unchanged(before, "a refused allocation")?;
                match (e, rounded) {
                    (PoolError::InvalidSize { size: s }, None) if s == size => return Ok(()),
                    (PoolError::CaptureNotOpen { id }, Some(_))
                        if !open && owner == Owner::Capture(id) =>
                    {
                        return Ok(())
                    }
                    (
                        PoolError::OutOfMemory {
                            requested,
                            needed,
                            reserved,
                            max,
                        },
                        Some(r),
                    ) if open => {
                        ensure!(
                            requested == r && reserved == self.reserved() && max == self.cfg.max_bytes,
                            "OutOfMemory {{ requested {requested}, reserved {reserved}, max {max} }} \
                             for a {r}-byte block with {} reserved",
                            self.reserved()
                        );
                        ensure!(
                            needed > 0 && reserved.saturating_add(needed) > max,
                            "OutOfMemory but {reserved} + {needed} fits the cap {max}"
                        );
                        ensure!(
                            !(quiet && r <= va && self.reserved() + r.div_ceil(g) * g <= max)
                                || skipped("empty-pool-fits"),
                            "[empty-pool-fits] a {r}-byte block was refused (out of memory) by an \
                             empty pool it fits"
                        );
                        return Ok(());
                    }
                    (PoolError::AddressSpaceExhausted { requested, va_bytes }, Some(r))
                        if open =>
                    {
                        ensure!(
                            requested == r && va_bytes == va,
                            "AddressSpaceExhausted {{ {requested}, {va_bytes} }} for {r} in {va}"
                        );
                        ensure!(
                            !(quiet && r <= va) || skipped("empty-pool-fits"),
                            "[empty-pool-fits] a {r}-byte block found no room in an empty \
                             {va}-byte range (AddressSpaceExhausted says no free run is large \
                             enough, but the whole range is free)"
                        );
                        return Ok(());
                    }
                    (e, _) => {
                        return Err(format!(
                            "alloc({size}, {owner:?}) refused with {e:?}; rounded {rounded:?}, open {open}"
                        ))
                    }
                }
            }
        };
        let Some(r) = rounded else {
            return Err(format!("alloc({size}) planned, but the size is invalid"));
        };
        ensure!(
            open,
            "alloc for capture {owner:?}, which is not open, was planned"
        );
        let (off, sz) = (plan.offset(), plan.size());
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
            .new_pages()
            .iter()
            .flat_map(|r| r.start..r.end())
            .collect();
        ensure!(
            got_new == want_new,
            "block {off}+{sz} needs new pages {want_new:?}, the plan maps {got_new:?}"
        );
        ensure!(
            self.reserved() + got_new.len() as u64 * g <= self.cfg.max_bytes,
            "the plan maps past max_bytes"
        );
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
        let committed = self.a.commit_alloc(plan);
        ensure!(committed == off, "committed at {committed}, planned {off}");
        self.mapped.extend(got_new.iter().copied());
        self.allocs += 1;
        let serial = match owner {
            Owner::Eager => 0,
            Owner::Capture(id) => {
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
        if serial != 0 {
            if let Some(c) = self.caps.iter_mut().find(|c| c.serial == serial) {
                c.live_bytes -= size;
            }
        }
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

    fn begin(&mut self, input: &mut Input) -> Result<(), String> {
        let before = self.snapshot();
        match input.below(8) {
            0 => {
                self.note("begin 0".into());
                let r = self.a.begin_capture(0);
                ensure!(r == Err(PoolError::InvalidCaptureId), "begin(0) gave {r:?}");
                return self.unchanged(before, "begin(0)");
            }
            1 if !self.caps.is_empty() => {
                let id = self.caps[input.below(self.caps.len() as u64) as usize].id;
                self.note(format!("begin open {id}"));
                let r = self.a.begin_capture(id);
                ensure!(
                    r == Err(PoolError::CaptureAlreadyOpen { id }),
                    "begin({id}) of an open capture gave {r:?}"
                );
                return self.unchanged(before, "a second begin");
            }
            _ => {}
        }
        // A fresh id, or (sometimes) one of a capture that already closed.
        let id = if input.below(4) == 0 && self.next_id > 1 {
            let old = 1 + input.below(self.next_id - 1);
            if self.caps.iter().any(|c| c.id == old) {
                self.next_id += 1;
                self.next_id
            } else {
                old
            }
        } else {
            self.next_id += 1;
            self.next_id
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
        Ok(())
    }

    fn abort(&mut self, i: usize) -> Result<(), String> {
        let c = self.caps.remove(i);
        self.note(format!("abort {}", c.id));
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
        Ok(())
    }

    fn release(&mut self, i: usize) -> Result<(), String> {
        let (fp, _) = self.graphs.remove(i);
        self.note(format!("release graph of capture {}", fp.capture_id()));
        self.a
            .release_graph(fp)
            .map_err(|e| format!("release of a live graph gave {e:?}"))
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
        self.a.commit_trim(plan);
        for p in got {
            self.mapped.remove(&p);
        }
        Ok(())
    }

    fn lookup(&mut self, addr: u64) -> Result<(), String> {
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
