//! The rule lines of a large dump's later part split into words and classified into tokens on a
//! second thread while the parser reads the first part (issue 19): the parser then only copies
//! those tokens for each such line instead of lexing it.
//!
//! What is read here depends on the line's bytes alone ([`lexer::scan_line_words`],
//! [`rule_tokens`]), and a line's result is used only when the parser reaches a line that starts
//! at the same offset and would read it the same way (a plain `-A CHAIN ...` line), so the
//! parse is the same whatever the cut: the parser's state (open table, chains, fragments) is
//! never guessed. The address family, the one piece of state [`rule_tokens`] reads, is kept per
//! line and applied in order.

use crate::diagnostic::Diagnostic;
use crate::lexer;
use crate::model::{Family, Rule, Token};
use crate::rule_tokens::rule_tokens;
use crate::span::Span;

/// Below this many bytes a dump is parsed on one thread: a second one costs more to start
/// than it saves.
pub(crate) const MIN_BYTES: usize = 1 << 20;

/// Where the second thread starts, as a fraction of the text: it lexes about three fifths
/// of the text in less time than the parser takes to read the first two fifths in full, so
/// the parser rarely waits for it.
const CUT_NUMERATOR: usize = 2;
const CUT_DENOMINATOR: usize = 5;

/// The default cut of `text`: the start of the first line after two fifths of it.
pub(crate) fn default_cut(text: &str) -> usize {
    let guess = text.len() / CUT_DENOMINATOR * CUT_NUMERATOR;
    line_start_from(text.as_bytes(), guess)
}

/// The first line start at or after `at` (`at` itself when it follows a newline).
fn line_start_from(bytes: &[u8], at: usize) -> usize {
    if at == 0 || at >= bytes.len() {
        return at.min(bytes.len());
    }
    if bytes[at - 1] == b'\n' {
        return at;
    }
    memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i + 1)
}

/// One plain `-A CHAIN ...` line read ahead. 32 bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Line {
    /// Where the line (its `-A`) starts.
    pub(crate) start: u32,
    /// Where the next line starts (after the newline).
    pub(crate) next: u32,
    /// The end of the rule: the end of its last word.
    pub(crate) end: u32,
    /// The chain name's word.
    pub(crate) chain: Span,
    /// The end of its tokens in [`Prelexed::tokens`]; they start where the previous line's end.
    pub(crate) tokens_end: u32,
    /// The target token's index among the line's tokens, or `Rule::NO_TARGET`.
    pub(crate) target: u32,
    /// The end of its diagnostics in [`Prelexed::diags`], as `tokens_end`.
    pub(crate) diags_end: u32,
}

/// The later part's plain rule lines, read ahead, in text order.
#[derive(Debug, Default)]
pub(crate) struct Prelexed {
    lines: Vec<Line>,
    /// The family the first `-s`/`-d` address of each line notes, by line: 0 none, 1 IPv4,
    /// 2 IPv6.
    families: Vec<u8>,
    tokens: Vec<Token>,
    diags: Vec<Diagnostic>,
    /// The next line the parser may ask for.
    cursor: usize,
}

/// One line handed to the parser: its place, its tokens (target index relative to them), its
/// diagnostics and the family its addresses note.
pub(crate) struct Taken<'p> {
    pub(crate) line: Line,
    pub(crate) tokens: &'p [Token],
    pub(crate) diags: &'p [Diagnostic],
    pub(crate) family: Option<Family>,
}

impl Prelexed {
    /// Reads every plain `-A CHAIN ...` line of `src` from `from` (a line start) to the end.
    pub(crate) fn read(src: &str, from: usize) -> Prelexed {
        let bytes = src.as_bytes();
        let mut out = Prelexed::default();
        // About one rule line per 110 bytes in a kube-proxy dump, 9 tokens each.
        let rest = bytes.len().saturating_sub(from);
        out.lines.reserve(rest / 128);
        out.families.reserve(rest / 128);
        out.tokens.reserve(rest / 12);
        let mut words: Vec<Span> = Vec::with_capacity(64);
        let mut pos = from;
        // What is read ahead is held until the parser copies it: at most half the text's size,
        // so that the parse's peak memory stays below what the lints' takes; the parser reads
        // the lines past that itself.
        let budget = bytes.len() / 2;
        while pos < bytes.len() && out.held_bytes() < budget {
            if let Some(next) = out.read_line(src, pos, &mut words) {
                pos = next;
                continue;
            }
            // Not a plain rule line: the parser reads it itself.
            pos = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i + 1);
        }
        out
    }

    /// The bytes held: lines, families and tokens.
    fn held_bytes(&self) -> usize {
        self.lines.len() * (size_of::<Line>() + 1) + self.tokens.len() * size_of::<Token>()
    }

    /// Reads the line at `start` if it is a plain `-A CHAIN ...` rule line that the lexer of the
    /// common line splits, returning where the next line starts. A rule that is only its jump
    /// (`-A C1 -j C2`) is left to the parser: it keeps no token for it, and reads it as fast as
    /// it would copy it.
    fn read_line(&mut self, src: &str, start: usize, words: &mut Vec<Span>) -> Option<usize> {
        let bytes = src.as_bytes();
        if !bytes[start..].starts_with(b"-A") && !bytes[start..].starts_with(b"--append") {
            return None;
        }
        words.clear();
        let newline = lexer::scan_line_words(bytes, start, words)?;
        let [verb, chain, ..] = words[..] else {
            return None;
        };
        if !matches!(&src[verb.range()], "-A" | "--append")
            || (words.len() == 4 && matches!(&src[words[2].range()], "-j" | "-g"))
        {
            return None;
        }
        let end = words.last().map_or(start, |w| w.end as usize);
        let mut family = None;
        let (first, target) = rule_tokens(
            src,
            &words[2..],
            &mut self.tokens,
            &mut self.diags,
            &mut family,
        );
        let target = if target == Rule::NO_TARGET {
            Rule::NO_TARGET
        } else {
            target - first
        };
        let next = (newline + 1).min(bytes.len());
        self.lines.push(Line {
            start: start as u32,
            next: next as u32,
            end: end as u32,
            chain,
            tokens_end: self.tokens.len() as u32,
            target,
            diags_end: self.diags.len() as u32,
        });
        self.families.push(match family {
            None => 0,
            Some(Family::Ipv4) => 1,
            Some(Family::Ipv6) => 2,
        });
        Some(next)
    }

    /// The line read ahead that starts at `pos`, if any. Lines before `pos` are passed over for
    /// good: the parser reads forward only.
    pub(crate) fn take(&mut self, pos: usize) -> Option<Taken<'_>> {
        let pos = u32::try_from(pos).ok()?;
        while self.lines.get(self.cursor).is_some_and(|l| l.start < pos) {
            self.cursor += 1;
        }
        let i = self.cursor;
        let line = *self.lines.get(i).filter(|l| l.start == pos)?;
        self.cursor += 1;
        let (tokens_start, diags_start) = match i.checked_sub(1) {
            Some(p) => (self.lines[p].tokens_end, self.lines[p].diags_end),
            None => (0, 0),
        };
        Some(Taken {
            line,
            tokens: &self.tokens[tokens_start as usize..line.tokens_end as usize],
            diags: &self.diags[diags_start as usize..line.diags_end as usize],
            family: match self.families[i] {
                1 => Some(Family::Ipv4),
                2 => Some(Family::Ipv6),
                _ => None,
            },
        })
    }
}
