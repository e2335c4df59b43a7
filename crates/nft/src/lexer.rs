//! The tokenizer: one pass over the bytes, no backtracking.
//!
//! Words are runs of bytes that are not blanks, newlines or one of `{ } ; , " #`; so addresses
//! (`10.0.0.1:80`, `fd00::1`), prefixes, ranges, `@set` references, operators (`!=`, `&`, `.`,
//! `:`) and chain names with `/` are single words, and `:` and `.` between blanks are words of
//! their own. `# handle N` comments become [`Kind::Handle`] tokens; other comments are dropped.

use crate::codes;
use rulelint_parser::{Diagnostic, Span};

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Word,
    /// A `"..."` string; its span includes the quotes (or runs to the end of the line when the
    /// closing quote is missing).
    Str,
    LBrace,
    RBrace,
    Semi,
    Comma,
    Newline,
    /// `# handle N`.
    Handle,
}

/// A token: its byte range. Its [`Kind`] follows from its first byte ([`Token::kind`]): eight
/// bytes instead of twelve, for about one token per ten bytes of text that the parser holds
/// whole (a third less memory to fault in on a large listing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub start: u32,
    pub end: u32,
}

/// The kind of a token by its first byte: every kind but [`Kind::Word`] starts with a byte no
/// word holds.
const KIND_OF_FIRST_BYTE: [Kind; 256] = {
    let mut table = [Kind::Word; 256];
    table[b'"' as usize] = Kind::Str;
    table[b'{' as usize] = Kind::LBrace;
    table[b'}' as usize] = Kind::RBrace;
    table[b';' as usize] = Kind::Semi;
    table[b',' as usize] = Kind::Comma;
    table[b'\n' as usize] = Kind::Newline;
    table[b'#' as usize] = Kind::Handle;
    table
};

impl Token {
    /// What the token is; `text` is the text it was read from.
    #[inline(always)]
    pub fn kind(self, text: &str) -> Kind {
        text.as_bytes()
            .get(self.start as usize)
            .map_or(Kind::Word, |&b| KIND_OF_FIRST_BYTE[usize::from(b)])
    }

    pub fn span(self) -> Span {
        Span {
            start: self.start,
            end: self.end,
        }
    }
}

/// Which bytes belong to words, as a table: the word loop runs once per byte of every chain
/// name and address, and a table lookup is cheaper there than the jump table `matches!`
/// compiles to (an indirect branch per byte).
const WORD_BYTES: [bool; 256] = {
    let mut table = [true; 256];
    let ends = *b" \t\r\n{};,\"#\x0b\x0c";
    let mut i = 0;
    while i < ends.len() {
        table[ends[i] as usize] = false;
        i += 1;
    }
    table
};

fn is_word_byte(b: u8) -> bool {
    WORD_BYTES[usize::from(b)]
}

/// Counts the tokenizer sees for free, so that the parser can size its stores once instead of
/// growing them by doubling (each doubling copies and faults in the whole store again).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    /// Newline tokens.
    pub lines: usize,
    /// `{` tokens that end their line (before a comment): block headers, not anonymous sets.
    pub blocks: usize,
}

/// Bytes [`estimate_counts`] reads of a large text: [`SAMPLES`] stretches spread over it.
const SAMPLED_BYTES: usize = 128 << 10;
const SAMPLES: usize = 16;

/// The [`Counts`] of `b` without lexing it, for sizing stores ahead: the newlines and the
/// block-opening `{` of [`SAMPLES`] stretches spread over a large text, scaled to its length
/// (a `{` or newline inside a string counts too: an estimate). Counting every
/// byte read the whole text once more, which cost as many cache misses as the windowed parse
/// saves.
pub(crate) fn estimate_counts(b: &[u8]) -> Counts {
    let count = |part: &[u8], offset: usize| Counts {
        lines: bytecount::count(part, b'\n'),
        blocks: memchr::memchr_iter(b'{', part)
            .filter(|&i| ends_its_line(b, offset + i))
            .count(),
    };
    if b.len() <= SAMPLED_BYTES {
        return count(b, 0);
    }
    let (sample, stride) = (SAMPLED_BYTES / SAMPLES, b.len() / SAMPLES);
    let mut sampled = Counts::default();
    for k in 0..SAMPLES {
        let at = k * stride;
        let c = count(&b[at..at + sample], at);
        sampled.lines += c.lines;
        sampled.blocks += c.blocks;
    }
    // Block headers get an eighth more (a chain store too small grows by copying), lines
    // none: they bound the rules loosely already (element lines count as rules).
    let scale = |n: usize| n.saturating_mul(b.len()) / SAMPLED_BYTES;
    Counts {
        lines: scale(sampled.lines),
        blocks: scale(sampled.blocks) * 9 / 8,
    }
}

