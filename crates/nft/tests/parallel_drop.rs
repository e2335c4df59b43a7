//! A large ruleset frees its statements on a second thread (`Drop for Ruleset`): counted here
//! with an allocator that keeps the process's live bytes (the per-thread count of
//! `statement_drop.rs` would see that thread's frees as another's), a 5,000-Service node read
//! in each form and dropped gives back all but the threads' bookkeeping.

use rulelint_dumpgen::{NftForm, Shape, generate_nft};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The only test of this binary: no other test allocates meanwhile.
#[test]
fn a_large_ruleset_freed_on_two_threads_gives_every_byte_back() {
    let shape = Shape::with_services(5_000);
    for form in [NftForm::List, NftForm::Json, NftForm::Transaction] {
        let text = generate_nft(&shape, form);
        // Once to warm what the readers and the threads keep, then counted.
        drop(rulelint_nft::parse_any(
            &text,
            &rulelint_nft::Strings::new(),
        ));
        let before = LIVE.load(Ordering::Relaxed);
        {
            let strings = rulelint_nft::Strings::new();
            let (_, parsed) = rulelint_nft::parse_any(&text, &strings);
            let set = &parsed.ruleset;
            let elements: usize = set.sets.iter().map(|s| s.elements.len()).sum();
            assert!(set.rules.len() > 10_000 && elements > 5_000, "{form:?}");
            std::hint::black_box(&parsed);
        }
        // A thread frees its handle and name after its join returns: a few hundred bytes
        // either way; a statement or element left behind would be thousands of them.
        let left = LIVE.load(Ordering::Relaxed) - before;
        assert!(left.abs() < 4096, "{form:?}: {left} bytes");
    }
}
