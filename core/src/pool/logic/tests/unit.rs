//! One test per rule and per error.

use super::{alloc, layout, pool, small, G};
use crate::pool::logic::{Allocator, Owner, PageRange, PoolConfig, PoolError};

const E: Owner = Owner::Eager;
const NO_CAP: u64 = u64::MAX;

fn pages_of(off: u64, size: u64) -> std::ops::Range<u64> {
    off / G..(off + size - 1) / G + 1
}

#[test]
fn new_maps_initial_pages() {
    let (a, plan) = Allocator::new(small(G + 1, NO_CAP)).unwrap();
    assert_eq!(plan.ranges(), &[PageRange { start: 0, count: 2 }]);
    assert_eq!(plan.page_count(), 2);
    let s = a.stats();
    assert_eq!(
        (s.reserved_bytes, s.peak_reserved_bytes, s.segment_count),
        (2 * G, 2 * G, 1)
    );
    assert_eq!(
        (s.allocated_bytes, s.block_count, s.free_block_count),
        (0, 0, 1)
    );
    a.check_invariants().unwrap();
    let (_, plan) = Allocator::new(small(0, NO_CAP)).unwrap();
    assert!(plan.is_empty());
}

#[test]
fn initial_over_max_is_an_error() {
    let err = Allocator::new(small(G + 1, 2 * G - 100))
        .map(|_| ())
        .unwrap_err();
    assert_eq!(
        err,
        PoolError::InitialExceedsMax {
            initial: 2 * G,
            max: 2 * G - 100
        }
    );
    assert!(err.to_string().contains("8192") && err.to_string().contains("8092"));
    assert!(Allocator::new(small(G + 1, 2 * G)).is_ok());
    // Rounded up to pages: 1 byte needs a whole page.
    assert!(Allocator::new(small(1, G - 1)).is_err());
    assert!(Allocator::new(small(1, G)).is_ok());
}

#[test]
fn invalid_configs_are_errors() {
    let bad = [
        PoolConfig {
            alignment: 0,
            ..small(0, NO_CAP)
        },
        PoolConfig {
            alignment: 384,
            ..small(0, NO_CAP)
        },
        PoolConfig {
            granularity: 0,
            ..small(0, NO_CAP)
        },
        PoolConfig {
            granularity: 1000,
            ..small(0, NO_CAP)
        },
        PoolConfig {
            va_bytes: 0,
            ..small(0, NO_CAP)
        },
        PoolConfig {
            va_bytes: 3 * G + 256,
            ..small(0, NO_CAP)
        },
        PoolConfig {
            initial_bytes: 65 * G,
            ..small(0, NO_CAP)
        },
    ];
    for cfg in bad {
        let err = Allocator::new(cfg).map(|_| ()).unwrap_err();
        assert!(
            matches!(err, PoolError::InvalidConfig { .. }),
            "{cfg:?}: {err}"
        );
    }
    assert!(Allocator::new(PoolConfig::default()).is_ok());
}

#[test]
fn zero_size_is_an_error_and_sizes_round_up() {
    let mut a = pool(0, NO_CAP);
    assert_eq!(
        a.plan_alloc(0, E).unwrap_err(),
        PoolError::InvalidSize { size: 0 }
    );
    assert!(matches!(
        a.plan_alloc(u64::MAX, E),
        Err(PoolError::InvalidSize { .. })
    ));
    assert!(matches!(
        a.plan_alloc(65 * G, E),
        Err(PoolError::AddressSpaceExhausted { requested, va_bytes }) if requested == 65 * G && va_bytes == 64 * G
    ));
    let plan = a.plan_alloc(1, E).unwrap();
    assert_eq!((plan.size(), plan.offset(), plan.owner()), (256, 0, E));
    assert_eq!(a.commit_alloc(plan), 0);
    assert_eq!(a.free(0).unwrap(), 256);
    let o = alloc(&mut a, 257, E);
    assert_eq!(a.block_at(o), Some((o, 512)));
}

#[test]
fn double_free_and_foreign_offsets_are_errors_that_change_nothing() {
    let mut a = pool(0, NO_CAP);
    let x = alloc(&mut a, 1000, E);
    let y = alloc(&mut a, 1000, E);
    let before = (a.stats(), layout(&a));
    for bad in [x + 256, 12345, 64 * G, u64::MAX, y + 1024] {
        assert_eq!(a.free(bad), Err(PoolError::NotAllocated { offset: bad }));
        assert_eq!((a.stats(), layout(&a)), before);
    }
    assert_eq!(a.free(x), Ok(1024));
    let before = (a.stats(), layout(&a));
    let err = a.free(x).unwrap_err();
    assert_eq!(err, PoolError::NotAllocated { offset: x });
    assert!(err.to_string().contains(&x.to_string()));
    assert_eq!((a.stats(), layout(&a)), before);
    a.check_invariants().unwrap();
}

