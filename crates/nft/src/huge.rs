//! Sizes and advice that let the parser's large stores be backed by 2 MiB huge pages from their
//! first byte (see `rulelint_parser::huge_pages`, which advises them).
//!
//! Two things kept a 5,000-Service node's stores on 4 KiB pages, faulted one at a time (1.8 µs
//! each here): rules and chains (2 and 2.4 MB) were under the 4 MiB from which a store is
//! advised, and in every advised store the first 2 MiB never got a huge page, because `malloc`
//! writes its header into the mapping's first page before the advice, and a 2 MiB range
//! already holding a 4 KiB page is not given a huge one on a fault. Sized and advised here,
//! `rulelint check` of that node takes 3,860 page faults instead of 6,040.

/// From this many bytes a store's capacity is rounded for huge pages ([`capacity`]).
const MIN_BYTES: usize = 1 << 20;

/// The least a rounded store maps: 2 MiB would do for alignment, but a store of 1 to 2 MiB is
/// a node large enough that the next one may double it.
const ROUNDED_MIN_BYTES: usize = 4 << 20;

const HUGE_PAGE: usize = 2 << 20;

/// What glibc's `malloc` adds to an allocation it maps on its own (header and rounding).
const MALLOC_HEADER: usize = 32;

/// A store's capacity for at least `n` items. On Linux a store of 1 MiB or more is rounded up
/// to a whole number of huge pages, 4 MiB at least, less `malloc`'s
/// header: Linux aligns an anonymous mapping whose length is a multiple of 2 MiB to 2 MiB, so
/// the store starts 16 bytes into a huge page ([`advise`] then makes that page huge too). The
/// capacity not written is never touched; elsewhere (WASM) reserved memory is memory taken, so
/// `n` stays as it is.
pub(crate) fn capacity<T>(n: usize) -> usize {
    let size = std::mem::size_of::<T>().max(1);
    let bytes = n.saturating_mul(size);
    if !cfg!(target_os = "linux") || bytes < MIN_BYTES {
        return n;
    }
    let mapped = bytes
        .saturating_add(MALLOC_HEADER)
        .max(ROUNDED_MIN_BYTES)
        .next_multiple_of(HUGE_PAGE);
    (mapped - MALLOC_HEADER) / size
}

/// Advises huge pages for `store`. A store sized by [`capacity`] starts in the first page of a
/// 2 MiB-aligned mapping: its mapping is advised here (under 4 MiB too), and Linux is asked to
/// make its first 2 MiB one huge page now (`MADV_COLLAPSE`, Linux 6.1), since that range holds
/// `malloc`'s header page already and the advice alone would leave it to 512 faults of 4 KiB.
/// Any other store is advised as the iptables parser's are
/// (`rulelint_parser::huge_pages::advise`).
pub(crate) fn advise<T>(store: &Vec<T>) {
    let bytes = store.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < MIN_BYTES || !advise_aligned(store.as_ptr() as usize, bytes) {
        rulelint_parser::huge_pages::advise(store);
    }
}

/// Advises `start..start + bytes` and collapses its first huge page, if `start` is in the
/// first page of a 2 MiB-aligned range; false if not.
#[cfg(target_os = "linux")]
fn advise_aligned(start: usize, bytes: usize) -> bool {
    const PAGE: usize = 4 << 10;
    const MADV_COLLAPSE: libc::c_int = 25;
    let head = start / HUGE_PAGE * HUGE_PAGE;
    if start - head >= PAGE {
        return false;
    }
    let end = start.saturating_add(bytes).next_multiple_of(PAGE);
    // SAFETY: `madvise` with MADV_HUGEPAGE or MADV_COLLAPSE changes how memory is backed,
    // never its contents or validity: a collapse copies the present pages (the header) into
    // the huge page, and the rest still reads as zero. The range is the store's pages and the
    // header page before it (a neighbour's bytes there, if any, are not changed either); a
    // refusal (old kernel, no huge page to spare) is harmless, so it is ignored.
    unsafe {
        libc::madvise(head as *mut libc::c_void, end - head, libc::MADV_HUGEPAGE);
        libc::madvise(
            head as *mut libc::c_void,
            HUGE_PAGE.min(end - head),
            MADV_COLLAPSE,
        );
    }
    true
}

#[cfg(not(target_os = "linux"))]
fn advise_aligned(_start: usize, _bytes: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_stores_fill_whole_huge_pages_less_the_header() {
        assert_eq!(capacity::<u64>(1000), 1000);
        if cfg!(target_os = "linux") {
            assert_eq!(capacity::<u64>(200_000), (4 << 20) / 8 - 4);
            assert_eq!(capacity::<[u8; 40]>(100_000), ((4 << 20) - 32) / 40);
            assert_eq!(capacity::<[u8; 40]>(110_000), ((6 << 20) - 32) / 40);
        }
    }

    #[test]
    fn advised_stores_keep_their_contents() {
        let mut store: Vec<u64> = Vec::with_capacity(capacity::<u64>(300_000));
        advise(&store);
        store.extend(0..300_000);
        assert!(store.iter().enumerate().all(|(i, &v)| v == i as u64));
    }
}
