//! Where a block of `nft list ruleset` text ends, found before it is parsed: what a reader of
//! a file of several sections (`rulelint_lint::source`) runs over every byte of a listing.
//!
//! On x86_64 the text is read 64 bytes at a time from bit masks of its newlines, braces,
//! quotes and `#` (SSE2, part of the x86_64 baseline, as in the lexer); a block holding a
//! string or a comment is read that way up to it, and the string or comment byte by byte.
//! Elsewhere, and for the last bytes, the byte loop alone. Both read the same bytes the same
//! way: `tests` compares them on arbitrary text.

/// Where a block ends: after the line on which its braces balance, or at the start of the first
/// line after its first for which `ends_before(line_start)` holds, or at the end of the text.
/// The block opens on the line at `pos`; braces count outside strings (`"` to the next `"` or
/// the line's end) and before a `#` comment. `ends_before` is asked of line starts in order,
/// until one ends the block, but only of lines that could be iptables-save lines: those whose
/// first byte after spaces and tabs is one of `* : - C #` or not a graphic ASCII byte (nearly
/// every line of a listing is not asked about), and never of a line after the text's end.
///
/// Linear in the text; never panics (a `pos` past the end gives the text's length).
pub fn block_end(text: &str, pos: usize, ends_before: impl FnMut(usize) -> bool) -> usize {
    scan::<true>(text.as_bytes(), pos, ends_before)
}

/// What the byte loop is reading.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    /// Inside a `"` string.
    Str,
    /// After a `#`, to the line's end.
    Comment,
}

