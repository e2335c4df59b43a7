//! Prefixed pastes: a dump quoted in Markdown or e-mail (`> ` on every line), copied from a CI
//! or test log (`# `, `+ `), or from `kubectl logs --timestamps` or a CRI log file (an RFC 3339
//! timestamp, then `stdout F `). The prefix is decided once, from the lines of the first 64 KiB
//! that look like a dump once it is read past; the parser then skips it at the start of each
//! line, so every span still points into the original text.
//!
//! Detection costs nothing on a normal dump: it runs only when the first line that is neither
//! blank nor a `#` comment is not already dump-shaped.

/// A prefix pattern shared by the lines of a paste. The text of the prefix may differ from line
/// to line (timestamps, `>` or `>>`), its shape does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prefix {
    /// `> `, `>> `, `> > `: Markdown and e-mail quotes.
    Quote,
    /// `# `: a log or test output that comments every line.
    Hash,
    /// `+ `, `++ `: shell trace (`set -x`) or CI output.
    Plus,
    /// `2024-05-02T10:11:12.123456789Z ` with an optional `stdout F ` (CRI log files,
    /// `kubectl logs --timestamps`). Entries of the `stderr` stream are read as blank lines.
    Timestamp,
}

const ALL: [Prefix; 4] = [Prefix::Quote, Prefix::Hash, Prefix::Plus, Prefix::Timestamp];

/// How much of the text detection looks at.
const WINDOW: usize = 64 * 1024;

impl Prefix {
    /// What the prefix is, for the diagnostic.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Prefix::Quote => "`>` (a quoted paste)",
            Prefix::Hash => "`#` (a log or test output)",
            Prefix::Plus => "`+` (a shell trace or CI log)",
            Prefix::Timestamp => "a log timestamp (`kubectl logs`, a container runtime log)",
        }
    }

    /// The length of this prefix at the start of `line` (a line without its line break, leading
    /// blanks included), when the line has it. A `#` prefix is only read past when the rest
    /// of the line is dump-shaped, so that the paste's own comments stay comments.
    pub(crate) fn strip(self, line: &[u8]) -> Option<usize> {
        let n = self.len(line)?;
        if self == Prefix::Hash && !is_dump_shaped(&line[n..]) {
            return None;
        }
        Some(n)
    }

    fn len(self, line: &[u8]) -> Option<usize> {
        let mut i = skip_blanks(line, 0);
        match self {
            Prefix::Quote => {
                if line.get(i) != Some(&b'>') {
                    return None;
                }
                while matches!(line.get(i), Some(b'>' | b' ' | b'\t')) {
                    i += 1;
                }
                Some(i)
            }
            Prefix::Plus => {
                if line.get(i) != Some(&b'+') {
                    return None;
                }
                while line.get(i) == Some(&b'+') {
                    i += 1;
                }
                // `+x` is not a trace prefix.
                match line.get(i) {
                    None => Some(i),
                    Some(b' ' | b'\t') => Some(i + 1),
                    Some(_) => None,
                }
            }
            Prefix::Hash => {
                if line.get(i) != Some(&b'#') {
                    return None;
                }
                i += 1;
                match line.get(i) {
                    None => Some(i),
                    Some(b' ' | b'\t') => Some(i + 1),
                    Some(_) => None,
                }
            }
            Prefix::Timestamp => {
                i = timestamp_len(line, i)?;
                // The stream and tag of the CRI log format, when present.
                let after = skip_blanks(line, i);
                for stream in [&b"stdout"[..], b"stderr"] {
                    if line[after..].starts_with(stream) {
                        let tag = skip_blanks(line, after + stream.len());
                        if tag > after + stream.len()
                            && matches!(line.get(tag), Some(b'F' | b'P'))
                            && matches!(line.get(tag + 1), None | Some(b' ' | b'\t'))
                        {
                            // What a program writes to stderr is not its output: read the
                            // entry as blank (iptables-save's warnings go there).
                            if stream == b"stderr" {
                                return Some(line.len());
                            }
                            return Some((tag + 2).min(line.len()));
                        }
                    }
                }
                Some(i)
            }
        }
    }
}

