//! Prefetch hints: ask the CPU to start loading memory that a loop will read soon, in an order
//! its own prefetcher cannot guess (hash slots, the Services of a dispatch chain). Only hints:
//! they change no result and never fault.

/// Asks the CPU to load the cache line holding `value`'s first byte.
#[inline]
pub fn line<T: ?Sized>(value: &T) {
    at((value as *const T).cast());
}

/// Asks the CPU to load every cache line `value` spans.
#[inline]
pub fn lines<T>(value: &T) {
    const LINE: usize = 64;
    let start = (value as *const T).cast::<u8>();
    let size = std::mem::size_of::<T>();
    let mut offset = 0;
    while offset < size {
        at(start.wrapping_add(offset));
        offset += LINE;
    }
    at(start.wrapping_add(size.saturating_sub(1)));
}

/// Asks the CPU to load the cache line holding the byte at `address`; any address will do.
#[inline]
fn at(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address. The `sse` feature
    // it needs is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
