//! A strict reader for the plain JSON `nft -j list ruleset` prints, used before serde_json.
//!
//! It reads one item of the `nftables` array in a single pass, with no escapes in strings, only
//! integers of up to 18 digits and at most [`MAX_DEPTH`] levels of nesting. What it returns is
//! valid JSON by construction (it refuses anything the JSON grammar does not allow), so
//! serde_json would read the same values; whenever it meets anything else (an escape, a
//! fraction, `-0`, deep nesting, a duplicate `expr`, text that is not JSON) it answers `None`
//! and the caller reads the item with serde_json, which gives the diagnostics. It keeps its own
//! stack: nesting never becomes recursion.
//!
//! The tapes it writes are the ones [`super::tape::TreeSeed`] writes for the same text:
//! strings are slices of the text, numbers are copied into the [`Strings`] store as serde_json
//! would print them back (the canonical integers it accepts print as written).

use super::Strings;
use super::tape::{Node, Val, close, open};
use rulelint_parser::Span;

/// Nesting the plain reader follows; deeper values go to serde_json (limit 128).
const MAX_DEPTH: usize = 64;

/// What a plain item holds, on the [`Stack`]'s tape: its kind (`"rule"`, `"chain"`, ...) and
/// body, and the item's span. Statements and elements are listed with their spans in
/// [`Stack::list`].
pub(super) enum Item {
    /// `{"rule": {...}}`: the body (its `expr` array holds the statements listed), and the
    /// comment's index with its span.
    Rule {
        head: usize,
        comment: Option<(Span, usize)>,
    },
    /// `{"chain": {...}}`: the body.
    Body(usize),
    /// `{"set": ..}`, `{"map": ..}`, `{"element": ..}`: the body (its `elem` array holds the
    /// elements listed), and whether it has an `elem`.
    Elems { rest: usize, elems: bool },
}

pub(super) struct Plain<'a, 'r> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    strings: &'a Strings,
    stack: &'r mut Stack<'a>,
}

/// The plain reader's tape and stack, kept from item to item (a 5,000-Service node has millions
/// of small objects: one tape reused means no allocation per object).
pub(super) struct Stack<'a> {
    /// The open containers' indices on the tape.
    frames: Vec<usize>,
    /// The item read last.
    pub(super) tape: Vec<Node<'a>>,
    /// The statements or elements of the item read last: each one's span and index.
    pub(super) list: Vec<(Span, usize)>,
}

impl<'a> Stack<'a> {
    pub(super) fn new() -> Self {
        Stack {
            frames: Vec::new(),
            tape: Vec::new(),
            list: Vec::new(),
        }
    }
}

/// Reads the item of the `nftables` array at `start` when it is a plain `{"rule": ..}`,
/// `{"chain": ..}`, `{"set": ..}`, `{"map": ..}` or `{"element": ..}` object; `None` for anything
/// else (then read with serde_json). Returns the kind, what was read and the item's span.
pub(super) fn read_item<'a>(
    text: &'a str,
    start: usize,
    strings: &'a Strings,
    stack: &mut Stack<'a>,
) -> Option<(&'a str, Item, Span)> {
    stack.tape.clear();
    stack.list.clear();
    let mut p = Plain {
        text,
        b: text.as_bytes(),
        pos: start,
        strings,
        stack,
    };
    p.byte(b'{')?;
    let kind = p.key()?;
    let item = match kind {
        "rule" => p.rule()?,
        "chain" => Item::Body(p.object()?),
        "set" | "map" | "element" => p.elems()?,
        _ => return None,
    };
    // One key only: `{"rule": .., "x": 1}` is read (and reported) by the serde path.
    p.byte(b'}')?;
    Some((kind, item, Span::new(start, p.pos)))
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `v` that is zero (exact for the lowest such byte; bytes above it
/// may be flagged wrongly).
#[inline]
fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v & HIGHS
}

/// The high bit of each byte of `v` that is `"`, `\\` or a control character (exact for the
/// lowest such byte).
#[inline]
fn stop_bytes(v: u64) -> u64 {
    zero_bytes(v ^ (ONES * u64::from(b'"')))
        | zero_bytes(v ^ (ONES * u64::from(b'\\')))
        | (v.wrapping_sub(ONES * 0x20) & !v & HIGHS)
}

/// The first `"`, `\\` or control character at or after `i` (where a string that starts before
/// `i` ends or stops being plain); `None` at the end of the text.
#[inline]
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    // SAFETY: `string_end_sse2` only needs SSE2, and this code is compiled only where SSE2 is
    // enabled (it is part of the x86_64 baseline), as in the parser's `byte_masks`.
    return unsafe { string_end_sse2(b, i) };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    return string_end_swar(b, i);
}

