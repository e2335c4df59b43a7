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
    // Only whole huge pages inside the buffer: the advice then covers no byte outside it.
    let first = start.next_multiple_of(HUGE);
    let end = (start + len) / HUGE * HUGE;
    if end > first {
        // SAFETY: `madvise` with MADV_HUGEPAGE is advice on how to back memory; it never
        // changes its contents or its validity. The range lies inside a live allocation that
        // the caller owns, and a failure (huge pages disabled) is harmless, so it is ignored.
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
