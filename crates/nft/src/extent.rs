//! Where a block of `nft list ruleset` text ends, found before it is parsed: what a reader of
//! a file of several sections (`rulelint_lint::source`) runs over every byte of a listing.
//!
//! On x86_64 the text is read 64 bytes at a time from bit masks of its newlines, braces,
//! quotes and `#` (SSE2, part of the x86_64 baseline, as in the lexer); a block holding a
//! string or a comment is read that way up to it, and the string or comment byte by byte.
//! Elsewhere, and for the last bytes, the byte loop alone. Both read the same bytes the same
//! way: `tests` compares them on arbitrary text.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

/// Where a block ends: after the line on which its braces balance, or at the start of the first
/// line after its first for which `ends_before(line_start)` holds, or at the end of the text.
/// The block opens on the line at `pos`; braces count outside strings (`"` to the next `"` or
/// the line's end) and before a `#` comment. `ends_before` is asked of line starts in order,
/// until one ends the block, but only of lines that could be iptables-save lines: those whose
/// first byte after spaces and tabs is one of `* : - C #` or not a graphic ASCII byte, and not
/// a blank line's newline (nearly every line of a listing is not asked about), and never of a
/// line after the text's end.
///
/// Linear in the text; never panics (a `pos` past the end gives the text's length).
pub fn block_end(text: &str, pos: usize, mut ends_before: impl FnMut(usize) -> bool) -> usize {
    let bytes = text.as_bytes();
    let floor = Cell::new(0);
    let ends_at = |depth: i64, at: usize| depth <= 0 || iptables_after(bytes, at, &mut ends_before);
    scan::<true>(bytes, pos, &floor, ends_at)
        .0
        .unwrap_or(bytes.len())
}

/// From this many bytes after `pos` on, [`block_end_in_two`] reads the second half on another
/// thread.
pub const BLOCK_END_IN_TWO_MIN_BYTES: usize = 1 << 20;

/// [`block_end`], the text after the first line start past the middle of `text[pos..]` read on
/// a second thread (from [`BLOCK_END_IN_TWO_MIN_BYTES`] on, never in WebAssembly): the same
/// end. `ends_before` may then also be asked of lines after the end, and out of order.
///
/// This holds because a line starts in code (strings and comments end with their line): the
/// second half is read with depths relative to its start, keeping each line end where that
/// depth reaches a new low; the first half's depth at the middle picks the first low that
/// balances it.
pub fn block_end_in_two(
    text: &str,
    pos: usize,
    ends_before: impl Fn(usize) -> bool + Sync,
) -> usize {
    let rest = text.len().saturating_sub(pos);
    if cfg!(target_arch = "wasm32") || rest < BLOCK_END_IN_TWO_MIN_BYTES {
        return block_end(text, pos, ends_before);
    }
    let bytes = text.as_bytes();
    // Most blocks are small even when much text follows (a listing of many tables): read the
    // first bytes on this thread, and start a thread only for a block that goes on past them.
    if let Some(end) = block_end_within(bytes, pos, BLOCK_END_PROBE_BYTES, &ends_before) {
        return end;
    }
    match memchr::memchr(b'\n', &bytes[pos + rest / 2..]) {
        Some(n) if pos + rest / 2 + n + 1 < bytes.len() => {
            block_end_split_at(text, pos, pos + rest / 2 + n + 1, ends_before)
        }
        _ => block_end(text, pos, ends_before),
    }
}

/// [`block_end_in_two`] first reads this many bytes of a block on one thread: starting a thread
/// costs about as much as reading them.
const BLOCK_END_PROBE_BYTES: usize = 64 << 10;

