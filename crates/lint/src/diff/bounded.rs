//! The rule level of two large dumps without holding both parses at once (issue 16).
//!
//! The first node is parsed, its facts packed, and its parse reduced to [`RuleTexts`]: per
//! chain of its live tables, the byte spans of its rules in the dump (which stays). The second
//! node is parsed whole; the chains whose rules differ, as [`super::rules::diff`] would find
//! them, are found by comparing text. When some do, the first dump is parsed again with every
//! other chain's rule lines blanked out (lines and byte offsets unchanged), and the rule level
//! runs over those chains only ([`super::rules::diff_where`]). What the report reads of the
//! first node's model (the Service of a chain, the Kubernetes addresses) is taken from the
//! whole dump before its parse is dropped.

use super::Node;
use rulelint_parser::TableId;
use rustc_hash::{FxHashMap, FxHashSet};

/// The chains of a dump's live tables with the byte spans of their rules: what comparing its
/// chains' rules with another node's needs once its parse is dropped (8 bytes a rule, 12 a
/// chain).
pub struct RuleTexts {
    /// In the order of their tables and, within one, of the dump; each chain's rules follow
    /// the previous chain's in `rules`.
    chains: Vec<ChainTexts>,
    rules: Vec<(u32, u32)>,
    /// The name of each table, by its index in the dump.
    tables: Vec<Box<str>>,
}

struct ChainTexts {
    /// Where the chain's name starts in the dump.
    name_start: u32,
    /// The index of its table (high half) and the length of its name (low half).
    table_and_name_len: u32,
    /// Its rule count, with [`DECLARED`] set when a `:NAME` line or `-N` declares it: a chain
    /// named only by its rules must keep them, or it would not exist in the dump read again.
    len: u32,
}

const DECLARED: u32 = 1 << 31;

impl ChainTexts {
    fn table(&self) -> u32 {
        self.table_and_name_len >> 16
    }

    /// The chain's name, a span of the dump.
    fn name(&self) -> (u32, u32) {
        let len = self.table_and_name_len & 0xffff;
        (self.name_start, self.name_start.saturating_add(len))
    }

    fn declared(&self) -> bool {
        self.len & DECLARED != 0
    }

    fn rule_count(&self) -> usize {
        (self.len & !DECLARED) as usize
    }
}

/// The chains whose rules differ, by table index and name.
pub type DifferingChains = FxHashMap<usize, FxHashSet<Box<str>>>;

