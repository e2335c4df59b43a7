//! Byte spans into the original text, and the line index that turns them into line and column.

use serde::Serialize;
use std::ops::Range;

/// A byte range `start..end` into the text that was parsed.
///
/// Spans are `u32` to keep the ruleset small; the parser refuses inputs of 4 GiB or more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from byte offsets. Offsets must fit in `u32` (the parser guarantees it).
    #[inline]
    pub fn new(start: usize, end: usize) -> Span {
        debug_assert!(start <= end);
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The span as a `Range<usize>`, ready to slice the source text.
    #[inline]
    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }

    /// Length in bytes.
    #[inline]
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// True when the span covers no byte.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// The smallest span covering `self` and `other`.
    #[inline]
    pub fn cover(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// Maps byte offsets to 1-based line and column numbers.
///
/// Built on demand when rendering: parsing and linting work with byte spans only. About 2 bytes
/// per line (issue 16: a dump of 10-byte lines paid 0.4x its size for 4-byte line starts): each
/// block of `BLOCK_LINES` lines keeps its first line's start in full and every line's start as
/// a 16-bit distance from it.
#[derive(Clone, Debug)]
pub struct LineIndex {
    /// Per block of `BLOCK_LINES` lines: where its first line starts.
    block_starts: Vec<u32>,
    /// Per line: its start minus its block's start, or [`WIDE`] when that takes more than 16
    /// bits (the start is then in `wide`).
    offsets: Vec<u16>,
    /// (line, start) of the lines whose offset is `WIDE`, in line order: only where lines are
    /// long, so a few per 64 KiB at most.
    wide: Vec<(u32, u32)>,
}

/// Lines per block of a [`LineIndex`].
const BLOCK_LINES: usize = 32;

/// The offset of a line that starts too far from its block's start for 16 bits.
const WIDE: u16 = u16::MAX;

/// A 1-based line and column; the column counts characters, not bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LineCol {
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl LineIndex {
    /// Indexes the line starts of `text`.
    pub fn new(text: &str) -> LineIndex {
        // Counted first, so that the index is allocated once at its size.
        let lines = bytecount::count(text.as_bytes(), b'\n') + 1;
        let mut index = LineIndex {
            block_starts: Vec::with_capacity(lines.div_ceil(BLOCK_LINES)),
            offsets: Vec::with_capacity(lines),
            wide: Vec::new(),
        };
        index.push(0);
        for newline in memchr::memchr_iter(b'\n', text.as_bytes()) {
            index.push((newline + 1) as u32);
        }
        index
    }

    /// Records the start of the next line.
    fn push(&mut self, start: u32) {
        let line = self.offsets.len();
        if line.is_multiple_of(BLOCK_LINES) {
            self.block_starts.push(start);
        }
        let block_start = self.block_starts[line / BLOCK_LINES];
        match u16::try_from(start - block_start) {
            Ok(offset) if offset != WIDE => self.offsets.push(offset),
            _ => {
                self.offsets.push(WIDE);
                self.wide.push((line as u32, start));
            }
        }
    }

    /// Where 0-based line `line` starts; `line` is below the number of lines.
    fn start_of(&self, line: usize) -> u32 {
        match self.offsets[line] {
            WIDE => {
                let at = self.wide.partition_point(|&(l, _)| (l as usize) < line);
                self.wide.get(at).map_or(0, |&(_, start)| start)
            }
            offset => self.block_starts[line / BLOCK_LINES] + offset as u32,
        }
    }

    /// The 1-based line holding byte `offset`.
    pub fn line(&self, offset: u32) -> u32 {
        // The last block starting at or before `offset`, then the last line in it that does.
        let block = self.block_starts.partition_point(|&s| s <= offset).max(1) - 1;
        let first = block * BLOCK_LINES;
        let end = (first + BLOCK_LINES).min(self.offsets.len());
        let (mut lo, mut hi) = (first + 1, end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.start_of(mid) <= offset {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo as u32
    }

    /// Byte offset where 1-based `line` starts (past the last line: where the last one starts).
    pub fn line_start(&self, line: u32) -> u32 {
        let line = (line.max(1) - 1) as usize;
        self.start_of(line.min(self.offsets.len() - 1))
    }

    /// Line and column of byte `offset` in `text` (the text this index was built from).
    pub fn line_col(&self, text: &str, offset: u32) -> LineCol {
        let line = self.line(offset);
        let start = self.line_start(line) as usize;
        let end = (offset as usize).min(text.len());
        let column = text
            .get(start..end)
            .map_or(end - start, |s| s.chars().count()) as u32
            + 1;
        LineCol { line, column }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_lines_and_characters() {
        let text = "ab\ncdé f\n\nx";
        let index = LineIndex::new(text);
        assert_eq!(index.line_col(text, 0), LineCol { line: 1, column: 1 });
        assert_eq!(index.line_col(text, 3), LineCol { line: 2, column: 1 });
        // 'é' is two bytes: the space after it is column 4.
        assert_eq!(index.line_col(text, 7), LineCol { line: 2, column: 4 });
        assert_eq!(index.line_col(text, 10), LineCol { line: 3, column: 1 });
        assert_eq!(index.line_col(text, 11), LineCol { line: 4, column: 1 });
    }

    /// Every offset's line and every line's start agree with a plain list of line starts, for
    /// lines short and long enough to leave 16 bits.
    #[test]
    fn compact_index_agrees_with_plain_line_starts() {
        let mut text = String::new();
        for i in 0..300usize {
            let len = match i % 7 {
                0 => 0,
                1 => 70_000,
                2 => 3,
                _ => i * 37 % 200,
            };
            text.extend(std::iter::repeat_n('x', len));
            text.push('\n');
        }
        text.push_str("tail");
        let index = LineIndex::new(&text);
        let starts: Vec<u32> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i as u32 + 1))
            .collect();
        assert!(
            !index.wide.is_empty(),
            "the long lines need the wide starts"
        );
        for (i, &start) in starts.iter().enumerate() {
            assert_eq!(index.line_start(i as u32 + 1), start);
        }
        let mut line = 0;
        for offset in 0..=text.len() as u32 {
            while line + 1 < starts.len() && starts[line + 1] <= offset {
                line += 1;
            }
            assert_eq!(index.line(offset), line as u32 + 1, "offset {offset}");
        }
        assert_eq!(index.line_start(10_000), *starts.last().unwrap());
    }
}
