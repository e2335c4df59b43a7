//! Asks Linux to back the parser's largest buffers with transparent huge pages.
//!
//! A 1M-rule dump gives about 200 MB of rules, tokens, chains and chain index, all written once
//! while parsing. With 4 KiB pages that is some 50,000 page faults, which cost a fifth of the
//! parse time at that size (measured: see ARCHITECTURE.md); at 100k rules, a tenth. Where the
//! kernel's transparent huge pages are set to `madvise` (a common default), asking for them
//! makes each fault map 2 MiB. The advice changes no byte of memory; where it is refused, or
//! off Linux, nothing changes.

/// Buffers smaller than this stay as they are: they fault little, and a huge page could
/// outweigh them. At 4 MiB every advised buffer holds at least one whole huge page.
const MIN_BYTES: usize = 4 << 20;

/// Advises huge pages for the capacity of `buffer`, if it is large (also used by the nft
/// parser for its token and rule buffers).
pub fn advise<T>(buffer: &Vec<T>) {
    let bytes = buffer.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < MIN_BYTES {
        return;
    }
    advise_range(buffer.as_ptr() as usize, bytes);
}

#[cfg(target_os = "linux")]
fn advise_range(start: usize, len: usize) {
    const HUGE: usize = 2 << 20;
    const PAGE: usize = 4 << 10;
    // Advice on a part of a mapping splits it into several kernel areas, and `mremap` cannot
    // move a range that spans more than one: the allocator's `realloc` of a large buffer then
    // falls back to allocate, copy and free, which held the old and the new buffer at once (a
    // 1M-chain cycle's rules grew from 19 to 39 MB that way: 19 MB over the rest of the peak,
    // issue 16). So the advice covers every page the buffer touches, which for a buffer
    // mapped on its own (as large ones are) is its whole mapping, allocator header included.
    // Only whole huge pages inside that range can be backed by one.
    let first = start / PAGE * PAGE;
    let end = (start + len).next_multiple_of(PAGE);
    if end / HUGE * HUGE > first.next_multiple_of(HUGE) {
        // SAFETY: `madvise` with MADV_HUGEPAGE is advice on how to back memory; it never
        // changes its contents or its validity. The range covers pages of a live allocation
        // that the caller owns (its first and last page may hold a few bytes of allocator
        // data or a neighbour, which advice does not change either), and a failure (huge
        // pages disabled) is harmless, so it is ignored.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_start: usize, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_buffers_keep_their_contents() {
        let mut buffer: Vec<u64> = Vec::with_capacity(4 * MIN_BYTES / 8);
        buffer.extend(0..1000);
        advise(&buffer);
        buffer.extend(1000..(4 * MIN_BYTES / 8) as u64);
        assert!(buffer.iter().enumerate().all(|(i, &v)| v == i as u64));
        advise(&Vec::<u8>::new());
    }
}
