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
//! The trees it builds are the ones [`super::TreeSeed`] builds for the same text: strings are
//! slices of the text, numbers are copied into the [`Strings`] store as serde_json would print
//! them back (the canonical integers it accepts print as written).

use super::{J, Strings};
use rulelint_parser::Span;

/// Nesting the plain reader follows; deeper values go to serde_json (limit 128).
const MAX_DEPTH: usize = 64;

/// An open array or object, with the key its next value belongs to.
enum Frame<'a> {
    Arr(Vec<J<'a>>),
    Obj(Vec<(&'a str, J<'a>)>, &'a str),
}

/// What a plain item holds: its kind (`"rule"`, `"chain"`, ...) and body, and the item's span.
pub(super) enum Item<'a> {
    /// `{"rule": {...}}`: the fields other than `expr` and `comment`, each statement with its
    /// span, and the comment with its span.
    Rule {
        head: J<'a>,
        exprs: Option<Vec<(Span, J<'a>)>>,
        comment: Option<(Span, J<'a>)>,
    },
    /// `{"chain": {...}}`, `{"table": {...}}`: the body.
    Body(J<'a>),
    /// `{"set": ..}`, `{"map": ..}`, `{"element": ..}`: the fields other than `elem`, and each
    /// element with its span.
    Elems {
        rest: J<'a>,
        elems: Option<Vec<(Span, J<'a>)>>,
    },
}

pub(super) struct Plain<'a, 'r> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    strings: &'a Strings,
    stack: &'r mut Stack<'a>,
}

/// Emptied containers kept for reuse past this many are freed.
const POOL: usize = 1024;
/// Containers grown past this many fields or items are freed rather than kept.
const POOL_CAPACITY: usize = 64;

/// The plain reader's stack, and the containers of read trees handed back with
/// [`Stack::recycle`] for the next items (a 5,000-Service node has millions of small objects:
/// reusing their vectors saves an allocation and a free each).
pub(super) struct Stack<'a> {
    frames: Vec<Frame<'a>>,
    objs: Vec<Vec<(&'a str, J<'a>)>>,
    arrs: Vec<Vec<J<'a>>>,
    /// Emptied statement lists (one a rule).
    lists: Vec<Vec<(Span, J<'a>)>>,
    work: Vec<J<'a>>,
}

impl<'a> Stack<'a> {
    pub(super) fn new() -> Self {
        Stack {
            frames: Vec::new(),
            objs: Vec::new(),
            arrs: Vec::new(),
            lists: Vec::new(),
            work: Vec::new(),
        }
    }

    /// Keeps an emptied statement list for reuse.
    pub(super) fn recycle_list(&mut self, mut list: Vec<(Span, J<'a>)>) {
        if self.lists.len() < POOL && list.capacity() <= POOL_CAPACITY {
            list.clear();
            self.lists.push(list);
        }
    }

    /// Takes a tree apart (without recursion) and keeps its emptied containers for reuse.
    pub(super) fn recycle(&mut self, j: J<'a>) {
        let mut work = std::mem::take(&mut self.work);
        work.push(j);
        while let Some(j) = work.pop() {
            match j {
                J::Obj(mut fields) => {
                    // A plain loop: `extend` over a filtered drain cost three times as much.
                    for (_, v) in fields.drain(..) {
                        if v.is_container() {
                            work.push(v);
                        }
                    }
                    if self.objs.len() < POOL && fields.capacity() <= POOL_CAPACITY {
                        self.objs.push(fields);
                    }
                }
                J::Arr(mut items) => {
                    for v in items.drain(..) {
                        if v.is_container() {
                            work.push(v);
                        }
                    }
                    if self.arrs.len() < POOL && items.capacity() <= POOL_CAPACITY {
                        self.arrs.push(items);
                    }
                }
                _ => {}
            }
        }
        self.work = work;
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
) -> Option<(&'a str, Item<'a>, Span)> {
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
/// `i` ends or stops being plain); `None` at the end of the text. Sixteen bytes at a time (most
/// strings of a ruleset end within them), then eight.
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
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
    fn ws(&mut self) {
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

    /// Any value, after blanks, with its own stack for nesting.
    fn value(&mut self) -> Option<J<'a>> {
        // Frames left by a value given up on are emptied (their containers are not reused).
        self.stack.frames.clear();
        loop {
            self.ws();
            let mut v = match *self.b.get(self.pos)? {
                b'{' => {
                    self.pos += 1;
                    if self.peek(b'}') {
                        J::Obj(Vec::new())
                    } else {
                        let key = self.key()?;
                        let fields = self.stack.objs.pop().unwrap_or_default();
                        self.open(Frame::Obj(fields, key))?;
                        continue;
                    }
                }
                b'[' => {
                    self.pos += 1;
                    if self.peek(b']') {
                        J::Arr(Vec::new())
                    } else {
                        let items = self.stack.arrs.pop().unwrap_or_default();
                        self.open(Frame::Arr(items))?;
                        continue;
                    }
                }
                b'"' => J::Str(self.string()?),
                b't' => self.word(b"true").map(|()| J::Bool(true))?,
                b'f' => self.word(b"false").map(|()| J::Bool(false))?,
                b'n' => self.word(b"null").map(|()| J::Null)?,
                b'-' | b'0'..=b'9' => J::Num(self.number()?),
                _ => return None,
            };
            // Hand the value to the open containers, closing those that end after it.
            loop {
                match self.stack.frames.last_mut() {
                    None => return Some(v),
                    Some(Frame::Arr(items)) => {
                        items.push(v);
                        self.ws();
                        match *self.b.get(self.pos)? {
                            b',' => {
                                self.pos += 1;
                                break;
                            }
                            b']' => {
                                self.pos += 1;
                                let Some(Frame::Arr(items)) = self.stack.frames.pop() else {
                                    return None;
                                };
                                v = J::Arr(items);
                            }
                            _ => return None,
                        }
                    }
                    Some(Frame::Obj(fields, key)) => {
                        fields.push((*key, v));
                        self.ws();
                        match *self.b.get(self.pos)? {
                            b',' => {
                                self.pos += 1;
                                let next = self.key()?;
                                if let Some(Frame::Obj(_, key)) = self.stack.frames.last_mut() {
                                    *key = next;
                                }
                                break;
                            }
                            b'}' => {
                                self.pos += 1;
                                let Some(Frame::Obj(fields, _)) = self.stack.frames.pop() else {
                                    return None;
                                };
                                v = J::Obj(fields);
                            }
                            _ => return None,
                        }
                    }
                }
            }
        }
    }

    fn open(&mut self, frame: Frame<'a>) -> Option<()> {
        if self.stack.frames.len() >= MAX_DEPTH {
            return None;
        }
        self.stack.frames.push(frame);
        Some(())
    }

    /// A value that must be an object.
    fn object(&mut self) -> Option<J<'a>> {
        self.ws();
        if self.b.get(self.pos) != Some(&b'{') {
            return None;
        }
        self.value()
    }

    /// `[v, ...]`, each value with its span (from its first byte to its last).
    fn spanned_list(&mut self) -> Option<Vec<(Span, J<'a>)>> {
        self.byte(b'[')?;
        let mut items = self.stack.lists.pop().unwrap_or_default();
        if self.peek(b']') {
            return Some(items);
        }
        loop {
            self.ws();
            let start = self.pos;
            let v = self.value()?;
            items.push((Span::new(start, self.pos), v));
            self.ws();
            match *self.b.get(self.pos)? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(items);
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

    fn rule(&mut self) -> Option<Item<'a>> {
        let mut head = self.stack.objs.pop().unwrap_or_default();
        let mut exprs = None;
        let mut comment = None;
        self.fields(|p, key| {
            match key {
                "expr" if exprs.is_none() => exprs = Some(p.spanned_list()?),
                "comment" if comment.is_none() => {
                    p.ws();
                    let start = p.pos;
                    let v = p.value()?;
                    comment = Some((Span::new(start, p.pos), v));
                }
                // A second `expr` or `comment`: the serde path decides.
                "expr" | "comment" => return None,
                _ => head.push((key, p.value()?)),
            }
            Some(())
        })?;
        Some(Item::Rule {
            head: J::Obj(head),
            exprs,
            comment,
        })
    }

    fn elems(&mut self) -> Option<Item<'a>> {
        let mut rest = self.stack.objs.pop().unwrap_or_default();
        let mut elems = None;
        self.fields(|p, key| {
            match key {
                "elem" if elems.is_none() => elems = Some(p.spanned_list()?),
                "elem" => return None,
                _ => rest.push((key, p.value()?)),
            }
            Some(())
        })?;
        Some(Item::Elems {
            rest: J::Obj(rest),
            elems,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::string_end;

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
                        }
                    }
                }
            }
        }
    }
}