/// The content of the line `start..end` (without its line break): without surrounding blanks
/// and `\r`, and past `prefix` when the line has it. Returns the content's bounds and the
/// prefix's bounds, if one was skipped.
#[inline]
pub(crate) fn content(
    bytes: &[u8],
    start: usize,
    end: usize,
    prefix: Option<Prefix>,
) -> ((usize, usize), Option<(usize, usize)>) {
    let mut s = start;
    let mut e = end;
    while e > s && matches!(bytes[e - 1], b'\r' | b' ' | b'\t') {
        e -= 1;
    }
    while s < e && matches!(bytes[s], b' ' | b'\t') {
        s += 1;
    }
    let mut skipped = None;
    if let Some(prefix) = prefix
        && let Some(n) = prefix.strip(&bytes[s..e])
    {
        skipped = Some((s, s + n));
        s += n;
        while s < e && matches!(bytes[s], b' ' | b'\t') {
            s += 1;
        }
    }
    ((s, e), skipped)
}

fn skip_blanks(line: &[u8], mut i: usize) -> usize {
    while matches!(line.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    i
}

fn digits(line: &[u8], i: usize, n: usize) -> Option<usize> {
    let part = line.get(i..i + n)?;
    part.iter().all(u8::is_ascii_digit).then_some(i + n)
}

fn byte(line: &[u8], i: usize, allowed: &[u8]) -> Option<usize> {
    allowed.contains(line.get(i)?).then_some(i + 1)
}

/// `2024-05-02T10:11:12[.fraction][Z|+hh:mm]` followed by a blank: the end of the blank.
fn timestamp_len(line: &[u8], i: usize) -> Option<usize> {
    let i = digits(line, i, 4)?;
    let i = byte(line, i, b"-")?;
    let i = digits(line, i, 2)?;
    let i = byte(line, i, b"-")?;
    let i = digits(line, i, 2)?;
    let i = byte(line, i, b"T ")?;
    let i = digits(line, i, 2)?;
    let i = byte(line, i, b":")?;
    let i = digits(line, i, 2)?;
    let i = byte(line, i, b":")?;
    let mut i = digits(line, i, 2)?;
    if matches!(line.get(i), Some(b'.' | b',')) {
        i += 1;
        while line.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    match line.get(i) {
        Some(b'Z') => i += 1,
        Some(b'+' | b'-') => {
            i = digits(line, i + 1, 2)?;
            if line.get(i) == Some(&b':') {
                i += 1;
            }
            i = digits(line, i, 2)?;
        }
        _ => {}
    }
    match line.get(i) {
        Some(b' ' | b'\t') => Some(i + 1),
        _ => None,
    }
}

/// Whether a line (without its line break) looks like a line of iptables-save output or
/// restore input: `*table`, `:CHAIN`, `-A CHAIN ...` (or another verb), `[p:b] -A`, `COMMIT`.
pub(crate) fn is_dump_shaped(line: &[u8]) -> bool {
    let start = skip_blanks(line, 0);
    let mut end = line.len();
    while end > start && matches!(line[end - 1], b' ' | b'\t' | b'\r') {
        end -= 1;
    }
    let line = &line[start..end];
    match line {
        [b'*', name @ ..] => {
            !name.is_empty() && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        }
        [b':', c, ..] => !matches!(c, b' ' | b'\t'),
        [b'-', v, b' ' | b'\t', ..] => b"AIDRNXFPZE".contains(v),
        [b'[', rest @ ..] => rest
            .iter()
            .position(|&b| b == b']')
            .is_some_and(|close| is_dump_shaped(&rest[close + 1..])),
        b"COMMIT" => true,
        _ => false,
    }
}

/// The prefix shared by the dump-looking lines of `text`, if its first line of content is not
/// dump-shaped and its first 64 KiB hold lines that are once a prefix is read past.
pub(crate) fn detect(text: &[u8]) -> Option<Prefix> {
    let mut window = &text[..text.len().min(WINDOW)];
    if window.len() < text.len() {
        // Whole lines only.
        window = &window[..memchr::memrchr(b'\n', window).map_or(0, |i| i + 1)];
    }
    let lines = || window.split(|&b| b == b'\n');
    // The common case: a dump (after blank lines and `#` comments) needs no detection.
    let first = lines().find(|l| {
        let i = skip_blanks(l, 0);
        !matches!(l.get(i), None | Some(b'\r' | b'#'))
    });
    if first.is_some_and(is_dump_shaped) {
        return None;
    }
    let mut plain = 0usize;
    let mut counts = [0usize; ALL.len()];
    for line in lines() {
        if is_dump_shaped(line) {
            plain += 1;
            continue;
        }
        for (k, prefix) in ALL.iter().enumerate() {
            if let Some(n) = prefix.len(line)
                && is_dump_shaped(&line[n..])
            {
                counts[k] += 1;
            }
        }
    }
    let (best, &count) = counts.iter().enumerate().max_by_key(|(_, c)| **c)?;
    let enough = if plain == 0 {
        count >= 1
    } else {
        count >= 2 && count > plain
    };
    enough.then_some(ALL[best])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_measured() {
        let len = |p: Prefix, s: &str| p.strip(s.as_bytes());
        assert_eq!(len(Prefix::Quote, "> -A INPUT"), Some(2));
        assert_eq!(len(Prefix::Quote, ">> > -A INPUT"), Some(5));
        assert_eq!(len(Prefix::Quote, ">"), Some(1));
        assert_eq!(len(Prefix::Quote, "-A INPUT"), None);
        assert_eq!(len(Prefix::Hash, "  # -A INPUT -j DROP"), Some(4));
        assert_eq!(len(Prefix::Hash, "# Generated by iptables-save"), None);
        assert_eq!(len(Prefix::Plus, "+ *filter"), Some(2));
        assert_eq!(len(Prefix::Plus, "+-A INPUT"), None);
        assert_eq!(
            len(
                Prefix::Timestamp,
                "2024-05-02T10:11:12.123456789Z stdout F -A KUBE-SERVICES"
            ),
            Some(40)
        );
        assert_eq!(
            len(Prefix::Timestamp, "2024-05-02T10:11:12+02:00 *nat"),
            Some(26)
        );
        assert_eq!(
            len(Prefix::Timestamp, "2024-05-02 10:11:12 COMMIT"),
            Some(20)
        );
        assert_eq!(len(Prefix::Timestamp, "2024-05-02T10:11 COMMIT"), None);
    }

    #[test]
    fn dumps_are_not_prefixed() {
        assert_eq!(
            detect(b"# Generated by iptables-save\n*filter\n-A INPUT -j DROP\n"),
            None
        );
        assert_eq!(
            detect(b"Here it is:\n*filter\n-A INPUT -j DROP\nCOMMIT\n"),
            None
        );
        assert_eq!(detect(b""), None);
        assert_eq!(detect(b"hello\n> not a dump\n"), None);
    }

    #[test]
    fn prefixed_pastes_are_detected() {
        assert_eq!(
            detect(b"On Monday you wrote:\n> *filter\n>\n> -A INPUT -j DROP\r\n> COMMIT\n"),
            Some(Prefix::Quote)
        );
        assert_eq!(
            detect(b"# *filter\n# :INPUT ACCEPT [0:0]\n# COMMIT\n"),
            Some(Prefix::Hash)
        );
        assert_eq!(
            detect(b"2024-05-02T10:11:12.1Z stdout F *nat\n2024-05-02T10:11:12.2Z stdout P -A X -j Y\n"),
            Some(Prefix::Timestamp)
        );
    }
}