/// Splits `text` into tokens. Unterminated strings are reported and end at the line's end.
pub(crate) fn tokenize(text: &str, diagnostics: &mut Vec<Diagnostic>) -> Vec<Token> {
    tokenize_counted(text, diagnostics).0
}

/// [`tokenize`], with the [`Counts`] of what it read.
pub(crate) fn tokenize_counted(
    text: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<Token>, Counts) {
    tokenize_range(text, 0, text.len(), diagnostics)
}

/// [`tokenize_counted`] of the bytes `from..to` of `text`, with spans into the whole `text`.
/// Tokens never cross a line (strings and comments end at the line's end), so when `from`
/// and `to` are line starts (or the text's ends) the tokens are exactly those of the whole
/// text's tokenization that lie in the range.
pub(crate) fn tokenize_range(
    text: &str,
    from: usize,
    to: usize,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<Token>, Counts) {
    lex::<true>(text, from, to, diagnostics)
}

/// Caps the lexer's diagnostics (`diagnostics[own..]`) to what a report shows of each code and
/// one that counts the rest (`cap::cap_tail`), so 200k lines with an open string (132 MB of
/// diagnostics) hold a few hundred; returns the length at which to cap again.
#[cold]
fn cap_lexed(
    text: &str,
    may_cap: &mut Option<bool>,
    diagnostics: &mut Vec<Diagnostic>,
    own: usize,
) -> usize {
    rulelint_parser::cap::cap_tail(text, may_cap, diagnostics, own)
}

/// The tokenizer; `BLOCKS`: read plain stretches 64 bytes at a time where the CPU allows
/// ([`block_step`]), which gives the same tokens as the byte loop (tested) for fewer
/// instructions: words, newlines and punctuation are read off bit masks.
fn lex<const BLOCKS: bool>(
    text: &str,
    from: usize,
    to: usize,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<Token>, Counts) {
    let mut out = Vec::with_capacity(to.min(text.len()).saturating_sub(from) / 5 + 1);
    rulelint_parser::huge_pages::advise(&out);
    let counts = lex_into::<BLOCKS>(text, from, to, &mut out, diagnostics);
    (out, counts)
}