/// [`block_end`]'s end when it comes within the lines that start in the `probe` bytes from `pos`
/// (which `ends_before` may also be asked about the line after), else `None`.
fn block_end_within(
    bytes: &[u8],
    pos: usize,
    probe: usize,
    ends_before: impl Fn(usize) -> bool,
) -> Option<usize> {
    let limit = pos.saturating_add(probe).min(bytes.len());
    let cut = memchr::memchr(b'\n', &bytes[limit..]).map_or(bytes.len(), |n| limit + n + 1);
    let floor = Cell::new(0);
    let ends_at =
        |depth: i64, at: usize| depth <= 0 || iptables_after(bytes, at, &mut &ends_before);
    scan::<true>(&bytes[..cut], pos, &floor, ends_at).0
}

/// The depth at the middle, as the first half publishes it to the second.
const DEPTH_UNKNOWN: i64 = i64::MIN;
/// The first half found the end.
const ENDED_BEFORE_MIDDLE: i64 = i64::MAX;
/// A second half whose depth falls to more new lows than this is read again on one thread
/// (well-formed listings nest a few levels deep).
const MAX_LOWS: usize = 64;

/// What the second half found: its new lows `(relative depth, line start after)`, in order
/// (`lows[..low_count]`: no allocation, so the thread does not make the allocator set up an
/// arena for it), and the first line start `ends_before` held for, if it stopped there.
struct SecondHalf {
    lows: [(i64, usize); MAX_LOWS],
    low_count: usize,
    iptables_at: Option<usize>,
    overflowed: bool,
}

/// [`block_end_in_two`] with its middle given: a line start after `pos` (tests try every one).
fn block_end_split_at(
    text: &str,
    pos: usize,
    middle: usize,
    ends_before: impl Fn(usize) -> bool + Sync,
) -> usize {
    let bytes = text.as_bytes();
    if middle <= pos || middle >= bytes.len() || bytes[middle - 1] != b'\n' {
        return block_end(text, pos, ends_before);
    }
    let published = AtomicI64::new(DEPTH_UNKNOWN);
    let second_half = || {
        let mut half = SecondHalf {
            lows: [(0, 0); MAX_LOWS],
            low_count: 0,
            iptables_at: None,
            overflowed: false,
        };
        // The scan needs exact depths only below the lowest so far: a new low.
        let floor = Cell::new(-1);
        let at_line_end = |depth: i64, at: usize| {
            if depth <= floor.get() {
                let Some(low) = half.lows.get_mut(half.low_count) else {
                    half.overflowed = true;
                    return true;
                };
                *low = (depth, at + 1);
                half.low_count += 1;
                floor.set(depth - 1);
            }
            // Once the first half is done, nothing past the end it implies matters.
            let known = published.load(Ordering::Relaxed);
            let lowest = floor.get() + 1;
            if known == ENDED_BEFORE_MIDDLE || (known != DEPTH_UNKNOWN && lowest <= -known) {
                return true;
            }
            if iptables_after(bytes, at, &mut &ends_before) {
                half.iptables_at = Some(at + 1);
                return true;
            }
            false
        };
        scan::<true>(bytes, middle, &floor, at_line_end);
        half
    };
    let first_half = || {
        let floor = Cell::new(0);
        let ends_at =
            |depth: i64, at: usize| depth <= 0 || iptables_after(bytes, at, &mut &ends_before);
        let (end, depth) = scan::<true>(&bytes[..middle], pos, &floor, ends_at);
        published.store(
            if end.is_some() {
                ENDED_BEFORE_MIDDLE
            } else {
                depth
            },
            Ordering::Relaxed,
        );
        (end, depth)
    };
    let joined = std::thread::scope(|scope| {
        let second = std::thread::Builder::new()
            .name("rulelint-nft-extent".into())
            .spawn_scoped(scope, second_half)
            .ok()?;
        let first = first_half();
        let second = second
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        Some((first, second))
    });
    let Some(((first_end, depth), second)) = joined else {
        // No thread to be had.
        return block_end(text, pos, ends_before);
    };
    if let Some(end) = first_end {
        return end;
    }
    let balanced = second.lows[..second.low_count]
        .iter()
        .find(|&&(low, _)| low <= -depth)
        .map(|&(_, end)| end);
    match (balanced, second.iptables_at) {
        (Some(b), Some(i)) => b.min(i),
        (Some(end), None) | (None, Some(end)) => end,
        (None, None) if second.overflowed => block_end(text, pos, ends_before),
        (None, None) => bytes.len(),
    }
}