#[test]
fn split_and_coalesce() {
    let mut a = pool(G, NO_CAP);
    let b: Vec<u64> = (0..4).map(|_| alloc(&mut a, 1024, E)).collect();
    assert_eq!(b, [0, 1024, 2048, 3072]);
    assert_eq!(a.stats().free_block_count, 0);
    a.free(b[1]).unwrap();
    a.free(b[3]).unwrap();
    assert_eq!(a.stats().free_block_count, 2);
    a.free(b[2]).unwrap(); // merges with both neighbours
    assert_eq!(a.stats().free_block_count, 1);
    a.free(b[0]).unwrap();
    let s = a.stats();
    assert_eq!(
        (s.free_block_count, s.block_count, s.allocated_bytes),
        (1, 0, 0)
    );
    assert_eq!(
        (s.alloc_count, s.free_count, s.peak_allocated_bytes),
        (4, 4, 4096)
    );
    a.check_invariants().unwrap();
}

#[test]
fn best_fit_then_lowest_offset() {
    let mut a = pool(4 * G, NO_CAP);
    let b: Vec<u64> = (0..8).map(|_| alloc(&mut a, 2048, E)).collect();
    // Holes of 2048 at b[1], b[5] and of 4096 at b[3..5].
    for i in [1, 3, 4, 5] {
        a.free(b[i]).unwrap();
    }
    a.check_invariants().unwrap();
    // b[3..=5] coalesced into one 6144 hole: the 2048 hole at b[1] fits best.
    assert_eq!(alloc(&mut a, 2000, E), b[1]);
    assert_eq!(alloc(&mut a, 2048, E), b[3]);
    // A block larger than every hole goes to the free tail of mapped pages.
    assert_eq!(alloc(&mut a, 8192, E), 8 * 2048);
}

#[test]
fn mapped_space_first_then_growth_maps_only_overlapped_pages() {
    let mut a = pool(0, NO_CAP);
    let plan = a.plan_alloc(1024, E).unwrap();
    assert_eq!(plan.new_pages(), &[PageRange { start: 0, count: 1 }]);
    let x = a.commit_alloc(plan);
    // Fits in the rest of page 0: nothing to map.
    let plan = a.plan_alloc(2048, E).unwrap();
    assert_eq!((plan.offset(), plan.new_pages()), (1024, &[][..]));
    a.commit_alloc(plan);
    // 3 KiB: 1 KiB left on page 0, so it starts there and maps page 1 only.
    let plan = a.plan_alloc(3072, E).unwrap();
    assert_eq!(
        (plan.offset(), plan.new_pages()),
        (3072, &[PageRange { start: 1, count: 1 }][..])
    );
    a.commit_alloc(plan);
    assert_eq!(a.stats().reserved_bytes, 2 * G);
    assert_eq!(a.stats().segment_count, 1);
    a.free(x).unwrap();
    a.check_invariants().unwrap();
}

#[test]
fn growth_prefers_the_hole_that_maps_fewest_pages() {
    let mut a = pool(8 * G, NO_CAP);
    // Live blocks on pages 0, 3, 7; trim leaves holes 1..3 and 4..7.
    let x0 = alloc(&mut a, G, E);
    let x1 = alloc(&mut a, 2 * G, E);
    let x3 = alloc(&mut a, G, E);
    let x4 = alloc(&mut a, 3 * G, E);
    let _x7 = alloc(&mut a, G, E);
    a.free(x1).unwrap();
    a.free(x4).unwrap();
    let trim = a.plan_trim();
    assert_eq!(
        trim.ranges(),
        &[
            PageRange { start: 1, count: 2 },
            PageRange { start: 4, count: 3 }
        ]
    );
    a.commit_trim(trim);
    assert_eq!(a.stats().segment_count, 3);
    a.check_invariants().unwrap();
    // Two pages: the smaller hole fits exactly.
    let plan = a.plan_alloc(2 * G, E).unwrap();
    assert_eq!(
        (plan.offset(), plan.new_pages()),
        (G, &[PageRange { start: 1, count: 2 }][..])
    );
    drop(plan);
    // Three pages: only the larger hole.
    let plan = a.plan_alloc(3 * G, E).unwrap();
    assert_eq!(plan.offset(), 4 * G);
    a.commit_alloc(plan);
    a.free(x0).unwrap();
    a.free(x3).unwrap();
    a.check_invariants().unwrap();
}