/// [`tokenize_range`] appending to `out`: the windowed parse reads a large listing a window
/// at a time into one reused token buffer (`parse.rs`).
pub(crate) fn tokenize_range_into(
    text: &str,
    from: usize,
    to: usize,
    out: &mut Vec<Token>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Counts {
    lex_into::<true>(text, from, to, out, diagnostics)
}

/// [`lex`] into `out` (with AVX2 block masks where the CPU has it: half the instructions per
/// block).
fn lex_into<const BLOCKS: bool>(
    text: &str,
    from: usize,
    to: usize,
    out: &mut Vec<Token>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Counts {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if BLOCKS && crate::wide::has_wide_blocks() {
        // SAFETY: the CPU has AVX2, BMI1 and POPCNT (`has_wide_blocks`).
        return unsafe { lex_into_wide(text, from, to, out, diagnostics) };
    }
    // SAFETY: no AVX2 asked for.
    unsafe { lex_with::<BLOCKS, false>(text, from, to, out, diagnostics) }
}

/// [`lex_into`] with AVX2 masks, compiled for a CPU with AVX2, BMI1 and POPCNT.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "avx2,bmi1,popcnt")]
fn lex_into_wide(
    text: &str,
    from: usize,
    to: usize,
    out: &mut Vec<Token>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Counts {
    // SAFETY: this function is compiled for, and only entered on, a CPU with AVX2.
    unsafe { lex_with::<true, true>(text, from, to, out, diagnostics) }
}

/// The body of [`lex_into`]; `AVX2`: read the blocks' masks with AVX2.
///
/// # Safety
/// With `AVX2`, the CPU must have AVX2.
#[inline(always)]
unsafe fn lex_with<const BLOCKS: bool, const AVX2: bool>(
    text: &str,
    from: usize,
    to: usize,
    out: &mut Vec<Token>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Counts {
    let b = &text.as_bytes()[..to.min(text.len())];
    let mut counts = Counts::default();
    let mut i = from.min(b.len());
    // The lexer's own diagnostics are capped as they grow (`cap_lexed`), from here on.
    let own_diags = diagnostics.len();
    let mut next_cap = own_diags + rulelint_parser::cap::CAP_EVERY;
    let mut may_cap = None;
    // The kind is not stored (it follows from the first byte); the unit tests check that it
    // does for every token pushed.
    let push = |out: &mut Vec<Token>, kind: Kind, start: usize, end: usize| {
        #[cfg(test)]
        assert_eq!(
            KIND_OF_FIRST_BYTE[usize::from(b[start])],
            kind,
            "at {start}"
        );
        let _ = kind;
        out.push(Token {
            start: start as u32,
            end: end as u32,
        })
    };
    // Where the word the last block ended inside started: the next block goes on with it,
    // so that each byte's masks are computed once.
    let mut word_from: Option<usize> = None;
    while i < b.len() {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if BLOCKS && let Some(block) = b.get(i..).and_then(|r| r.first_chunk::<64>()) {
            // SAFETY: with `AVX2`, the caller checked that the CPU has it.
            match unsafe { block_step::<AVX2>(b, i, block, word_from, out, &mut counts) } {
                Some((next, carried)) => {
                    (i, word_from) = (next, carried);
                    continue;
                }
                // The carried word, if any, ended at `i`: its token is out.
                None => word_from = None,
            }
        }
        if let Some(start) = word_from.take() {
            // Fewer than 64 bytes are left: the byte loop ends the word.
            i = word_end(b, i);
            push(out, Kind::Word, start, i);
            continue;
        }
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {
                // Indentation comes in runs (three tabs and five blanks before each element
                // line): skip the run here rather than once per pass of the outer match.
                i += 1;
                while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | 0x0b | 0x0c) {
                    i += 1;
                }
            }
            b'\n' => {
                counts.lines += 1;
                push(out, Kind::Newline, i, i + 1);
                i += 1;
            }
            b'{' | b'}' | b';' | b',' => {
                let kind = match c {
                    b'{' => Kind::LBrace,
                    b'}' => Kind::RBrace,
                    b';' => Kind::Semi,
                    _ => Kind::Comma,
                };
                if c == b'{' && ends_its_line(b, i) {
                    counts.blocks += 1;
                }
                push(out, kind, i, i + 1);
                i += 1;
            }
            b'"' => {
                // Stop at the closing quote or the line's end, whichever comes first: scanning
                // to the line's end first would be quadratic on a long line of strings (JSON).
                let stop = b[i + 1..]
                    .iter()
                    .position(|&x| x == b'"' || x == b'\n')
                    .map_or(b.len(), |n| i + 1 + n);
                match (stop < b.len() && b[stop] == b'"').then_some(stop - i - 1) {
                    Some(q) => {
                        push(out, Kind::Str, i, i + 1 + q + 1);
                        i += q + 2;
                    }
                    None => {
                        let line_end = stop;
                        let end = trim_cr(b, i, line_end);
                        diagnostics.push(
                            Diagnostic::new(
                                &codes::UNTERMINATED_STRING,
                                Span::new(i, end),
                                "string is not closed on its line",
                            )
                            .with_label("this string has no closing `\"`")
                            .with_help("close the string with `\"` before the end of the line"),
                        );
                        if diagnostics.len() >= next_cap {
                            next_cap = cap_lexed(text, &mut may_cap, diagnostics, own_diags);
                        }
                        push(out, Kind::Str, i, end);
                        i = line_end;
                    }
                }
            }
            b'#' => {
                let line_end = memchr_newline(b, i);
                let end = trim_cr(b, i, line_end);
                if is_handle_comment(&b[i..end]) {
                    push(out, Kind::Handle, i, end);
                }
                i = line_end;
            }
            _ => {
                let start = i;
                i = word_end(b, i);
                push(out, Kind::Word, start, i);
            }
        }
    }
    if let Some(start) = word_from {
        // The last block ended the text inside a word.
        push(out, Kind::Word, start, b.len());
    }
    counts
}

/// Whether only blanks, then the line's end or a comment, follow the `{` at `i`.
fn ends_its_line(b: &[u8], i: usize) -> bool {
    let rest = b[i + 1..]
        .iter()
        .find(|&&x| !matches!(x, b' ' | b'\t' | b'\r'));
    matches!(rest, None | Some(b'\n' | b'#'))
}

/// Bit `i` of each mask stands for byte `i` of a 64-byte block.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
struct BlockMasks {
    /// Word bytes ([`WORD_BYTES`]).
    word: u64,
    /// Newlines and `{ } ; ,`: one-byte tokens.
    single: u64,
    /// `"` and `#`: a string or a comment, which the byte loop reads.
    special: u64,
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn block_masks(block: &[u8; 64]) -> BlockMasks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x,
        _mm_set1_epi8, _mm_sub_epi8,
    };
    let mut m = BlockMasks {
        word: 0,
        single: 0,
        special: 0,
    };
    let (chunks, _) = block.as_chunks::<16>();
    for (k, chunk) in chunks.iter().enumerate() {
        // Compiles to one unaligned 16-byte load.
        let x = u128::from_le_bytes(*chunk);
        let v = _mm_set_epi64x((x >> 64) as i64, x as i64);
        let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
        let bits = |hits: __m128i| u64::from(_mm_movemask_epi8(hits) as u16) << (16 * k);
        // `\t` `\n` `\x0b` `\x0c` `\r`: bytes 9..=13, as `min(v - 9, 4) == v - 9` (unsigned).
        let d = _mm_sub_epi8(v, _mm_set1_epi8(9));
        let controls = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(4)), d);
        let punct = _mm_or_si128(
            _mm_or_si128(eq(b'{'), eq(b'}')),
            _mm_or_si128(eq(b';'), eq(b',')),
        );
        let special = _mm_or_si128(eq(b'"'), eq(b'#'));
        let not_word = _mm_or_si128(
            _mm_or_si128(controls, eq(b' ')),
            _mm_or_si128(punct, special),
        );
        m.word |= !bits(not_word) & (0xffff << (16 * k));
        m.single |= bits(_mm_or_si128(eq(b'\n'), punct));
        m.special |= bits(special);
    }
    m
}

