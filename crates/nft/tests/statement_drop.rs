//! A ruleset's statement chunks drop only the statements they list as owning heap memory
//! (`model::StatementChunk`): every statement that does must be listed, or it leaks. Counted
//! here with an allocator that keeps each thread's live bytes: reading and dropping every
//! corpus text, the shared corpus and generated nodes in all three forms gives every byte back.

mod common;

use rulelint_dumpgen::{NftForm, Shape, generate_nft};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct PerThread;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn add(bytes: isize) {
    // `try_with`: no count while a thread's locals are torn down.
    let _ = LIVE.try_with(|live| live.set(live.get() + bytes));
}

unsafe impl GlobalAlloc for PerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        add(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: PerThread = PerThread;

/// Live bytes of this thread that reading `text` (in whichever form it is) leaves behind.
fn left_behind(text: &str) -> isize {
    let before = LIVE.with(Cell::get);
    {
        let strings = rulelint_nft::Strings::new();
        let (_, parsed) = rulelint_nft::parse_any(text, &strings);
        std::hint::black_box(&parsed);
        if matches!(rulelint_nft::detect_form(text), rulelint_nft::Form::Listing) {
            std::hint::black_box(rulelint_nft::parse_on_one_thread(text));
        }
    }
    LIVE.with(Cell::get) - before
}

#[test]
fn dropping_a_ruleset_frees_every_statement() {
    let mut texts: Vec<(String, String)> = common::corpus_texts();
    if let Ok(dir) = std::fs::read_dir(common::shared_dir()) {
        let mut paths: Vec<_> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            if let Ok(text) = std::fs::read_to_string(&p) {
                texts.push((p.display().to_string(), text));
            }
        }
    }
    for ipv6 in [false, true] {
        let shape = Shape {
            ipv6,
            ..Shape::with_services(200)
        };
        for form in [NftForm::List, NftForm::Json, NftForm::Transaction] {
            texts.push((
                format!("generated {form:?} ipv6 {ipv6}"),
                generate_nft(&shape, form),
            ));
        }
    }
    assert!(texts.len() > 20);
    for (name, text) in &texts {
        // Once to warm what the readers cache for the thread, then counted.
        left_behind(text);
        assert_eq!(left_behind(text), 0, "{name}");
    }
}