/// A pool of `va_pages` pages of range whose first `pages` pages were
/// mapped (by one-page blocks), after the pages of `unmap` went back by trim
/// and with the blocks on the pages of `live` still live: page `p`'s block
/// is at `p * G`, the other pages are free.
fn pool_with_gaps(pages: u64, va_pages: u64, max: u64, unmap: &[u64], live: &[u64]) -> Allocator {
    let cfg = PoolConfig {
        va_bytes: va_pages * G,
        ..small(0, max)
    };
    let mut a = Allocator::new(cfg).unwrap().0;
    for p in 0..pages {
        assert_eq!(alloc(&mut a, G, E), p * G);
    }
    for &p in unmap {
        a.free(p * G).unwrap();
    }
    let plan = a.plan_trim();
    assert_eq!(plan.page_count(), unmap.len() as u64);
    a.commit_trim(plan);
    for p in (0..pages).filter(|p| !unmap.contains(p) && !live.contains(p)) {
        a.free(p * G).unwrap();
    }
    a.check_invariants().unwrap();
    a
}

fn runs(r: &[(u64, u64)]) -> Vec<PageRange> {
    r.iter()
        .map(|&(start, count)| PageRange { start, count })
        .collect()
}

#[test]
fn a_block_spans_mapped_free_pages_between_unmapped_ones() {
    // D2: pages 0 and 2 unmapped, page 1 mapped and free: the whole range is
    // free, but no unmapped run with its neighbours held 3 pages, and a plan
    // could map one run only: AddressSpaceExhausted.
    let mut a = pool_with_gaps(3, 3, NO_CAP, &[0, 2], &[]);
    assert_eq!(a.stats().reserved_bytes, G);
    let plan = a.plan_alloc(3 * G, E).unwrap();
    assert_eq!(plan.offset(), 0);
    assert_eq!(plan.new_pages(), &runs(&[(0, 1), (2, 1)])[..]);
    assert_eq!(plan.new_page_count(), 2);
    a.commit_alloc(plan);
    let s = a.stats();
    assert_eq!(
        (s.reserved_bytes, s.segment_count, s.free_block_count),
        (3 * G, 1, 0)
    );
    a.check_invariants().unwrap();
    a.free(0).unwrap();
    let plan = a.plan_trim();
    assert_eq!(plan.ranges(), &runs(&[(0, 3)])[..]);
    a.commit_trim(plan);
    a.check_invariants().unwrap();
}

#[test]
fn max_bytes_counts_every_run_of_new_pages() {
    // Page 0 unmapped, page 1 free, page 2 never mapped.
    let mut a = pool_with_gaps(2, 3, 2 * G, &[0], &[]);
    let before = (a.stats(), layout(&a));
    assert_eq!(
        a.plan_alloc(3 * G, E).unwrap_err(),
        PoolError::OutOfMemory {
            requested: 3 * G,
            needed: 2 * G,
            reserved: G,
            max: 2 * G
        }
    );
    assert_eq!((a.stats(), layout(&a)), before);
    // One new page fits the cap.
    let plan = a.plan_alloc(2 * G, E).unwrap();
    assert_eq!((plan.offset(), plan.new_page_count()), (0, 1));
    a.commit_alloc(plan);
    assert_eq!(a.stats().reserved_bytes, 2 * G);
    a.check_invariants().unwrap();
}

#[test]
fn growth_across_runs_maps_the_fewest_pages_at_the_lowest_offset() {
    // Pages: 0 1 unmapped, 2 free, 3 unmapped, 4 free, 5 live, 6.. unmapped.
    let mut a = pool_with_gaps(6, 64, NO_CAP, &[0, 1, 3], &[5]);
    let plan = a.plan_alloc(2 * G, E).unwrap();
    assert_eq!((plan.offset(), plan.new_pages()), (G, &runs(&[(1, 1)])[..]));
    drop(plan);
    let plan = a.plan_alloc(3 * G, E).unwrap();
    assert_eq!(
        (plan.offset(), plan.new_pages()),
        (2 * G, &runs(&[(3, 1)])[..])
    );
    drop(plan);
    // Five pages: three new ones here, rather than five past page 5.
    let plan = a.plan_alloc(5 * G, E).unwrap();
    assert_eq!(
        (plan.offset(), plan.new_pages()),
        (0, &runs(&[(0, 2), (3, 1)])[..])
    );
    a.commit_alloc(plan);
    assert_eq!(a.stats().reserved_bytes, 6 * G);
    a.check_invariants().unwrap();
}