/// [`block_masks`] with AVX2: two 32-byte halves.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
unsafe fn block_masks_avx2(block: &[u8; 64]) -> BlockMasks {
    use crate::wide::{bits, eq, load};
    use std::arch::x86_64::{
        _mm256_cmpeq_epi8, _mm256_min_epu8, _mm256_or_si256, _mm256_set1_epi8, _mm256_sub_epi8,
    };
    let mut m = BlockMasks {
        word: 0,
        single: 0,
        special: 0,
    };
    for half in 0..2 {
        // SAFETY: the caller checked that the CPU has AVX2.
        unsafe {
            let v = load(block, half);
            // `\t` `\n` `\x0b` `\x0c` `\r`: bytes 9..=13, as in `block_masks`.
            let d = _mm256_sub_epi8(v, _mm256_set1_epi8(9));
            let controls = _mm256_cmpeq_epi8(_mm256_min_epu8(d, _mm256_set1_epi8(4)), d);
            let punct = _mm256_or_si256(
                _mm256_or_si256(eq(v, b'{'), eq(v, b'}')),
                _mm256_or_si256(eq(v, b';'), eq(v, b',')),
            );
            let special = _mm256_or_si256(eq(v, b'"'), eq(v, b'#'));
            let not_word = _mm256_or_si256(
                _mm256_or_si256(controls, eq(v, b' ')),
                _mm256_or_si256(punct, special),
            );
            m.word |= !bits(not_word, half) & (0xffff_ffff << (32 * half));
            m.single |= bits(_mm256_or_si256(eq(v, b'\n'), punct), half);
            m.special |= bits(special, half);
        }
    }
    m
}

