//! Line numbers of the few places a trace prints, counted on demand.
//!
//! A [`LineIndex`] of a 250k-rule dump reads all of its 28 MB and stores a start per line: more
//! than the whole trace costs. A trace prints a dozen lines, so each is counted from the nearest
//! place already known (a SIMD newline count, no allocation per line), and remembered. Should
//! the counting ever read more than twice the text (many steps far apart), the full index is
//! built once and answers from then on, so the cost stays bounded by a few passes.

use rulelint_parser::LineIndex;
use std::sync::{Mutex, OnceLock};

/// Counting beyond this many times the text's length switches to a full [`LineIndex`].
const COUNT_BUDGET_TEXTS: usize = 2;

/// A long count remembers where it was every this many bytes (a megabyte: a dump of 28 MB
/// keeps 28 places).
const STRIDE: u32 = 1 << 20;

/// 1-based line numbers of byte offsets of one text, counted lazily.
#[derive(Debug)]
pub(crate) struct Lines<'a> {
    text: &'a str,
    /// Known (offset, line) pairs, sorted by offset; starts with (0, 1).
    known: Mutex<Known>,
    full: OnceLock<LineIndex>,
    /// Bytes counted before the full index is built instead.
    budget: usize,
    /// A long count remembers where it was every this many bytes.
    stride: u32,
}

#[derive(Debug)]
struct Known {
    points: Vec<(u32, u32)>,
    counted: usize,
}

impl<'a> Lines<'a> {
    /// Nothing counted yet.
    pub(crate) fn new(text: &'a str) -> Lines<'a> {
        Lines::with_limits(text, COUNT_BUDGET_TEXTS.saturating_mul(text.len()), STRIDE)
    }

    fn with_limits(text: &'a str, budget: usize, stride: u32) -> Lines<'a> {
        Lines {
            budget,
            stride: stride.max(1),
            text,
            known: Mutex::new(Known {
                points: vec![(0, 1)],
                counted: 0,
            }),
            full: OnceLock::new(),
        }
    }

    /// The 1-based line holding byte `offset` (as [`LineIndex::line`]).
    pub(crate) fn line(&self, offset: u32) -> u32 {
        if let Some(full) = self.full.get() {
            return full.line(offset);
        }
        let bytes = self.text.as_bytes();
        let offset = offset.min(bytes.len() as u32);
        // A poisoned lock only means another thread panicked while counting: the points it
        // holds are still right, each was inserted whole.
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let i = known.points.partition_point(|&(o, _)| o <= offset);
        // points[0] is (0, 1), so i >= 1.
        let (below, below_line) = known.points[i - 1];
        let stride = self.stride;
        // Counted in steps of `stride`, each step's end remembered: a later offset between
        // two far places is then near one.
        let mut new_points = Vec::new();
        let line = match known.points.get(i) {
            Some(&(above, above_line)) if above - offset < offset - below => {
                let (mut at, mut line) = (above, above_line);
                while at - offset > stride {
                    line -= newlines(&bytes[(at - stride) as usize..at as usize]);
                    at -= stride;
                    new_points.push((at, line));
                }
                known.counted += (above - offset) as usize;
                line - newlines(&bytes[offset as usize..at as usize])
            }
            _ => {
                let (mut at, mut line) = (below, below_line);
                while offset - at > stride {
                    line += newlines(&bytes[at as usize..(at + stride) as usize]);
                    at += stride;
                    new_points.push((at, line));
                }
                known.counted += (offset - below) as usize;
                line + newlines(&bytes[at as usize..offset as usize])
            }
        };
        if known.counted > self.budget {
            drop(known);
            return self
                .full
                .get_or_init(|| LineIndex::new(self.text))
                .line(offset);
        }
        new_points.push((offset, line));
        known.points.extend(new_points);
        known.points.sort_unstable_by_key(|&(o, _)| o);
        known.points.dedup_by_key(|&mut (o, _)| o);
        line
    }
}

fn newlines(bytes: &[u8]) -> u32 {
    memchr::memchr_iter(b'\n', bytes).count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_line_index_in_any_order() {
        let text = "a\nbb\n\nccc\r\nd\n\ne";
        let index = LineIndex::new(text);
        let offsets: Vec<u32> = (0..=text.len() as u32).collect();
        // Forwards, backwards and from the middle out: each answer equals the full index's.
        for order in [
            offsets.clone(),
            offsets.iter().rev().copied().collect::<Vec<_>>(),
            offsets
                .iter()
                .map(|&o| (o + 7) % (text.len() as u32 + 1))
                .collect(),
        ] {
            // Counted in one go, and in steps of a few bytes that leave places behind.
            for stride in [STRIDE, 3, 1] {
                let lines = Lines::with_limits(text, usize::MAX, stride);
                for &o in &order {
                    assert_eq!(lines.line(o), index.line(o), "offset {o}, stride {stride}");
                }
            }
        }
    }

    #[test]
    fn switches_to_the_full_index_past_the_budget() {
        let text = "x\n".repeat(1000);
        let index = LineIndex::new(&text);
        let lines = Lines::with_limits(&text, 1000, STRIDE);
        // Far apart and alternating: the counts add up past the budget.
        for k in 0..20u32 {
            let o = if k % 2 == 0 { 1999 - k } else { k };
            assert_eq!(lines.line(o), index.line(o));
        }
        assert!(lines.full.get().is_some());
        assert_eq!(lines.line(1001), index.line(1001));
    }
}