#[test]
fn a_capture_joins_graph_space_and_unmapped_pages_eager_blocks_do_not() {
    // Page 1 free but held by a live graph, pages 0 and 2 unmapped.
    let cfg = PoolConfig {
        va_bytes: 3 * G,
        ..small(3 * G, NO_CAP)
    };
    let mut a = Allocator::new(cfg).unwrap().0;
    let x = alloc(&mut a, G, E);
    a.begin_capture(1).unwrap();
    let y = alloc(&mut a, G, Owner::Capture(1));
    let z = alloc(&mut a, G, E);
    assert_eq!((x, y, z), (0, G, 2 * G));
    let fp = a.end_capture(1).unwrap();
    for b in [x, y, z] {
        a.free(b).unwrap();
    }
    let plan = a.plan_trim();
    assert_eq!(plan.ranges(), &runs(&[(0, 1), (2, 1)])[..]);
    a.commit_trim(plan);
    // Eager blocks may not use the graph's page: no range holds 2 pages.
    assert_eq!(
        a.plan_alloc(2 * G, E).unwrap_err(),
        PoolError::AddressSpaceExhausted {
            requested: 2 * G,
            va_bytes: 3 * G
        }
    );
    // A capture may: it maps both runs and taints all three pages.
    a.begin_capture(2).unwrap();
    let plan = a.plan_alloc(3 * G, Owner::Capture(2)).unwrap();
    assert_eq!(
        (plan.offset(), plan.new_pages()),
        (0, &runs(&[(0, 1), (2, 1)])[..])
    );
    a.commit_alloc(plan);
    a.check_invariants().unwrap();
    let fp2 = a.end_capture(2).unwrap();
    assert_eq!(fp2.pages(), &runs(&[(0, 3)])[..]);
    a.release_graph(fp).unwrap();
    a.release_graph(fp2).unwrap();
    a.free(0).unwrap();
    a.check_invariants().unwrap();
}

#[test]
fn a_capture_joins_graph_and_clean_space_without_mapping() {
    // Page 0 free but held by a live graph, page 1 clean and free, pages 2
    // and 3 live, pages 4.. unmapped. Neither free block holds 2 pages.
    let mut a = pool(4 * G, NO_CAP);
    a.begin_capture(1).unwrap();
    let y = alloc(&mut a, G, Owner::Capture(1));
    let x = alloc(&mut a, G, E);
    let w = alloc(&mut a, 2 * G, E);
    assert_eq!((y, x, w), (0, G, 2 * G));
    let fp = a.end_capture(1).unwrap();
    a.free(y).unwrap();
    a.free(x).unwrap();
    // Eager: only unmapped space will do.
    let plan = a.plan_alloc(2 * G, E).unwrap();
    assert_eq!((plan.offset(), plan.new_page_count()), (4 * G, 2));
    drop(plan);
    // A capture takes both free pages, mapping nothing.
    a.begin_capture(2).unwrap();
    let plan = a.plan_alloc(2 * G, Owner::Capture(2)).unwrap();
    assert_eq!((plan.offset(), plan.new_page_count()), (0, 0));
    a.commit_alloc(plan);
    a.check_invariants().unwrap();
    assert_eq!(a.stats().reserved_bytes, 4 * G);
    let fp2 = a.end_capture(2).unwrap();
    assert_eq!(fp2.pages(), &runs(&[(0, 2)])[..]);
    a.release_graph(fp).unwrap();
    a.release_graph(fp2).unwrap();
    a.check_invariants().unwrap();
}