/// Reads the tokens of the 64 bytes at `i` (`block`) up to the first `"` or `#`, from their
/// bit masks, and returns where to go on and, when the block ends inside a word, where that
/// word started (`carried` is that of the block before, whose word goes on at `i`); `None`
/// when `b[i]` is a `"` or `#` (the byte loop reads strings and comments), once the carried
/// word's token is out. Otherwise `i` is never inside a word: a word byte at `i` starts one.
///
/// # Safety
/// With `AVX2`, the CPU must have AVX2.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
unsafe fn block_step<const AVX2: bool>(
    b: &[u8],
    i: usize,
    block: &[u8; 64],
    carried: Option<usize>,
    out: &mut Vec<Token>,
    counts: &mut Counts,
) -> Option<(usize, Option<usize>)> {
    let m = if AVX2 {
        // SAFETY: the caller checked that the CPU has AVX2.
        unsafe { block_masks_avx2(block) }
    } else {
        // SAFETY: `block_masks` only needs SSE2, and this code is compiled only where SSE2 is
        // enabled (it is part of the x86_64 baseline).
        unsafe { block_masks(block) }
    };
    // At most 65 tokens: the carried word and one per byte. They are written into the spare
    // capacity and the length set once, rather than pushed one by one.
    out.reserve(65);
    let len = out.len();
    let spare = out.spare_capacity_mut();
    let mut written = 0;
    let mut put = |start: usize, end: usize| {
        spare[written].write(Token {
            start: start as u32,
            end: end as u32,
        });
        written += 1;
    };
    let mut word = m.word;
    if let Some(start) = carried {
        let run = (!m.word).trailing_zeros() as usize;
        if run == 64 {
            return Some((i + 64, carried));
        }
        put(start, i + run);
        // Its bytes start no word.
        word &= !0u64 << run;
    }
    let stop = m.special.trailing_zeros() as usize;
    let mut next = Some((i + stop, None));
    if stop == 0 {
        next = None;
    }
    let before = if stop == 64 { !0 } else { (1u64 << stop) - 1 };
    let mut starts = ((word & !(word << 1)) | m.single) & before;
    while starts != 0 {
        let k = starts.trailing_zeros() as usize;
        starts &= starts - 1;
        let at = i + k;
        if word >> k & 1 == 1 {
            let rest = !word >> k;
            if rest == 0 {
                // The word runs to the block's end (so no `"` or `#` is in it): the next
                // block goes on with it.
                next = Some((i + 64, Some(at)));
                break;
            }
            put(at, at + rest.trailing_zeros() as usize);
        } else {
            match block[k] {
                b'\n' => counts.lines += 1,
                b'{' if ends_its_line(b, at) => counts.blocks += 1,
                _ => {}
            }
            put(at, at + 1);
        }
    }
    // SAFETY: `put` initialised the first `written` slots of the spare capacity.
    unsafe { out.set_len(len + written) };
    next
}

/// Where the word starting at `i` ends: eight bytes at a time while they are all word
/// bytes, then byte by byte. Words are most of the text (chain names, addresses), and the
/// byte loop cost about eleven instructions per byte.
fn word_end(b: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        let x = u64::from_le_bytes(bytes);
        let stops = maybe_word_end(x);
        if stops == 0 {
            i += 8;
            continue;
        }
        // The lowest flagged byte is exact for every test below; a control byte other than
        // the blanks is flagged too but is a word byte: the byte loop settles it.
        i += (stops.trailing_zeros() / 8) as usize;
        break;
    }
    while i < b.len() && is_word_byte(b[i]) {
        i += 1;
    }
    i
}

/// The high bit of each byte of `x` that may end a word: below `!` (blanks, newlines and
/// other control bytes), or one of `{ } ; , " #`. Exact up to the lowest flagged byte.
fn maybe_word_end(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below = x.wrapping_sub(ONES * 0x21) & !x & HIGH;
    // Pairs one bit apart share a test: `"` 0x22 and `#` 0x23, `;` 0x3b and `{` 0x7b.
    let quote_or_hash = zero((x ^ (ONES * 0x22)) & (ONES * 0xfe));
    let semi_or_open = zero((x ^ (ONES * 0x3b)) & (ONES * 0xbf));
    let close = zero(x ^ (ONES * u64::from(b'}')));
    let comma = zero(x ^ (ONES * u64::from(b',')));
    below | quote_or_hash | semi_or_open | close | comma
}

