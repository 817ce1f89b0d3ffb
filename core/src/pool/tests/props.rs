//! Model-based property tests: random sequences of alloc / free / begin /
//! end / abort / release / trim against a simple model of what the pool
//! must hold, with `check_invariants` after every step.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::{layout, small, Layout, G};
use crate::pool::{Allocator, CaptureId, Footprint, Owner, PoolError, PoolStats};

#[derive(Clone, Debug)]
enum Op {
    /// Allocate for the eager owner (`who == 0` or no capture open) or for
    /// open capture `who % open`.
    Alloc {
        size: u64,
        who: u8,
    },
    /// Plan, then drop the plan (the driver failed to map).
    DropPlan {
        size: u64,
        who: u8,
    },
    Free {
        pick: usize,
    },
    FreeBogus {
        off: u64,
    },
    /// Open a capture, reusing an old id when `reuse`.
    Begin {
        reuse: bool,
    },
    End {
        pick: usize,
    },
    Abort {
        pick: usize,
    },
    Release {
        pick: usize,
    },
    Trim,
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=1024, 2 => 1u64..=G, 1 => 1u64..=3 * G]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (size(), any::<u8>()).prop_map(|(size, who)| Op::Alloc { size, who }),
        1 => (size(), any::<u8>()).prop_map(|(size, who)| Op::DropPlan { size, who }),
        6 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        1 => (0u64..70 * G).prop_map(|off| Op::FreeBogus { off }),
        2 => any::<bool>().prop_map(|reuse| Op::Begin { reuse }),
        1 => any::<usize>().prop_map(|pick| Op::End { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Abort { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Release { pick }),
        1 => Just(Op::Trim),
    ]
}

/// An open capture as the model sees it.
struct Cap {
    id: CaptureId,
    /// Unique per begin (ids may be reused).
    serial: u64,
    touched: BTreeSet<u64>,
    mapped: BTreeSet<u64>,
    live_bytes: u64,
    peak: u64,
    /// State at `begin_capture`, while nothing but this capture acted since.
    quiet: Option<(PoolStats, Layout)>,
}

struct Model {
    a: Allocator,
    /// Live blocks: offset -> (size, owner, serial of the open capture).
    live: BTreeMap<u64, (u64, Owner, u64)>,
    caps: Vec<Cap>,
    graphs: Vec<(Footprint, BTreeSet<u64>)>,
    /// What the driver has mapped, from the plans alone.
    driver: BTreeSet<u64>,
    next_id: CaptureId,
    serial: u64,
    max: u64,
}

fn pages(off: u64, size: u64) -> impl Iterator<Item = u64> {
    off / G..(off + size - 1) / G + 1
}

impl Model {
    fn owner(&self, who: u8) -> Owner {
        if who % 3 == 0 || self.caps.is_empty() {
            Owner::Eager
        } else {
            Owner::Capture(self.caps[who as usize % self.caps.len()].id)
        }
    }

    /// Something other than capture `except` changed the pool.
    fn disturb(&mut self, except: Option<CaptureId>) {
        for c in &mut self.caps {
            if Some(c.id) != except {
                c.quiet = None;
            }
        }
    }

