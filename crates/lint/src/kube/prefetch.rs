//! Prefetch hints for the model's reads in an order the cache cannot guess (a Service per
//! dispatch rule, in the random order of nat `KUBE-SERVICES`).

/// Asks the CPU to load the cache line holding the byte at `at`; a hint, never a fault, so any
/// address will do.
#[inline]
fn at(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address. The `sse` feature
    // it needs is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// [`at`] the first byte of `value`.
#[inline]
pub(crate) fn line<T: ?Sized>(value: &T) {
    at((value as *const T).cast());
}

/// [`at`] every cache line `value` spans.
#[inline]
pub(crate) fn lines<T>(value: &T) {
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