fn memchr_newline(b: &[u8], from: usize) -> usize {
    b[from..]
        .iter()
        .position(|&x| x == b'\n')
        .map_or(b.len(), |p| from + p)
}

fn trim_cr(b: &[u8], start: usize, mut end: usize) -> usize {
    while end > start && matches!(b[end - 1], b'\r' | b' ' | b'\t') {
        end -= 1;
    }
    end
}

/// `# handle 42` (the form `nft -a` prints).
fn is_handle_comment(c: &[u8]) -> bool {
    handle_value(c).is_some()
}

/// The number of a `# handle N` comment.
pub(crate) fn handle_value(c: &[u8]) -> Option<u64> {
    let rest = c.strip_prefix(b"#")?;
    let rest = trim_start(rest).strip_prefix(b"handle")?;
    let digits = trim_start(rest);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) || digits.len() > 19 {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
    &s[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_strings_hold_a_bounded_number_of_diagnostics() {
        use rulelint_parser::cap;
        let text = "comment \"open\n".repeat(50_000);
        let mut d = Vec::new();
        tokenize(&text, &mut d);
        assert!(d.len() <= cap::CAP_EVERY + cap::MAX_PER_CODE + 1);
        let stands_for: usize = d.iter().map(|d| cap::left_out_count(d).unwrap_or(1)).sum();
        assert_eq!(stands_for, 50_000);
    }

    fn kinds(text: &str) -> Vec<(Kind, &str)> {
        let mut d = Vec::new();
        tokenize(text, &mut d)
            .into_iter()
            .map(|t| (t.kind(text), &text[t.start as usize..t.end as usize]))
            .collect()
    }

    #[test]
    fn words_punctuation_strings_and_handles() {
        use Kind::*;
        assert_eq!(
            kinds("table ip x { # handle 1\n\tcomment \"a b\"\n1.2.3.4 . tcp : goto a/b,c}"),
            vec![
                (Word, "table"),
                (Word, "ip"),
                (Word, "x"),
                (LBrace, "{"),
                (Handle, "# handle 1"),
                (Newline, "\n"),
                (Word, "comment"),
                (Str, "\"a b\""),
                (Newline, "\n"),
                (Word, "1.2.3.4"),
                (Word, "."),
                (Word, "tcp"),
                (Word, ":"),
                (Word, "goto"),
                (Word, "a/b"),
                (Comma, ","),
                (Word, "c"),
                (RBrace, "}"),
            ]
        );
        assert_eq!(kinds("# Warning: x\n"), vec![(Kind::Newline, "\n")]);
        assert_eq!(handle_value(b"# handle 42"), Some(42));
        assert_eq!(handle_value(b"# handles"), None);
    }

    #[test]
    fn word_end_agrees_with_the_byte_table() {
        // Every byte value at every offset of a 17-byte word run, and words at the text's end.
        for stop in 0..=255u8 {
            for at in 0..17 {
                let mut text = vec![b'a'; 17];
                text[at] = stop;
                for from in 0..=at {
                    let slow = (from..text.len())
                        .find(|&j| !is_word_byte(text[j]))
                        .unwrap_or(text.len());
                    assert_eq!(
                        word_end(&text, from),
                        slow,
                        "byte {stop} at {at} from {from}"
                    );
                }
            }
        }
        // Every pair of adjacent bytes: a stop's borrow must not hide or fake the next.
        for first in 0..=255u8 {
            for second in 0..=255u8 {
                let text = [b'a', b'a', first, second, b'a', b'a', b'a', b'a', b'a'];
                let slow = text
                    .iter()
                    .position(|&c| !is_word_byte(c))
                    .unwrap_or(text.len());
                assert_eq!(word_end(&text, 0), slow, "{first} then {second}");
            }
        }
        // Bytes above 0x80 and borrows across bytes: `\x21` after `\x00`, `\xff` runs.
        for text in [
            &b"\x00\x21\x21 x"[..],
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff,",
            b"\x80!{",
        ] {
            let slow = text
                .iter()
                .position(|&c| !is_word_byte(c))
                .unwrap_or(text.len());
            assert_eq!(word_end(text, 0), slow, "{text:?}");
        }
    }

    /// Every kind from its first byte: the lexer's pushes assert it (under `cfg(test)`) on a
    /// text with each kind, CRLF, a cut string, handles and other comments.
    #[test]
    fn kinds_follow_from_first_bytes() {
        let text = "table ip t { # handle 1\r\n\tset s { elements = { 1, 2 }; comment \"a#b\" }\n\
                    # other\n\"open ;x,\"y\" {}\n\u{e9}t\u{e9} @s";
        let toks = tokenize(text, &mut Vec::new());
        let kinds: Vec<Kind> = toks.iter().map(|t| t.kind(text)).collect();
        for kind in [
            Kind::Word,
            Kind::Str,
            Kind::LBrace,
            Kind::RBrace,
            Kind::Semi,
            Kind::Comma,
            Kind::Newline,
            Kind::Handle,
        ] {
            assert!(kinds.contains(&kind), "{kind:?} in {kinds:?}");
        }
        assert_eq!(std::mem::size_of::<Token>(), 8);
    }

    /// The 64-byte block path gives the byte loop's tokens, counts and diagnostics: on every
    /// byte value at every offset around block ends, on long words, strings and comments.
    #[test]
    fn blocks_give_the_byte_loops_tokens() {
        let check = |text: &str| {
            for from in [0, 1, 7, 63, 64, 65]
                .into_iter()
                .filter(|&f| f <= text.len())
            {
                if !text.is_char_boundary(from) {
                    continue;
                }
                let (mut d1, mut d2) = (Vec::new(), Vec::new());
                let (t1, c1) = lex::<false>(text, from, text.len(), &mut d1);
                let (t2, c2) = lex::<true>(text, from, text.len(), &mut d2);
                assert_eq!(t1, t2, "{text:?} from {from}");
                assert_eq!((c1.lines, c1.blocks), (c2.lines, c2.blocks), "{text:?}");
                assert_eq!(format!("{d1:?}"), format!("{d2:?}"), "{text:?}");
                // The SSE2 blocks, which `lex` leaves for AVX2 on a CPU that has it.
                let (mut t3, mut d3) = (Vec::new(), Vec::new());
                // SAFETY: no AVX2 asked for.
                let c3 =
                    unsafe { lex_with::<true, false>(text, from, text.len(), &mut t3, &mut d3) };
                assert_eq!(t1, t3, "{text:?} from {from}");
                assert_eq!((c1.lines, c1.blocks), (c3.lines, c3.blocks), "{text:?}");
                assert_eq!(format!("{d1:?}"), format!("{d3:?}"), "{text:?}");
            }
        };
        let base = "table ip kube-proxy { # handle 1\n\tchain x {\n\t\tip daddr . meta l4proto . th dport vmap @service-ips comment \"a#b\"\n\t\telements = { 10.0.0.1 . tcp . 80 : goto service-ABCDEFGHIJKLMNOP-ns/name:port, 10.0.0.2 }\r\n\t}\n}\n";
        check(base);
        check(&base.repeat(3));
        // Every byte value (as a char where it is not one) at every offset of a long text.
        for c in (0u8..=127).map(char::from).chain(['\u{e9}', '\u{20ac}']) {
            for at in (0..base.len()).step_by(5) {
                if !base.is_char_boundary(at) {
                    continue;
                }
                let mut t = String::from(&base[..at]);
                t.push(c);
                t.push_str(&base[at..]);
                check(&t);
            }
        }
        // Words longer than a block, across block ends, at the text's end; unclosed strings.
        for n in [1, 63, 64, 65, 127, 128, 200] {
            let w = "w".repeat(n);
            check(&format!("{w} {w}\n{w},{w}{{ }}\n\"{w}\n#{w}\n{w}"));
            check(&format!("  {w}\"unclosed {w}\n\t{w} # handle 5\n{w}"));
        }
    }

    #[test]
    fn unterminated_string_is_reported_and_ends_at_the_line() {
        let mut d = Vec::new();
        let toks = tokenize("comment \"abc\r\nx", &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, "RL156");
        assert_eq!(toks[1].kind("comment \"abc\r\nx"), Kind::Str);
        assert_eq!((toks[1].start, toks[1].end), (8, 12));
        assert_eq!(toks[3].kind("comment \"abc\r\nx"), Kind::Word);
    }
}
