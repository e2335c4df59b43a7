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
/// Built on demand when rendering: parsing and linting work with byte spans only.
#[derive(Clone, Debug)]
pub struct LineIndex {
    line_starts: Vec<u32>,
}

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
        let mut line_starts = Vec::with_capacity(text.len() / 64 + 1);
        line_starts.push(0);
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| (i + 1) as u32));
        LineIndex { line_starts }
    }

    /// The 1-based line holding byte `offset`.
    pub fn line(&self, offset: u32) -> u32 {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }

    /// Byte offset where 1-based `line` starts.
    pub fn line_start(&self, line: u32) -> u32 {
        self.line_starts[(line.max(1) - 1) as usize]
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
}
