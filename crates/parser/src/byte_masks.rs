//! Bit masks of the bytes that lexing cares about, 64 bytes at a time: one bit per byte, set
//! where the byte is a blank, a newline, a quote, a backslash or a `\r`. The lexer reads words
//! and line ends off these bits instead of testing byte after byte.
//!
//! On x86_64 the masks come from SSE2 compares (part of every x86_64 CPU); elsewhere (wasm32,
//! aarch64) from the same arithmetic on 8-byte words. Both give exactly the same masks, which
//! the tests check against a byte-by-byte reference.

/// Bytes per block, and bits per mask.
pub(crate) const BLOCK: usize = 64;

/// Bit `i` of each mask stands for byte `i` of a 64-byte block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockMasks {
    /// Space or tab.
    pub blank: u64,
    /// `\n`.
    pub newline: u64,
    /// `"`.
    pub quote: u64,
    /// `\`.
    pub backslash: u64,
    /// `\r`.
    pub cr: u64,
}

/// The masks of the 64 bytes at `bytes[at..]`. Past the end of `bytes` the block reads as
/// newlines, so the end of the text ends a line like a newline does.
#[inline]
pub(crate) fn masks_at(bytes: &[u8], at: usize) -> BlockMasks {
    let rest = bytes.get(at..).unwrap_or_default();
    match rest.first_chunk::<BLOCK>() {
        Some(block) => masks(block),
        None => {
            let mut block = [b'\n'; BLOCK];
            block[..rest.len()].copy_from_slice(rest);
            masks(&block)
        }
    }
}

#[inline]
fn masks(block: &[u8; BLOCK]) -> BlockMasks {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    // SAFETY: `masks_sse2` only needs SSE2, and this code is compiled only where SSE2 is
    // enabled (it is part of the x86_64 baseline).
    return unsafe { masks_sse2(block) };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    return masks_swar(block);
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn masks_sse2(block: &[u8; BLOCK]) -> BlockMasks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x, _mm_set1_epi8,
    };
    let mut m = BlockMasks::default();
    let (chunks, _) = block.as_chunks::<16>();
    for (k, chunk) in chunks.iter().enumerate() {
        // Compiles to one unaligned 16-byte load.
        let x = u128::from_le_bytes(*chunk);
        let v = _mm_set_epi64x((x >> 64) as i64, x as i64);
        let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
        let bits = |hits: __m128i| u64::from(_mm_movemask_epi8(hits) as u16) << (16 * k);
        m.blank |= bits(_mm_or_si128(eq(b' '), eq(b'\t')));
        m.newline |= bits(eq(b'\n'));
        m.quote |= bits(eq(b'"'));
        m.backslash |= bits(eq(b'\\'));
        m.cr |= bits(eq(b'\r'));
    }
    m
}

#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn masks_swar(block: &[u8; BLOCK]) -> BlockMasks {
    let mut m = BlockMasks::default();
    let (chunks, _) = block.as_chunks::<8>();
    for (k, chunk) in chunks.iter().enumerate() {
        let x = u64::from_le_bytes(*chunk);
        let bits = |b: u8| u64::from(eq_bits(x, b)) << (8 * k);
        m.blank |= bits(b' ') | bits(b'\t');
        m.newline |= bits(b'\n');
        m.quote |= bits(b'"');
        m.backslash |= bits(b'\\');
        m.cr |= bits(b'\r');
    }
    m
}

/// Bit `i` set when byte `i` of the 8 bytes in `x` equals `b`, exact for every byte.
#[inline]
fn eq_bits(x: u64, b: u8) -> u8 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let y = x ^ (ONES * u64::from(b));
    // High bit of each byte set when that byte of `y` is zero; no carry crosses bytes.
    let zero = !(((y & LOW7) + LOW7) | y) & !LOW7;
    // Gather the eight high bits into one byte: each lands on its own bit, with no carries.
    ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(block: &[u8]) -> BlockMasks {
        let mut m = BlockMasks::default();
        for (i, &b) in block.iter().enumerate() {
            let bit = 1u64 << i;
            match b {
                b' ' | b'\t' => m.blank |= bit,
                b'\n' => m.newline |= bit,
                b'"' => m.quote |= bit,
                b'\\' => m.backslash |= bit,
                b'\r' => m.cr |= bit,
                _ => {}
            }
        }
        m
    }

    fn blocks() -> Vec<[u8; BLOCK]> {
        let mut blocks = vec![[0u8; BLOCK], [b' '; BLOCK], [0xff; BLOCK]];
        let line = b"-A KUBE-SEP-X -m comment --comment \"a \\\"b\\\" c\" -j DNAT\r\n\t\x80\x0a\x21\x1f\x5c\xa0\"";
        let mut block = [b'x'; BLOCK];
        block[..line.len()].copy_from_slice(line);
        blocks.push(block);
        // Every byte value in every position, a block at a time.
        for start in (0..256).step_by(BLOCK) {
            blocks.push(std::array::from_fn(|i| (start + i) as u8));
            blocks.push(std::array::from_fn(|i| (start + i * 7) as u8));
        }
        blocks
    }

    #[test]
    fn masks_match_a_byte_by_byte_reference() {
        for block in blocks() {
            assert_eq!(masks(&block), reference(&block), "{block:?}");
            assert_eq!(masks_swar(&block), reference(&block), "{block:?}");
        }
    }

    #[test]
    fn the_end_of_the_text_reads_as_newlines() {
        let text = b"ab\"c";
        let m = masks_at(text, 1);
        assert_eq!(m.quote, 0b10);
        assert_eq!(m.newline, !0u64 << 3);
        assert_eq!(masks_at(text, 10).newline, !0);
    }
}