impl RuleTexts {
    /// The rule spans of a node's live tables' chains; `None` when a name or a span does not
    /// lie in `text` as a 32-bit offset, or a table index or a name length does not fit 16
    /// bits (then the dump is compared whole).
    pub fn of(node: &Node<'_>, text: &str) -> Option<RuleTexts> {
        let offset = |s: &str| -> Option<(u32, u32)> {
            let start = (s.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
            let end = start.checked_add(s.len())?;
            (end <= text.len()).then_some(())?;
            Some((u32::try_from(start).ok()?, u32::try_from(end).ok()?))
        };
        let set = node.set;
        let live = || set.iter_tables().filter(|t| !t.get().superseded);
        let mut texts = RuleTexts {
            chains: Vec::with_capacity(live().map(|t| t.chains().count()).sum()),
            rules: Vec::with_capacity(set.rules.len()),
            tables: set.iter_tables().map(|t| Box::from(t.name())).collect(),
        };
        for table in live() {
            for chain in table.chains() {
                for rule in chain.rules() {
                    texts.rules.push(offset(rule.text())?);
                }
                let count = u32::try_from(chain.rule_count())
                    .ok()
                    .filter(|&c| c < DECLARED)?;
                let declared = if chain.get().declaration().is_some() {
                    DECLARED
                } else {
                    0
                };
                let (name_start, name_end) = offset(chain.name())?;
                let name_len = u16::try_from(name_end - name_start).ok()?;
                let table = u16::try_from(table.id.index()).ok()?;
                texts.chains.push(ChainTexts {
                    name_start,
                    table_and_name_len: (u32::from(table) << 16) | u32::from(name_len),
                    len: count | declared,
                });
            }
        }
        Some(texts)
    }

    /// Each chain with its rules' spans, in order.
    fn each(&self) -> impl Iterator<Item = (&ChainTexts, &[(u32, u32)])> {
        let mut start = 0usize;
        self.chains.iter().map(move |chain| {
            let end = start + chain.rule_count();
            let rules = self.rules.get(start..end).unwrap_or(&[]);
            start = end;
            (chain, rules)
        })
    }

    /// The chains of the dump `text` (which these spans are of) whose rules differ from those
    /// of the same chain on `b`, matched as [`super::rules::diff`] matches them; chains `b`
    /// lacks are not compared at the rule level.
    pub fn differing(&self, text: &str, b: &Node<'_>) -> DifferingChains {
        let at = |(start, end): (u32, u32)| text.get(start as usize..end as usize).unwrap_or("");
        let live_b: Vec<_> = b
            .set
            .iter_tables()
            .filter(|t| !t.get().superseded)
            .collect();
        let mut differing = DifferingChains::default();
        let mut same_name = Vec::new();
        let mut same_name_of = None;
        for (chain, rules) in self.each() {
            if same_name_of != Some(chain.table()) {
                let table = &self.tables[chain.table() as usize];
                same_name = live_b
                    .iter()
                    .rev()
                    .filter(|t| t.name() == &**table)
                    .collect();
                same_name_of = Some(chain.table());
            }
            let name = at(chain.name());
            let Some(other) = same_name.iter().find_map(|t| t.chain(name)) else {
                continue;
            };
            let same = other.rule_count() == rules.len()
                && other
                    .rules()
                    .zip(rules)
                    .all(|(r, &span)| r.text() == at(span));
            if !same {
                differing
                    .entry(chain.table() as usize)
                    .or_default()
                    .insert(name.into());
            }
        }
        differing
    }

    /// Blanks out (spaces, line breaks kept) the rule lines of every declared chain not in
    /// `keep`, so that the dump read again holds every table and chain but only the rules
    /// of `keep`, at the same lines and byte offsets. Gives the text back untouched as `Err`
    /// when a rule line holds more than counters before its rule (a pasted prefix: blanking it
    /// could change how the rest is read).
    pub fn blank(&self, text: String, keep: &DifferingChains) -> Result<String, String> {
        let at = |(start, end): (u32, u32)| text.get(start as usize..end as usize).unwrap_or("");
        let mut regions = Vec::new();
        for (chain, rules) in self.each() {
            let kept = keep
                .get(&(chain.table() as usize))
                .is_some_and(|names| names.contains(at(chain.name())));
            if kept || !chain.declared() {
                continue;
            }
            for &(start, end) in rules {
                let (start, end) = (start as usize, end as usize);
                let (Some(before), Some(after)) = (text.get(..start), text.get(end..)) else {
                    return Err(text);
                };
                let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                if !only_counters(&before[line_start..]) {
                    return Err(text);
                }
                let line_end = after.find('\n').map_or(text.len(), |i| end + i);
                regions.push((line_start, line_end));
            }
        }
        let mut bytes = text.into_bytes();
        for (start, end) in regions {
            for b in &mut bytes[start..end] {
                if *b != b'\n' && *b != b'\r' {
                    *b = b' ';
                }
            }
        }
        // Whole lines became spaces: still UTF-8 (`check` would catch a rule read otherwise).
        Ok(String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// Whether `filtered` (the dump read again from [`RuleTexts::blank`]'s text) holds the
    /// rules of the chains `keep` exactly as the whole dump did.
    pub fn check(&self, text: &str, filtered: &Node<'_>, keep: &DifferingChains) -> bool {
        let at = |(start, end): (u32, u32)| text.get(start as usize..end as usize).unwrap_or("");
        self.each().all(|(chain, rules)| {
            let name = at(chain.name());
            let kept = keep
                .get(&(chain.table() as usize))
                .is_some_and(|names| names.contains(name));
            if !kept {
                return true;
            }
            filtered
                .set
                .find_chain(TableId(chain.table()), name)
                .is_some_and(|c| {
                    c.rule_count() == rules.len()
                        && c.rules().zip(rules).all(|(r, &span)| r.text() == at(span))
                })
        })
    }
}

/// Whether what stands before a rule's verb on its line is blanks or its `[packets:bytes]`.
fn only_counters(before: &str) -> bool {
    let before = before.trim_matches([' ', '\t']);
    before.is_empty()
        || before
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .and_then(|s| s.split_once(':'))
            .is_some_and(|(p, b)| {
                !p.is_empty()
                    && !b.is_empty()
                    && p.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
            })
}