    fn step(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Alloc { size, who } => {
                let owner = self.owner(who);
                match self.a.plan_alloc(size, owner) {
                    Ok(plan) => {
                        let (off, sz) = (plan.offset(), plan.size());
                        prop_assert_eq!(sz, size.div_ceil(256) * 256);
                        prop_assert_eq!(off % 256, 0);
                        // The plan maps exactly the unmapped pages the block overlaps.
                        let want: Vec<u64> = pages(off, sz)
                            .filter(|p| !self.driver.contains(p))
                            .collect();
                        let got: Vec<u64> = plan
                            .new_pages()
                            .iter()
                            .flat_map(|r| r.start..r.end())
                            .collect();
                        prop_assert_eq!(&got, &want);
                        prop_assert_eq!(plan.new_page_count(), got.len() as u64);
                        // Growth maps the fewest pages any free spot needs.
                        if !got.is_empty() {
                            let fewest = self.fewest_new_pages(sz, owner);
                            prop_assert_eq!(fewest, Some(got.len() as u64));
                        }
                        self.check_taint(off, sz, owner)?;
                        prop_assert_eq!(self.a.commit_alloc(plan), off);
                        self.driver.extend(got.iter().copied());
                        match owner {
                            Owner::Eager => {
                                self.live.insert(off, (sz, owner, 0));
                                self.disturb(None);
                            }
                            Owner::Capture(id) => {
                                self.disturb(Some(id));
                                let c = self.caps.iter_mut().find(|c| c.id == id).unwrap();
                                self.live.insert(off, (sz, owner, c.serial));
                                c.touched.extend(pages(off, sz));
                                c.mapped.extend(got);
                                c.live_bytes += sz;
                                c.peak = c.peak.max(c.live_bytes);
                            }
                        }
                    }
                    Err(PoolError::OutOfMemory {
                        requested,
                        needed,
                        reserved,
                        max,
                    }) => {
                        let s = self.a.stats();
                        prop_assert_eq!(requested, size.div_ceil(256) * 256);
                        prop_assert_eq!((reserved, max), (s.reserved_bytes, self.max));
                        prop_assert!(reserved + needed > max && needed > 0);
                        // Every free spot needs that many pages or more.
                        let fewest = self.fewest_new_pages(requested, owner);
                        prop_assert_eq!(fewest, Some(needed / G));
                    }
                    Err(PoolError::AddressSpaceExhausted { requested, .. }) => {
                        // No free range the owner may use holds the block,
                        // whatever the zones of its pages.
                        let fewest = self.fewest_new_pages(requested, owner);
                        prop_assert_eq!(fewest, None);
                    }
                    Err(e) => prop_assert!(false, "unexpected {e}"),
                }
            }
            Op::DropPlan { size, who } => {
                let before = (self.a.stats(), layout(&self.a));
                drop(self.a.plan_alloc(size, self.owner(who)));
                prop_assert_eq!((self.a.stats(), layout(&self.a)), before);
            }
            Op::Free { pick } => {
                if self.live.is_empty() {
                    return Ok(());
                }
                let (&off, &(size, _, serial)) =
                    self.live.iter().nth(pick % self.live.len()).unwrap();
                prop_assert_eq!(self.a.free(off), Ok(size));
                self.live.remove(&off);
                let by = self
                    .caps
                    .iter_mut()
                    .find(|c| serial != 0 && c.serial == serial)
                    .map(|c| {
                        c.live_bytes -= size;
                        c.id
                    });
                self.disturb(by);
            }
            Op::FreeBogus { off } => {
                if self.live.contains_key(&off) {
                    return Ok(());
                }
                let before = (self.a.stats(), layout(&self.a));
                prop_assert_eq!(
                    self.a.free(off),
                    Err(PoolError::NotAllocated { offset: off })
                );
                prop_assert_eq!((self.a.stats(), layout(&self.a)), before);
            }
            Op::Begin { reuse } => {
                let id = if reuse && self.next_id > 1 && !self.caps.iter().any(|c| c.id == 1) {
                    1
                } else {
                    self.next_id += 1;
                    self.next_id
                };
                self.a.begin_capture(id).unwrap();
                let quiet = Some((self.a.stats(), layout(&self.a)));
                self.serial += 1;
                let serial = self.serial;
                self.caps.push(Cap {
                    id,
                    serial,
                    touched: BTreeSet::new(),
                    mapped: BTreeSet::new(),
                    live_bytes: 0,
                    peak: 0,
                    quiet,
                });
            }
            Op::End { pick } => {
                if self.caps.is_empty() {
                    return Ok(());
                }
                let c = self.caps.remove(pick % self.caps.len());
                let fp = self.a.end_capture(c.id).unwrap();
                let fp_pages: BTreeSet<u64> =
                    fp.pages().iter().flat_map(|r| r.start..r.end()).collect();
                prop_assert_eq!(&fp_pages, &c.touched);
                prop_assert_eq!(fp.page_count(), c.touched.len() as u64);
                prop_assert_eq!(
                    (fp.held_bytes(), fp.peak_bytes(), fp.capture_id()),
                    (c.live_bytes, c.peak, c.id)
                );
                self.graphs.push((fp, fp_pages));
                self.disturb(None);
            }
            Op::Abort { pick } => {
                if self.caps.is_empty() {
                    return Ok(());
                }
                let c = self.caps.remove(pick % self.caps.len());
                let reserved = self.a.stats().reserved_bytes;
                let plan = self.a.abort_capture(c.id).unwrap();
                // Every page mapped for the capture goes back, nothing else.
                let unmapped: BTreeSet<u64> = plan
                    .ranges()
                    .iter()
                    .flat_map(|r| r.start..r.end())
                    .collect();
                prop_assert_eq!(&unmapped, &c.mapped);
                prop_assert_eq!(
                    self.a.stats().reserved_bytes,
                    reserved - G * c.mapped.len() as u64
                );
                for p in &unmapped {
                    self.driver.remove(p);
                }
                // Its live blocks are freed.
                let ids: Vec<u64> = self
                    .live
                    .iter()
                    .filter(|(_, v)| v.2 == c.serial)
                    .map(|(&o, _)| o)
                    .collect();
                for o in ids {
                    prop_assert_eq!(self.a.block_at(o), None);
                    self.live.remove(&o);
                }
                if let Some((stats, blocks)) = c.quiet {
                    let s = self.a.stats();
                    prop_assert_eq!(layout(&self.a), blocks);
                    prop_assert_eq!(
                        (
                            s.allocated_bytes,
                            s.reserved_bytes,
                            s.segment_count,
                            s.block_count,
                            s.free_block_count,
                            s.tainted_pages
                        ),
                        (
                            stats.allocated_bytes,
                            stats.reserved_bytes,
                            stats.segment_count,
                            stats.block_count,
                            stats.free_block_count,
                            stats.tainted_pages
                        )
                    );
                }
                self.disturb(None);
            }
            Op::Release { pick } => {
                if self.graphs.is_empty() {
                    return Ok(());
                }
                let (fp, _) = self.graphs.remove(pick % self.graphs.len());
                self.a.release_graph(fp).unwrap();
                self.disturb(None);
            }
            Op::Trim => {
                let plan = self.a.plan_trim();
                let want: BTreeSet<u64> = self
                    .driver
                    .iter()
                    .copied()
                    .filter(|&p| {
                        !self.graphs.iter().any(|(_, g)| g.contains(&p))
                            && !self.caps.iter().any(|c| c.touched.contains(&p))
                            && !self
                                .live
                                .iter()
                                .any(|(&o, &(s, _, _))| o < (p + 1) * G && o + s > p * G)
                    })
                    .collect();
                let got: BTreeSet<u64> = plan
                    .ranges()
                    .iter()
                    .flat_map(|r| r.start..r.end())
                    .collect();
                prop_assert_eq!(&got, &want);
                if !got.is_empty() {
                    self.disturb(None);
                }
                self.a.commit_trim(plan);
                for p in got {
                    self.driver.remove(&p);
                }
            }
        }
        self.check()
    }

    /// Brute force over every aligned offset: the fewest unmapped pages a
    /// `size`-byte block of `owner` could overlap, on bytes no live block
    /// holds and pages the taint rule lets it use; `None`: no such spot.
    fn fewest_new_pages(&self, size: u64, owner: Owner) -> Option<u64> {
        const A: u64 = 256;
        let va = self.a.config().va_bytes;
        let allowed = |p: u64| {
            self.caps
                .iter()
                .all(|c| owner == Owner::Capture(c.id) || !c.touched.contains(&p))
                && (owner != Owner::Eager || self.graphs.iter().all(|(_, g)| !g.contains(&p)))
        };
        // Per aligned slot: free and on an allowed page; prefix counts.
        let slots = (va / A) as usize;
        let mut ok = vec![true; slots];
        for (&o, &(s, _, _)) in &self.live {
            ok[(o / A) as usize..((o + s) / A) as usize].fill(false);
        }
        for (i, v) in ok.iter_mut().enumerate() {
            *v = *v && allowed(i as u64 * A / G);
        }
        let mut bad = vec![0u64; slots + 1];
        for i in 0..slots {
            bad[i + 1] = bad[i] + u64::from(!ok[i]);
        }
        let n = (size / A) as usize;
        if size > va {
            return None;
        }
        (0..=slots - n)
            .filter(|&i| bad[i + n] == bad[i])
            .map(|i| {
                let x = i as u64 * A;
                pages(x, size).filter(|p| !self.driver.contains(p)).count() as u64
            })
            .min()
    }

    /// Rule 3: eager blocks avoid pages of live graphs and open captures; a
    /// capture avoids pages of other open captures.
    fn check_taint(&self, off: u64, size: u64, owner: Owner) -> Result<(), TestCaseError> {
        for p in pages(off, size) {
            for c in &self.caps {
                prop_assert!(
                    owner == Owner::Capture(c.id) || !c.touched.contains(&p),
                    "{owner:?} block {off}+{size} on page {p} of open capture {}",
                    c.id
                );
            }
            if owner == Owner::Eager {
                for (fp, g) in &self.graphs {
                    prop_assert!(
                        !g.contains(&p),
                        "eager block {off}+{size} on page {p} of the graph of capture {}",
                        fp.capture_id()
                    );
                }
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        if let Err(e) = self.a.check_invariants() {
            prop_assert!(false, "invariant broken: {e}");
        }
        let s = self.a.stats();
        prop_assert_eq!(
            s.allocated_bytes,
            self.live.values().map(|v| v.0).sum::<u64>()
        );
        prop_assert_eq!(s.block_count, self.live.len() as u64);
        prop_assert_eq!(s.reserved_bytes, G * self.driver.len() as u64);
        prop_assert!(s.reserved_bytes <= self.max);
        prop_assert_eq!(
            (s.open_captures, s.live_graphs),
            (self.caps.len() as u64, self.graphs.len() as u64)
        );
        for (&o, &(size, _, _)) in &self.live {
            prop_assert_eq!(self.a.block_at(o + size - 1), Some((o, size)));
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_sequences_keep_every_rule(
        initial in 0u64..6 * G,
        cap in prop_oneof![Just(u64::MAX), (6 * G..40 * G)],
        ops in prop::collection::vec(op(), 1..200),
    ) {
        let (a, plan) = Allocator::new(small(initial, cap)).unwrap();
        let driver = plan.ranges().iter().flat_map(|r| r.start..r.end()).collect();
        let mut m = Model { a, live: BTreeMap::new(), caps: vec![], graphs: vec![], driver, next_id: 1, serial: 0, max: cap };
        m.check()?;
        for op in ops {
            m.step(op)?;
        }
        // Tear down: every graph and capture goes, everything is freed and
        // trimmed, and the pool is empty.
        while let Some(c) = m.caps.pop() {
            m.caps.push(c);
            m.step(Op::Abort { pick: 0 })?;
        }
        while !m.graphs.is_empty() {
            m.step(Op::Release { pick: 0 })?;
        }
        while !m.live.is_empty() {
            m.step(Op::Free { pick: 0 })?;
        }
        m.step(Op::Trim)?;
        let s = m.a.stats();
        prop_assert_eq!((s.reserved_bytes, s.tainted_pages, s.segment_count), (0, 0, 0));
    }
}