/// At a newline at `at`: whether the next line, if any, may be and is an iptables-save line.
#[inline]
fn iptables_after(bytes: &[u8], at: usize, ends_before: &mut impl FnMut(usize) -> bool) -> bool {
    let next = at + 1;
    next < bytes.len() && may_start_iptables(bytes, next) && ends_before(next)
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

/// The scan from `pos` (a line start), depth 0: `at_line_end(depth, newline)` at each newline
/// read in code, with the depth after that line exactly when it is at most `floor` (else some
/// depth above `floor`), until it returns true: then `Some(newline + 1)`, else `None` at the end;
/// and the depth there. `BLOCKS`: read 64-byte blocks from bit masks where the CPU allows
/// (with AVX2 where it has it: half the instructions per block).
fn scan<const BLOCKS: bool>(
    bytes: &[u8],
    pos: usize,
    floor: &Cell<i64>,
    at_line_end: impl FnMut(i64, usize) -> bool,
) -> (Option<usize>, i64) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if BLOCKS && crate::wide::has_wide_blocks() {
        // SAFETY: the CPU has AVX2, BMI1 and POPCNT (`has_wide_blocks`).
        return unsafe { scan_wide(bytes, pos, floor, at_line_end) };
    }
    // SAFETY: no AVX2 asked for.
    unsafe { scan_with::<BLOCKS, false>(bytes, pos, floor, at_line_end) }
}

/// [`scan`] with AVX2 masks, compiled for a CPU with AVX2, BMI1 and POPCNT.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "avx2,bmi1,popcnt")]
fn scan_wide(
    bytes: &[u8],
    pos: usize,
    floor: &Cell<i64>,
    at_line_end: impl FnMut(i64, usize) -> bool,
) -> (Option<usize>, i64) {
    // SAFETY: this function is compiled for, and only entered on, a CPU with AVX2.
    unsafe { scan_with::<true, true>(bytes, pos, floor, at_line_end) }
}

