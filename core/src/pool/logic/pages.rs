//! The page table: per page of the address range, whether it is mapped and
//! who taints it, plus the zone that classifies its free space.

use super::plan::PageRange;
use super::CaptureId;

/// State of one page. Pages past the end of the table are unmapped and clean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Page {
    /// Physical memory is mapped here.
    pub mapped: bool,
    /// The open capture whose allocations touched this page (0: none). At
    /// most one open capture touches a page.
    pub open: CaptureId,
    /// Number of live graphs that touched this page.
    pub refs: u32,
}

impl Page {
    fn tainted(&self) -> bool {
        self.open != 0 || self.refs > 0
    }
}

/// Which allocations may use free space on a page. Every free block lies on
/// pages of a single zone; adjacent free blocks of one zone are merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Zone {
    /// Not mapped (and so untainted): usable by anyone after mapping.
    Unmapped,
    /// Mapped and untainted: usable by anyone.
    Clean,
    /// Touched by live graphs only: usable by captures.
    Graph,
    /// Touched by this open capture: usable by it alone.
    Open(CaptureId),
}

/// Per-page state, grown lazily up to the highest page ever mapped.
#[derive(Debug, Default)]
pub(crate) struct PageTable {
    pages: Vec<Page>,
    mapped: u64,
    segments: u64,
    tainted: u64,
}

impl PageTable {
    /// The page's state (default for pages never mapped).
    #[inline]
    pub fn get(&self, p: u64) -> Page {
        self.pages.get(p as usize).copied().unwrap_or_default()
    }

    /// The zone of page `p`.
    #[inline]
    pub fn zone(&self, p: u64) -> Zone {
        let page = self.get(p);
        if !page.mapped {
            Zone::Unmapped
        } else if page.open != 0 {
            Zone::Open(page.open)
        } else if page.refs > 0 {
            Zone::Graph
        } else {
            Zone::Clean
        }
    }

    /// Number of mapped pages.
    pub fn mapped(&self) -> u64 {
        self.mapped
    }

    /// Number of maximal runs of mapped pages.
    pub fn segments(&self) -> u64 {
        self.segments
    }

    /// Number of tainted pages.
    pub fn tainted(&self) -> u64 {
        self.tainted
    }

    /// Length of the table (pages past it are default).
    pub fn len(&self) -> u64 {
        self.pages.len() as u64
    }

    fn is_mapped(&self, p: Option<u64>) -> bool {
        p.is_some_and(|p| self.get(p).mapped)
    }

    /// Marks the run mapped; every page of it must be unmapped.
    pub fn map(&mut self, r: PageRange) {
        if self.pages.len() < r.end() as usize {
            self.pages.resize(r.end() as usize, Page::default());
        }
        let left = self.is_mapped(r.start.checked_sub(1));
        let right = self.is_mapped(Some(r.end()));
        for p in &mut self.pages[r.start as usize..r.end() as usize] {
            debug_assert!(!p.mapped, "mapping a mapped page");
            p.mapped = true;
        }
        self.mapped += r.count;
        self.segments = self.segments + 1 - left as u64 - right as u64;
    }

    /// Marks the run unmapped; every page of it must be mapped and clean.
    pub fn unmap(&mut self, r: PageRange) {
        for p in &mut self.pages[r.start as usize..r.end() as usize] {
            debug_assert!(
                p.mapped && !p.tainted(),
                "unmapping a tainted or unmapped page"
            );
            p.mapped = false;
        }
        let left = self.is_mapped(r.start.checked_sub(1));
        let right = self.is_mapped(Some(r.end()));
        self.mapped -= r.count;
        self.segments = self.segments + left as u64 + right as u64 - 1;
    }

    /// Marks page `p` (mapped) as touched by open capture `id`. Returns false
    /// when it already was.
    pub fn set_open(&mut self, p: u64, id: CaptureId) -> bool {
        let page = &mut self.pages[p as usize];
        debug_assert!(page.mapped && (page.open == 0 || page.open == id));
        if page.open == id {
            return false;
        }
        if !page.tainted() {
            self.tainted += 1;
        }
        page.open = id;
        true
    }

    /// Clears the open-capture taint of page `p`, adding a graph reference
    /// when `to_graph`.
    pub fn close(&mut self, p: u64, to_graph: bool) {
        let page = &mut self.pages[p as usize];
        page.open = 0;
        if to_graph {
            page.refs += 1;
        } else if !page.tainted() {
            self.tainted -= 1;
        }
    }

    /// Drops one graph reference of page `p`.
    pub fn unref(&mut self, p: u64) {
        let page = &mut self.pages[p as usize];
        page.refs -= 1;
        if !page.tainted() {
            self.tainted -= 1;
        }
    }

    /// All pages of the table, with their index.
    pub fn iter(&self) -> impl Iterator<Item = (u64, Page)> + '_ {
        self.pages.iter().enumerate().map(|(i, p)| (i as u64, *p))
    }
}