/// [`string_end`] with SSE2 (part of every x86-64): sixteen bytes in a handful of instructions,
/// a quarter of what the word-at-a-time search takes (strings are most of a JSON ruleset's
/// bytes). The bytes are loaded as two words, so no pointer is read.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn string_end_sse2(b: &[u8], mut i: usize) -> Option<usize> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x,
        _mm_set1_epi8,
    };
    let quote = _mm_set1_epi8(b'"' as i8);
    let backslash = _mm_set1_epi8(b'\\' as i8);
    let control = _mm_set1_epi8(0x1f);
    while let Some(chunk) = b.get(i..).and_then(<[u8]>::first_chunk::<16>) {
        // Compiles to one unaligned 16-byte load.
        let x = u128::from_le_bytes(*chunk);
        let v = _mm_set_epi64x((x >> 64) as i64, x as i64);
        // `min(v, 0x1f) == v`: the bytes at or below 0x1f, compared unsigned.
        let stops = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
            _mm_cmpeq_epi8(_mm_min_epu8(v, control), v),
        );
        let mask = _mm_movemask_epi8(stops) as u32;
        if mask != 0 {
            return Some(i + mask.trailing_zeros() as usize);
        }
        i += 16;
    }
    b.get(i..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|k| i + k)
}

/// [`string_end`] a word at a time: sixteen bytes at a time (most strings of a ruleset end
/// within them), then eight.
#[cfg_attr(
    all(target_arch = "x86_64", target_feature = "sse2", not(test)),
    allow(dead_code)
)]
fn string_end_swar(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(chunk) = b.get(i..i + 16) {
        let lo = stop_bytes(u64::from_le_bytes(chunk.get(..8)?.try_into().ok()?));
        let hi = stop_bytes(u64::from_le_bytes(chunk.get(8..)?.try_into().ok()?));
        if lo | hi != 0 {
            // Each word is exact for its own lowest hit: `hi` counts only when `lo` has none.
            let at = if lo != 0 {
                lo.trailing_zeros() / 8
            } else {
                8 + hi.trailing_zeros() / 8
            };
            return Some(i + at as usize);
        }
        i += 16;
    }
    while let Some(chunk) = b.get(i..i + 8) {
        let hits = stop_bytes(u64::from_le_bytes(chunk.try_into().ok()?));
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b.get(i..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|k| i + k)
}

impl<'a> Plain<'a, '_> {
    #[inline]
    fn ws(&mut self) {
        // Most calls meet a byte that is no blank (or one blank, as `nft -j` writes `": "`).
        if self.b.get(self.pos).is_some_and(|&c| c > b' ') {
            return;
        }
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.pos) {
            self.pos += 1;
        }
    }

    /// Blanks, then `c`.
    fn byte(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.pos) == Some(&c)).then(|| self.pos += 1)
    }

    /// Blanks, then `c` when it is next (consumed).
    fn peek(&mut self, c: u8) -> bool {
        self.ws();
        let hit = self.b.get(self.pos) == Some(&c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    /// A string without escapes or control characters, at `pos` (its `"`).
    fn string(&mut self) -> Option<&'a str> {
        if self.b.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos + 1;
        let i = string_end(self.b, start)?;
        if self.b[i] != b'"' {
            return None;
        }
        self.pos = i + 1;
        // `"` is ASCII: both ends are character boundaries.
        self.text.get(start..i)
    }

    /// `"key":`
    fn key(&mut self) -> Option<&'a str> {
        self.ws();
        let k = self.string()?;
        self.byte(b':')?;
        Some(k)
    }

    /// An integer of up to 18 digits, without a leading zero, fraction or exponent, and not
    /// `-0` (serde_json prints those back differently, or they are not JSON).
    fn number(&mut self) -> Option<&'a str> {
        let start = self.pos;
        let mut i = start;
        if self.b.get(i) == Some(&b'-') {
            i += 1;
        }
        let digits = i;
        while self.b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let n = i - digits;
        if n == 0 || n > 18 || (self.b[digits] == b'0' && (n > 1 || digits > start)) {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.b.get(i) {
            return None;
        }
        self.pos = i;
        Some(self.strings.alloc(&self.text[start..i]))
    }

    fn word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.pos + word.len();
        (self.b.get(self.pos..end) == Some(word)).then(|| self.pos = end)
    }

    fn push(&mut self, key: &'a str, val: Val<'a>) {
        self.stack.tape.push(Node { key, val });
    }

    /// Any value, after blanks, onto the tape under `key`, with its own stack for nesting;
    /// returns its index.
    fn value(&mut self, key: &'a str) -> Option<usize> {
        let root = self.stack.tape.len();
        // Frames left by a value given up on are dropped.
        self.stack.frames.clear();
        let mut key = key;
        loop {
            self.ws();
            match *self.b.get(self.pos)? {
                c @ (b'{' | b'[') => {
                    self.pos += 1;
                    let object = c == b'{';
                    let at = open(&mut self.stack.tape, key, object);
                    if !self.peek(if object { b'}' } else { b']' }) {
                        if self.stack.frames.len() >= MAX_DEPTH {
                            return None;
                        }
                        self.stack.frames.push(at);
                        key = if object { self.key()? } else { "" };
                        continue;
                    }
                }
                b'"' => {
                    let s = self.string()?;
                    self.push(key, Val::Str(s));
                }
                b't' => {
                    self.word(b"true")?;
                    self.push(key, Val::Bool(true));
                }
                b'f' => {
                    self.word(b"false")?;
                    self.push(key, Val::Bool(false));
                }
                b'n' => {
                    self.word(b"null")?;
                    self.push(key, Val::Null);
                }
                b'-' | b'0'..=b'9' => {
                    let n = self.number()?;
                    self.push(key, Val::Num(n));
                }
                _ => return None,
            }
            // A value is complete: close the containers that end after it.
            loop {
                let Some(&at) = self.stack.frames.last() else {
                    return Some(root);
                };
                let object = matches!(self.stack.tape.get(at)?.val, Val::Obj(_));
                self.ws();
                match (*self.b.get(self.pos)?, object) {
                    (b',', _) => {
                        self.pos += 1;
                        key = if object { self.key()? } else { "" };
                        break;
                    }
                    (b']', false) | (b'}', true) => {
                        self.pos += 1;
                        self.stack.frames.pop();
                        close(&mut self.stack.tape, at);
                    }
                    _ => return None,
                }
            }
        }
    }

    /// A value that must be an object.
    fn object(&mut self) -> Option<usize> {
        self.ws();
        if self.b.get(self.pos) != Some(&b'{') {
            return None;
        }
        self.value("")
    }

    /// `[v, ...]` under `key`, each value listed with its span (from its first byte to its
    /// last).
    fn spanned_list(&mut self, key: &'a str) -> Option<()> {
        self.byte(b'[')?;
        let at = open(&mut self.stack.tape, key, false);
        if self.peek(b']') {
            return Some(());
        }
        loop {
            self.ws();
            let start = self.pos;
            let v = self.value("")?;
            self.stack.list.push((Span::new(start, self.pos), v));
            self.ws();
            match *self.b.get(self.pos)? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    close(&mut self.stack.tape, at);
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The fields of an object body, calling `field` for each key; `field` reads the value
    /// and returns `None` to give up.
    fn fields(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.byte(b'{')?;
        if self.peek(b'}') {
            return Some(());
        }
        loop {
            let key = self.key()?;
            field(self, key)?;
            self.ws();
            match *self.b.get(self.pos)? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn rule(&mut self) -> Option<Item> {
        let head = open(&mut self.stack.tape, "", true);
        let mut exprs = false;
        let mut comment = None;
        self.fields(|p, key| {
            match key {
                "expr" if !exprs => {
                    exprs = true;
                    p.spanned_list(key)?;
                }
                "comment" if comment.is_none() => {
                    p.ws();
                    let start = p.pos;
                    let v = p.value(key)?;
                    comment = Some((Span::new(start, p.pos), v));
                }
                // A second `expr` or `comment`: the serde path decides.
                "expr" | "comment" => return None,
                _ => {
                    p.value(key)?;
                }
            }
            Some(())
        })?;
        close(&mut self.stack.tape, head);
        Some(Item::Rule { head, comment })
    }

    fn elems(&mut self) -> Option<Item> {
        let rest = open(&mut self.stack.tape, "", true);
        let mut elems = false;
        self.fields(|p, key| {
            match key {
                "elem" if !elems => {
                    elems = true;
                    p.spanned_list(key)?;
                }
                "elem" => return None,
                _ => {
                    p.value(key)?;
                }
            }
            Some(())
        })?;
        close(&mut self.stack.tape, rest);
        Some(Item::Elems { rest, elems })
    }
}

#[cfg(test)]
mod tests {
    use super::{string_end, string_end_swar};

    /// `string_end` finds what a byte-at-a-time search finds, at every offset of texts with the
    /// stop bytes at every place of an eight-byte word (and bytes above 0x7f beside them).
    #[test]
    fn string_end_agrees_with_a_byte_search() {
        let fill = [b'a', 0x7f, 0x80, 0xff, b' ', b'!', b'#', b'[', b']'];
        for stop in [b'"', b'\\', 0x00, 0x1f, 0x0a] {
            for len in 0..40 {
                for at in 0..=len {
                    for f in fill {
                        let mut text = vec![f; len];
                        if at < len {
                            text[at] = stop;
                        }
                        for from in 0..=len {
                            let reference = text[from..]
                                .iter()
                                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                                .map(|k| from + k);
                            assert_eq!(string_end(&text, from), reference, "{text:?} from {from}");
                            assert_eq!(
                                string_end_swar(&text, from),
                                reference,
                                "{text:?} from {from}"
                            );
                        }
                    }
                }
            }
        }
    }
}