/// The body of [`scan`]; `AVX2`: read the blocks' masks with AVX2.
///
/// # Safety
/// With `AVX2`, the CPU must have AVX2.
#[inline(always)]
unsafe fn scan_with<const BLOCKS: bool, const AVX2: bool>(
    bytes: &[u8],
    pos: usize,
    floor: &Cell<i64>,
    mut at_line_end: impl FnMut(i64, usize) -> bool,
) -> (Option<usize>, i64) {
    // Only the block reader, on x86_64, reads the floor.
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    let _ = floor;
    let mut depth: i64 = 0;
    let mut i = pos.min(bytes.len());
    let mut state = State::Code;
    while i < bytes.len() {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if BLOCKS
            && state == State::Code
            && let Some(block) = bytes
                .get(i..i + 64)
                .and_then(|b| <&[u8; 64]>::try_from(b).ok())
        {
            let m = if AVX2 {
                // SAFETY: the caller checked that the CPU has AVX2.
                unsafe { masks_avx2(block) }
            } else {
                masks(block)
            };
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
                let at = if depth - closes > floor.get() {
                    depth
                } else {
                    let under = (1u64 << k) - 1;
                    depth + i64::from((open & under).count_ones())
                        - i64::from((close & under).count_ones())
                };
                if at_line_end(at, i + k as usize) {
                    return (Some(i + k as usize + 1), depth);
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
        if state != State::Code {
            // A string runs to its closing quote or the line's end, a comment to the line's
            // end: nothing in between counts, so one search finds its end (`nft -a` ends every
            // line in a `# handle N` comment).
            let rest = &bytes[i..];
            let next = match state {
                State::Str => memchr::memchr2(b'"', b'\n', rest),
                _ => memchr::memchr(b'\n', rest),
            };
            match next {
                Some(n) => i += n,
                None => break,
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
                if at_line_end(depth, i) {
                    return (Some(i + 1), depth);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (None, depth)
}

/// Whether the line at `start` may be an iptables-save line: its first byte after spaces and
/// tabs is not a graphic ASCII byte other than `* : - C #` (every iptables-save line starts with
/// one of those), nor the newline of a blank line (`nft list` prints one after every chain: a
/// quarter of a kube-proxy listing's lines).
#[inline]
fn may_start_iptables(bytes: &[u8], start: usize) -> bool {
    let first = bytes[start..].iter().find(|&&b| b != b' ' && b != b'\t');
    !first.is_some_and(|&b| {
        b == b'\n' || (b.is_ascii_graphic() && !matches!(b, b'*' | b':' | b'-' | b'C' | b'#'))
    })
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

/// [`masks`] with AVX2: two 32-byte halves.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
unsafe fn masks_avx2(block: &[u8; 64]) -> Masks {
    use crate::wide::{bits, eq, load};
    use std::arch::x86_64::_mm256_or_si256;
    let mut m = Masks {
        newline: 0,
        open: 0,
        close: 0,
        special: 0,
    };
    for half in 0..2 {
        // SAFETY: the caller checked that the CPU has AVX2.
        unsafe {
            let v = load(block, half);
            m.newline |= bits(eq(v, b'\n'), half);
            m.open |= bits(eq(v, b'{'), half);
            m.close |= bits(eq(v, b'}'), half);
            m.special |= bits(_mm256_or_si256(eq(v, b'"'), eq(v, b'#')), half);
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
        run_with(text, pos, stop_at, |text, pos, floor, ends_at| {
            scan::<BLOCKS>(text, pos, floor, ends_at)
        })
    }

    /// [`run`] with SSE2 blocks, which [`scan`] leaves for AVX2 on a CPU that has it.
    fn run_sse2(text: &[u8], pos: usize, stop_at: u8) -> (usize, Vec<usize>) {
        run_with(text, pos, stop_at, |text, pos, floor, ends_at| {
            // SAFETY: no AVX2 asked for.
            unsafe { scan_with::<true, false>(text, pos, floor, ends_at) }
        })
    }

    fn run_with(
        text: &[u8],
        pos: usize,
        stop_at: u8,
        scan: impl FnOnce(
            &[u8],
            usize,
            &Cell<i64>,
            &mut dyn FnMut(i64, usize) -> bool,
        ) -> (Option<usize>, i64),
    ) -> (usize, Vec<usize>) {
        let mut asked = Vec::new();
        let floor = Cell::new(0);
        let ends_at = |depth: i64, at: usize| {
            depth <= 0
                || iptables_after(text, at, &mut |start| {
                    asked.push(start);
                    text[start] == stop_at
                })
        };
        let mut ends_at = ends_at;
        let end = scan(text, pos, &floor, &mut ends_at)
            .0
            .unwrap_or(text.len());
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
        assert_eq!((end, asked.clone()), run::<false>(text.as_bytes(), 0, b'*'));
        assert_eq!((end, asked), run_sse2(text.as_bytes(), 0, b'*'));
    }

    /// Text made mostly of the bytes the scan looks at, up to `max` of them.
    fn scanned_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                Just(b'{'),
                Just(b'}'),
                Just(b'"'),
                Just(b'#'),
                Just(b'\n'),
                Just(b'*'),
                Just(b'\t'),
                Just(b'a'),
                Just(b' ')
            ],
            0..max,
        )
    }

    proptest! {
        /// The 64-byte blocks and the byte loop: the same end, the same lines asked about, on
        /// text made mostly of the bytes the scan looks at.
        #[test]
        fn blocks_and_bytes_agree(
            text in scanned_bytes(600),
            pos in 0usize..700,
        ) {
            let bytes = run::<false>(&text, pos, b'*');
            prop_assert_eq!(run::<true>(&text, pos, b'*'), bytes.clone());
            prop_assert_eq!(run_sse2(&text, pos, b'*'), bytes);
        }

        /// Read in two halves at every line start, or on one thread: the same end.
        #[test]
        fn halves_agree_with_one_reading(
            text in scanned_bytes(300),
            pos in 0usize..300,
        ) {
            let text = String::from_utf8(text).unwrap_or_default();
            let iptables = |start: usize| text.as_bytes()[start] == b'*';
            let whole = block_end(&text, pos, iptables);
            for middle in 0..text.len() {
                prop_assert_eq!(block_end_split_at(&text, pos, middle, iptables), whole, "middle {}", middle);
            }
        }

        /// The first bytes read alone: one reading's end when it comes in their lines, else none.
        #[test]
        fn a_probe_finds_an_end_in_its_lines_only(
            text in scanned_bytes(300),
            pos in 0usize..300,
            probe in 0usize..320,
        ) {
            let text = String::from_utf8(text).unwrap_or_default();
            let bytes = text.as_bytes();
            let iptables = |start: usize| bytes[start] == b'*';
            let pos = pos.min(text.len());
            let whole = block_end(&text, pos, iptables);
            let limit = (pos + probe).min(bytes.len());
            let cut = memchr::memchr(b'\n', &bytes[limit..]).map_or(bytes.len(), |n| limit + n + 1);
            let found = block_end_within(bytes, pos, probe, iptables);
            if whole < cut {
                prop_assert_eq!(found, Some(whole));
            } else if whole > cut {
                prop_assert_eq!(found, None);
            }
        }
    }

    /// A second half that falls more levels than it keeps lows for is read again on one thread.
    #[test]
    fn a_deep_second_half_is_read_again() {
        let text = format!("{}{}x\n", "{\n".repeat(200), "}\n".repeat(200));
        let whole = block_end(&text, 0, |_| false);
        assert_eq!(whole, 800);
        for middle in [400, 402, 500, 600, 798] {
            assert_eq!(
                block_end_split_at(&text, 0, middle, |_| false),
                whole,
                "middle {middle}"
            );
        }
    }

    /// A listing of several tables, long enough for two threads, with an iptables-save dump
    /// after it: each table ends where one reading ends it.
    #[test]
    fn halves_end_each_table_of_a_large_listing() {
        let table = |name: &str| {
            let body: String = (0..16_000)
                .map(|i| format!("\tchain c{i} {{\n\t\tip daddr {{ 10.0.0.{} }} jump x comment \"}}{i}\" # }}\n\t}}\n", i % 250))
                .collect();
            format!("table ip {name} {{\n{body}}}\n")
        };
        let text = format!("{}\n{}*filter\n:A - [0:0]\n", table("a"), table("b"));
        let iptables = |start: usize| text.as_bytes()[start] == b'*';
        let mut pos = 0;
        while pos < text.len() {
            let end = block_end_in_two(&text, pos, iptables);
            assert_eq!(end, block_end(&text, pos, iptables), "from {pos}");
            assert!(end > pos);
            pos = end;
        }
    }

    /// Many small tables in a large listing: each ends where one reading ends it, most of them
    /// found by the probe alone (a thread for each cost seconds on 100k tables).
    #[test]
    fn each_small_table_of_a_large_listing_ends_in_its_probe() {
        let text: String = (0..80_000)
            .map(|i| format!("table ip t{i} {{\n}}\n"))
            .chain(["*filter\nCOMMIT\n".to_string()])
            .collect();
        assert!(text.len() > BLOCK_END_IN_TWO_MIN_BYTES);
        let iptables = |start: usize| text.as_bytes()[start] == b'*';
        let mut pos = 0;
        let mut tables = 0;
        while pos < text.len() && text.as_bytes()[pos] != b'*' {
            let end = block_end_in_two(&text, pos, iptables);
            assert_eq!(end, block_end(&text, pos, iptables), "from {pos}");
            assert_eq!(
                block_end_within(text.as_bytes(), pos, BLOCK_END_PROBE_BYTES, iptables),
                Some(end)
            );
            tables += 1;
            pos = end;
        }
        assert_eq!(tables, 80_000);
    }
}