/// The scan; `BLOCKS`: read 64-byte blocks from bit masks where the CPU allows.
fn scan<const BLOCKS: bool>(
    bytes: &[u8],
    pos: usize,
    mut ends_before: impl FnMut(usize) -> bool,
) -> usize {
    let mut depth: i64 = 0;
    let mut i = pos.min(bytes.len());
    let mut state = State::Code;
    // At a newline at `at` (read in code): whether the block ends after it.
    let mut ends_at = |depth: i64, at: usize| {
        let next = at + 1;
        depth <= 0 || (next < bytes.len() && may_start_iptables(bytes, next) && ends_before(next))
    };
    while i < bytes.len() {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if BLOCKS
            && state == State::Code
            && let Some(block) = bytes
                .get(i..i + 64)
                .and_then(|b| <&[u8; 64]>::try_from(b).ok())
        {
            let m = masks(block);
            // Up to the first quote or `#`: the byte loop reads the string or comment.
            let stop = m.special.trailing_zeros();
            let before = if stop == 64 { !0 } else { (1u64 << stop) - 1 };
            let (open, close) = (m.open & before, m.close & before);
            // Braces are on few lines, and this target may lack a popcount instruction: the
            // depth at each newline is counted only when the block's closing braces could
            // bring it to zero.
            let closes = if close == 0 {
                0
            } else {
                i64::from(close.count_ones())
            };
            let mut newlines = m.newline & before;
            while newlines != 0 {
                let k = newlines.trailing_zeros();
                newlines &= newlines - 1;
                let at = if depth - closes > 0 {
                    depth
                } else {
                    let under = (1u64 << k) - 1;
                    depth + i64::from((open & under).count_ones())
                        - i64::from((close & under).count_ones())
                };
                if ends_at(at, i + k as usize) {
                    return i + k as usize + 1;
                }
            }
            if open != 0 {
                depth += i64::from(open.count_ones());
            }
            depth -= closes;
            i += stop as usize;
            if stop == 64 {
                continue;
            }
        }
        let b = bytes[i];
        match (state, b) {
            (State::Code, b'{') => depth += 1,
            (State::Code, b'}') => depth -= 1,
            (State::Code, b'"') => state = State::Str,
            (State::Code, b'#') => state = State::Comment,
            (State::Str, b'"') => state = State::Code,
            (_, b'\n') => {
                state = State::Code;
                if ends_at(depth, i) {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// Whether the line at `start` may be an iptables-save line: its first byte after spaces and
/// tabs is not a graphic ASCII byte other than `* : - C #` (every iptables-save line starts with
/// one of those).
#[inline]
fn may_start_iptables(bytes: &[u8], start: usize) -> bool {
    let first = bytes[start..].iter().find(|&&b| b != b' ' && b != b'\t');
    !first.is_some_and(|&b| b.is_ascii_graphic() && !matches!(b, b'*' | b':' | b'-' | b'C' | b'#'))
}

/// Bit `i` of each mask stands for byte `i` of a 64-byte block.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
struct Masks {
    newline: u64,
    open: u64,
    close: u64,
    /// `"` and `#`.
    special: u64,
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn masks(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x, _mm_set1_epi8,
    };
    let mut m = Masks {
        newline: 0,
        open: 0,
        close: 0,
        special: 0,
    };
    let (chunks, _) = block.as_chunks::<16>();
    for (k, chunk) in chunks.iter().enumerate() {
        // Compiles to one unaligned 16-byte load.
        let x = u128::from_le_bytes(*chunk);
        // SAFETY: these SSE2 intrinsics read and write only registers, and this code is
        // compiled only where SSE2 is enabled (it is part of the x86_64 baseline).
        unsafe {
            let v = _mm_set_epi64x((x >> 64) as i64, x as i64);
            let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
            let bits = |hits: __m128i| u64::from(_mm_movemask_epi8(hits) as u16) << (16 * k);
            m.newline |= bits(eq(b'\n'));
            m.open |= bits(eq(b'{'));
            m.close |= bits(eq(b'}'));
            m.special |= bits(_mm_or_si128(eq(b'"'), eq(b'#')));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every line start after `pos` the scan asked about, and where it ended.
    fn run<const BLOCKS: bool>(text: &[u8], pos: usize, stop_at: u8) -> (usize, Vec<usize>) {
        let mut asked = Vec::new();
        let end = scan::<BLOCKS>(text, pos, |start| {
            asked.push(start);
            text[start] == stop_at
        });
        (end, asked)
    }

    #[test]
    fn ends_where_braces_balance_or_a_line_ends_it() {
        let listing = "table ip t {\n\tchain c {\n\t\tip daddr { 1.2.3.4 } accept comment \"}\"\n\t} # }\n}\nmore\n";
        let end = block_end(listing, 0, |_| false);
        assert_eq!(
            &listing[..end],
            "table ip t {\n\tchain c {\n\t\tip daddr { 1.2.3.4 } accept comment \"}\"\n\t} # }\n}\n"
        );
        // A line that ends it (an iptables-save line after a cut paste).
        let cut = "table ip t {\n\tchain c {\n*nat\n:A - [0:0]\n";
        assert_eq!(
            Some(block_end(cut, 0, |s| cut.as_bytes()[s] == b'*')),
            cut.find("*nat")
        );
        // An unclosed block runs to the end; an unclosed string to its line's end.
        assert_eq!(block_end("table t {\n\"{\n", 0, |_| false), 13);
        assert_eq!(block_end("t {\n\"}\n}\n", 0, |_| false), 9);
        assert_eq!(block_end("", 0, |_| false), 0);
        assert_eq!(block_end("x", 5, |_| false), 1);
    }

    #[test]
    fn blocks_read_as_bytes_on_a_large_listing() {
        let body: String = (0..400)
            .map(|i| format!("\tchain c{i} {{\n\t\tip daddr {{ 10.0.0.{i} }} jump x comment \"{{{i}\" # h\n\t}}\n\n"))
            .collect();
        let text = format!("table ip t {{\n{body}}}\n*filter\n");
        let (end, asked) = run::<true>(text.as_bytes(), 0, b'*');
        assert_eq!(text.len() - end, "*filter\n".len());
        assert_eq!((end, asked), run::<false>(text.as_bytes(), 0, b'*'));
    }

    proptest! {
        /// The 64-byte blocks and the byte loop: the same end, the same lines asked about, on
        /// text made mostly of the bytes the scan looks at.
        #[test]
        fn blocks_and_bytes_agree(
            text in proptest::collection::vec(
                prop_oneof![
                    Just(b'{'), Just(b'}'), Just(b'"'), Just(b'#'), Just(b'\n'), Just(b'*'),
                    Just(b'\t'), Just(b'a'), Just(b' ')
                ],
                0..600,
            ),
            pos in 0usize..700,
        ) {
            prop_assert_eq!(run::<true>(&text, pos, b'*'), run::<false>(&text, pos, b'*'));
        }
    }
}
