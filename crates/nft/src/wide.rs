//! AVX2 helpers for the 64-byte block readers of the lexer and the extent scan: where the CPU
//! has AVX2 (checked at run time; the binary still runs on the x86_64 baseline), a block's
//! masks take two 32-byte compares per byte class instead of four 16-byte ones.
//!
//! The functions are `#[inline(always)]` and take effect only inlined into a function compiled
//! with `#[target_feature(enable = "avx2,bmi1,popcnt")]`, entered after [`has_wide_blocks`].

use std::arch::x86_64::{
    __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_set1_epi8,
};

/// Whether the CPU has what the AVX2 block readers are compiled for (std caches the answer).
pub(crate) fn has_wide_blocks() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("popcnt")
}

/// Bytes `32 * half ..` of `block`.
///
/// # Safety
/// The CPU must have AVX2.
#[inline(always)]
pub(crate) unsafe fn load(block: &[u8; 64], half: usize) -> __m256i {
    let half = half.min(1);
    // SAFETY: the load reads 32 of the 64 bytes at `block` (`half` is 0 or 1; unaligned
    // loads are allowed), and the caller checked that the CPU has AVX2.
    unsafe { _mm256_loadu_si256(block.as_ptr().add(32 * half).cast::<__m256i>()) }
}

/// The bytes of `v` equal to `b`, as 0xff bytes.
///
/// # Safety
/// The CPU must have AVX2.
#[inline(always)]
pub(crate) unsafe fn eq(v: __m256i, b: u8) -> __m256i {
    // SAFETY: the caller checked that the CPU has AVX2.
    unsafe { _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b as i8)) }
}

/// The high bits of the 32 bytes of `hits`, as bits `32 * half ..` of a block's mask.
///
/// # Safety
/// The CPU must have AVX2.
#[inline(always)]
pub(crate) unsafe fn bits(hits: __m256i, half: usize) -> u64 {
    // SAFETY: the caller checked that the CPU has AVX2.
    u64::from(unsafe { _mm256_movemask_epi8(hits) } as u32) << (32 * half)
}