#[test]
fn max_bytes_refuses_growth_and_changes_nothing() {
    let mut a = pool(0, 2 * G + 1000);
    let x = alloc(&mut a, G + 256, E);
    assert_eq!(a.stats().reserved_bytes, 2 * G);
    let before = (a.stats(), layout(&a));
    let err = a.plan_alloc(G, E).unwrap_err();
    assert_eq!(
        err,
        PoolError::OutOfMemory {
            requested: G,
            needed: G,
            reserved: 2 * G,
            max: 2 * G + 1000
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("4096") && msg.contains("8192") && msg.contains("9192"),
        "{msg}"
    );
    assert_eq!((a.stats(), layout(&a)), before);
    // Space on mapped pages is still usable.
    alloc(&mut a, G - 512, E);
    a.free(x).unwrap();
}

#[test]
fn a_dropped_plan_changes_nothing() {
    let mut a = pool(0, NO_CAP);
    a.begin_capture(1).unwrap();
    let before = (a.stats(), layout(&a));
    drop(a.plan_alloc(3 * G, E).unwrap());
    drop(a.plan_alloc(100, Owner::Capture(1)).unwrap());
    assert_eq!((a.stats(), layout(&a)), before);
    a.check_invariants().unwrap();
}

#[test]
#[should_panic(expected = "stale AllocPlan")]
fn committing_a_stale_plan_panics() {
    let mut a = pool(G, NO_CAP);
    let p1 = a.plan_alloc(256, E).unwrap();
    let p2 = a.plan_alloc(256, E).unwrap();
    a.commit_alloc(p1);
    a.commit_alloc(p2);
}

#[test]
#[should_panic(expected = "stale trim PagePlan")]
fn committing_a_stale_trim_panics() {
    let mut a = pool(2 * G, NO_CAP);
    let plan = a.plan_trim();
    alloc(&mut a, 256, E);
    a.commit_trim(plan);
}

#[test]
fn block_at_finds_the_live_block_containing_an_offset() {
    let mut a = pool(G, NO_CAP);
    let x = alloc(&mut a, 1000, E);
    let y = alloc(&mut a, 300, E);
    assert_eq!(a.block_at(x), Some((x, 1024)));
    assert_eq!(a.block_at(x + 1023), Some((x, 1024)));
    assert_eq!(a.block_at(y + 511), Some((y, 512)));
    assert_eq!(a.block_at(y + 512), None);
    assert_eq!(a.block_at(u64::MAX), None);
    a.free(x).unwrap();
    assert_eq!(a.block_at(x), None);
}

#[test]
fn capture_errors() {
    let mut a = pool(0, NO_CAP);
    assert_eq!(a.begin_capture(0), Err(PoolError::InvalidCaptureId));
    assert_eq!(
        a.plan_alloc(256, Owner::Capture(7)).unwrap_err(),
        PoolError::CaptureNotOpen { id: 7 }
    );
    assert_eq!(
        a.end_capture(7).unwrap_err(),
        PoolError::CaptureNotOpen { id: 7 }
    );
    assert_eq!(
        a.abort_capture(7).unwrap_err(),
        PoolError::CaptureNotOpen { id: 7 }
    );
    a.begin_capture(7).unwrap();
    assert_eq!(
        a.begin_capture(7),
        Err(PoolError::CaptureAlreadyOpen { id: 7 })
    );
    // A footprint from another pool is refused.
    let mut b = pool(0, NO_CAP);
    b.begin_capture(9).unwrap();
    alloc(&mut b, 256, Owner::Capture(9));
    let fp = b.end_capture(9).unwrap();
    assert_eq!(
        a.release_graph(fp),
        Err(PoolError::UnknownGraph { capture: 9 })
    );
    a.check_invariants().unwrap();
}

#[test]
fn capture_frees_are_reused_by_captures_never_by_eager_while_a_graph_lives() {
    let mut a = pool(4 * G, NO_CAP);
    let c = Owner::Capture(1);
    a.begin_capture(1).unwrap();
    let x = alloc(&mut a, 1024, c);
    a.free(x).unwrap();
    // Reused within the capture.
    assert_eq!(alloc(&mut a, 1024, c), x);
    a.free(x).unwrap();
    // Eager allocations avoid the capture's page.
    let e = alloc(&mut a, 1024, E);
    assert!(!pages_of(e, 1024).contains(&(x / G)));
    let fp = a.end_capture(1).unwrap();
    assert_eq!(
        fp.pages(),
        &[PageRange {
            start: x / G,
            count: 1
        }]
    );
    assert_eq!(
        (fp.held_bytes(), fp.peak_bytes(), fp.capture_id()),
        (0, 1024, 1)
    );
    assert_eq!(a.stats().tainted_pages, 1);
    // Still avoided while the graph lives.
    let e2 = alloc(&mut a, 1024, E);
    assert!(!pages_of(e2, 1024).contains(&(x / G)));
    // A later capture shares it (graph pools).
    a.begin_capture(2).unwrap();
    assert_eq!(alloc(&mut a, 1024, Owner::Capture(2)), x);
    a.free(x).unwrap();
    let fp2 = a.end_capture(2).unwrap();
    a.release_graph(fp).unwrap();
    a.check_invariants().unwrap();
    // Still referenced by graph 2.
    let e3 = alloc(&mut a, 1024, E);
    assert!(!pages_of(e3, 1024).contains(&(x / G)));
    a.release_graph(fp2).unwrap();
    assert_eq!(a.stats().tainted_pages, 0);
    // Clean again: eager may use it.
    let big = alloc(&mut a, 3 * G, E);
    assert!(pages_of(big, 3 * G).contains(&(x / G)) || a.block_at(x).is_none());
    a.check_invariants().unwrap();
}

#[test]
fn eager_blocks_freed_on_a_capture_page_stay_with_captures() {
    let mut a = pool(2 * G, NO_CAP);
    let e = alloc(&mut a, 1024, E);
    a.begin_capture(1).unwrap();
    let c = alloc(&mut a, 1024, Owner::Capture(1));
    assert_eq!(
        c / G,
        e / G,
        "a capture may share a clean page with eager blocks"
    );
    a.free(e).unwrap();
    let fp = a.end_capture(1).unwrap();
    // The freed eager block is on a graph page now: eager goes elsewhere.
    let e2 = alloc(&mut a, 1024, E);
    assert_ne!(e2 / G, c / G);
    a.begin_capture(2).unwrap();
    assert_eq!(alloc(&mut a, 1024, Owner::Capture(2)), e);
    a.abort_capture(2).unwrap();
    a.release_graph(fp).unwrap();
    a.check_invariants().unwrap();
}

#[test]
fn concurrent_captures_do_not_share_pages() {
    let mut a = pool(4 * G, NO_CAP);
    let (c1, c2) = (Owner::Capture(1), Owner::Capture(2));
    a.begin_capture(1).unwrap();
    a.begin_capture(2).unwrap();
    let x = alloc(&mut a, 512, c1);
    a.free(x).unwrap();
    let y = alloc(&mut a, 512, c2);
    assert_ne!(y / G, x / G);
    let z = alloc(&mut a, 512, c1);
    assert_eq!(z, x);
    a.free(z).unwrap();
    // Capture 2 cannot have a whole page while capture 1 holds page 0 and
    // it holds page 1: it maps a new one.
    let plan = a.plan_alloc(G, c2).unwrap();
    assert_eq!(plan.offset() / G, 2);
    drop(plan);
    // Once capture 1 is a finished graph, capture 2 may reuse its pages.
    let fp = a.end_capture(1).unwrap();
    assert_eq!(alloc(&mut a, G, c2), x);
    let fp2 = a.end_capture(2).unwrap();
    assert_eq!(fp2.page_count(), 2);
    assert_eq!(fp2.held_bytes(), 512 + G);
    a.release_graph(fp).unwrap();
    a.release_graph(fp2).unwrap();
    a.check_invariants().unwrap();
}

#[test]
fn abort_rolls_back_to_the_pre_capture_state() {
    let mut a = pool(G, NO_CAP);
    let keep = alloc(&mut a, 1024, E);
    let before = (a.stats(), layout(&a));
    a.begin_capture(5).unwrap();
    let c = Owner::Capture(5);
    let x = alloc(&mut a, 2048, c); // on page 0
    let y = alloc(&mut a, 3 * G, c); // maps pages
    let z = alloc(&mut a, 512, c);
    a.free(z).unwrap();
    assert!(a.stats().reserved_bytes > G);
    let plan = a.abort_capture(5).unwrap();
    assert_eq!(plan.page_count(), 3);
    assert!(plan.ranges().iter().all(|r| r.start >= 1));
    let after = (a.stats(), layout(&a));
    assert_eq!(after.1, before.1);
    let (s, b) = (after.0, before.0);
    assert_eq!(
        (
            s.allocated_bytes,
            s.reserved_bytes,
            s.segment_count,
            s.block_count,
            s.free_block_count,
            s.tainted_pages
        ),
        (
            b.allocated_bytes,
            b.reserved_bytes,
            b.segment_count,
            b.block_count,
            b.free_block_count,
            0
        )
    );
    assert_eq!(a.block_at(x), None);
    assert_eq!(a.block_at(y), None);
    assert_eq!(a.block_at(keep), Some((keep, 1024)));
    a.check_invariants().unwrap();
}

#[test]
fn abort_keeps_frees_of_pre_capture_blocks() {
    let mut a = pool(G, NO_CAP);
    let e = alloc(&mut a, 1024, E);
    a.begin_capture(3).unwrap();
    alloc(&mut a, 1024, Owner::Capture(3));
    a.free(e).unwrap();
    let plan = a.abort_capture(3).unwrap();
    assert!(plan.is_empty());
    let s = a.stats();
    assert_eq!(
        (s.allocated_bytes, s.block_count, s.reserved_bytes),
        (0, 0, G)
    );
    a.check_invariants().unwrap();
}

#[test]
fn abort_keeps_graph_taint_of_shared_pages() {
    let mut a = pool(G, NO_CAP);
    a.begin_capture(1).unwrap();
    let x = alloc(&mut a, 1024, Owner::Capture(1));
    a.free(x).unwrap();
    let fp = a.end_capture(1).unwrap();
    a.begin_capture(2).unwrap();
    assert_eq!(alloc(&mut a, 1024, Owner::Capture(2)), x);
    assert!(a.abort_capture(2).unwrap().is_empty());
    // Graph 1 still holds the page.
    assert_eq!(a.stats().tainted_pages, 1);
    let e = alloc(&mut a, 1024, E);
    assert_ne!(e / G, x / G);
    a.release_graph(fp).unwrap();
    a.check_invariants().unwrap();
}

#[test]
fn trim_unmaps_free_untainted_pages_only() {
    let mut a = pool(6 * G, NO_CAP);
    let e = alloc(&mut a, 1024, E); // page 0
    a.begin_capture(1).unwrap();
    let c = alloc(&mut a, G, Owner::Capture(1)); // page 1 (page 0 is shared with e, rest of it)
    a.free(c).unwrap();
    let fp = a.end_capture(1).unwrap();
    let tainted: Vec<u64> = fp.pages().iter().flat_map(|r| r.start..r.end()).collect();
    assert_eq!(
        tainted,
        [0, 1],
        "the capture's block starts on page 0, after e"
    );
    let plan = a.plan_trim();
    let trimmed: Vec<u64> = plan
        .ranges()
        .iter()
        .flat_map(|r| r.start..r.end())
        .collect();
    assert_eq!(trimmed, [2, 3, 4, 5]);
    let n = plan.page_count();
    a.commit_trim(plan);
    assert_eq!(a.stats().reserved_bytes, (6 - n) * G);
    assert_eq!(a.stats().peak_reserved_bytes, 6 * G);
    assert!(a.plan_trim().is_empty());
    a.check_invariants().unwrap();
    a.release_graph(fp).unwrap();
    a.free(e).unwrap();
    let plan = a.plan_trim();
    a.commit_trim(plan);
    let s = a.stats();
    assert_eq!(
        (s.reserved_bytes, s.segment_count, s.free_block_count),
        (0, 0, 0)
    );
    a.reset_peaks();
    assert_eq!(a.stats().peak_reserved_bytes, 0);
    a.check_invariants().unwrap();
}

#[test]
fn trim_skips_a_large_hole_inside_one_page() {
    // A clean hole of almost a page (indexed in the classes plan_trim scans)
    // lying strictly inside page 0: it holds no whole page. plan_trim used
    // to compute its page count before checking, underflowing (a panic in
    // debug builds).
    let cfg = PoolConfig {
        alignment: 16,
        ..small(G, NO_CAP)
    };
    let mut a = Allocator::new(cfg).unwrap().0;
    let x = alloc(&mut a, 128, E);
    let y = alloc(&mut a, G - 128 - 16, E);
    let z = alloc(&mut a, 16, E);
    assert_eq!((x, y, z), (0, 128, G - 16));
    a.free(y).unwrap();
    a.check_invariants().unwrap();
    let plan = a.plan_trim();
    assert!(plan.is_empty(), "{plan:?}");
    a.commit_trim(plan);
    assert_eq!(a.stats().reserved_bytes, G);
    a.free(x).unwrap();
    a.free(z).unwrap();
    let plan = a.plan_trim();
    assert_eq!(plan.ranges(), &[PageRange { start: 0, count: 1 }]);
    a.commit_trim(plan);
    a.check_invariants().unwrap();
}

#[test]
fn a_block_spanning_zones_frees_into_each_zone() {
    let mut a = pool(0, NO_CAP);
    // An eager block over pages 0..2, ending mid page 2.
    let e = alloc(&mut a, 2 * G + 512, E);
    a.begin_capture(1).unwrap();
    let c = alloc(&mut a, 512, Owner::Capture(1));
    assert_eq!(c / G, 2);
    a.free(e).unwrap();
    a.check_invariants().unwrap();
    // Pages 0..2 clean, page 2 tainted on both sides of the capture's block.
    assert_eq!(a.stats().free_block_count, 3);
    let fp = a.end_capture(1).unwrap();
    a.release_graph(fp).unwrap();
    a.free(c).unwrap();
    assert_eq!(a.stats().free_block_count, 1);
    a.check_invariants().unwrap();
}

#[test]
fn end_capture_reports_held_and_peak_bytes() {
    let mut a = pool(0, NO_CAP);
    a.begin_capture(4).unwrap();
    let c = Owner::Capture(4);
    let x = alloc(&mut a, 1000, c);
    let _y = alloc(&mut a, 2000, c);
    a.free(x).unwrap();
    let _z = alloc(&mut a, 256, c);
    let fp = a.end_capture(4).unwrap();
    assert_eq!(
        (fp.held_bytes(), fp.peak_bytes()),
        (2048 + 256, 1024 + 2048)
    );
    assert_eq!(a.stats().live_graphs, 1);
    // The capture id may be reused after it ended.
    a.begin_capture(4).unwrap();
    a.free(_y).unwrap();
    let fp2 = a.end_capture(4).unwrap();
    assert_eq!(fp2.held_bytes(), 0);
    a.release_graph(fp).unwrap();
    a.release_graph(fp2).unwrap();
    a.check_invariants().unwrap();
}

#[test]
fn errors_display_one_line_with_numbers() {
    let errs = [
        PoolError::InvalidConfig {
            field: "granularity",
            value: 1000,
            rule: "a nonzero multiple of alignment",
        },
        PoolError::InitialExceedsMax {
            initial: 4096,
            max: 100,
        },
        PoolError::InvalidSize { size: 0 },
        PoolError::OutOfMemory {
            requested: 1,
            needed: 2,
            reserved: 3,
            max: 4,
        },
        PoolError::AddressSpaceExhausted {
            requested: 5,
            va_bytes: 6,
        },
        PoolError::NotAllocated { offset: 7 },
        PoolError::InvalidCaptureId,
        PoolError::CaptureAlreadyOpen { id: 8 },
        PoolError::CaptureNotOpen { id: 9 },
        PoolError::UnknownGraph { capture: 10 },
    ];
    for e in errs {
        let s = e.to_string();
        assert!(!s.contains('\n') && !s.is_empty(), "{s}");
    }
    assert!(errs_contains(
        &PoolError::OutOfMemory {
            requested: 11,
            needed: 22,
            reserved: 33,
            max: 44
        },
        &["11", "22", "33", "44"]
    ));
}

fn errs_contains(e: &PoolError, parts: &[&str]) -> bool {
    let s = e.to_string();
    parts.iter().all(|p| s.contains(p))
}

/// An eager alloc through the device pool's path: a parked block first.
fn alloc_eager(a: &mut Allocator, size: u64) -> u64 {
    let off = a.alloc(size, E).expect("allocation");
    a.check_invariants().unwrap();
    off
}

#[test]
fn a_freed_eager_block_is_parked_and_handed_out_again_for_its_size() {
    let mut a = pool(G, NO_CAP);
    let x = alloc_eager(&mut a, 1000);
    let y = alloc_eager(&mut a, 1000);
    a.free(x).unwrap();
    a.check_invariants().unwrap();
    // Freed: not live, not freeable again, counted as one free block.
    assert_eq!(a.block_at(x), None);
    assert_eq!(a.free(x), Err(PoolError::NotAllocated { offset: x }));
    let s = a.stats();
    assert_eq!(
        (s.allocated_bytes, s.block_count, s.free_block_count),
        (1024, 1, 2)
    );
    // Another size does not take it; the same (rounded) size does.
    assert_eq!(a.alloc_parked(2048, E), None);
    assert_eq!(a.alloc_parked(1, Owner::Capture(1)), None);
    assert_eq!(a.alloc_parked(1020, E), Some(x));
    assert_eq!(a.block_at(x + 5), Some((x, 1024)));
    let s = a.stats();
    assert_eq!(
        (s.allocated_bytes, s.block_count, s.alloc_count),
        (2048, 2, 3)
    );
    a.free(y).unwrap();
    a.free(x).unwrap();
    let s = a.stats();
    assert_eq!(
        (s.allocated_bytes, s.block_count, s.free_block_count),
        (0, 0, 1)
    );
    a.check_invariants().unwrap();
}

#[test]
fn parked_blocks_settle_before_placement_so_they_merge_and_nothing_grows() {
    let mut a = pool(G, NO_CAP);
    let b: Vec<u64> = (0..4).map(|_| alloc_eager(&mut a, 1024)).collect();
    for &o in &b {
        a.free(o).unwrap();
    }
    // All four parked; a whole page needs them merged, not a new page.
    assert_eq!(a.alloc_parked(G, E), None);
    let plan = a.plan_alloc(G, E).unwrap();
    assert_eq!((plan.offset(), plan.new_page_count()), (0, 0));
    a.commit_alloc(plan);
    a.check_invariants().unwrap();
    // Trim sees parked space as free too.
    a.free(0).unwrap();
    let plan = a.plan_trim();
    assert_eq!(plan.ranges(), &runs(&[(0, 1)])[..]);
    a.commit_trim(plan);
    assert_eq!(a.stats().reserved_bytes, 0);
    a.check_invariants().unwrap();
}

#[test]
fn no_parking_while_a_capture_is_open_or_on_graph_pages_and_at_most_eight() {
    let mut a = pool(2 * G, NO_CAP);
    let x = alloc_eager(&mut a, 256);
    let y = alloc_eager(&mut a, 256);
    a.free(x).unwrap();
    // Beginning a capture settles the parked block: the capture may take it.
    a.begin_capture(1).unwrap();
    let c = alloc(&mut a, 256, Owner::Capture(1));
    assert_eq!(c, x);
    // An eager free while the capture is open merges at once.
    a.free(y).unwrap();
    assert_eq!(a.alloc_parked(256, E), None);
    let fp = a.end_capture(1).unwrap();
    // Page 0 now belongs to the graph: an eager block freed there is not
    // parked (it could be handed back to an eager allocation).
    a.free(c).unwrap();
    let z = alloc_eager(&mut a, 256);
    assert!(z >= G, "eager block on the graph's page: {z}");
    a.free(z).unwrap();
    assert_eq!(a.alloc_parked(256, E), Some(z));
    a.release_graph(fp).unwrap();
    a.check_invariants().unwrap();
    // Eight parked at most: the ninth free merges.
    let b: Vec<u64> = (0..9).map(|_| alloc_eager(&mut a, 256)).collect();
    for &o in &b {
        a.free(o).unwrap();
    }
    a.check_invariants().unwrap();
    let parked: Vec<u64> = (0..9).filter_map(|_| a.alloc_parked(256, E)).collect();
    assert_eq!(parked.len(), 8);
    a.check_invariants().unwrap();
}
