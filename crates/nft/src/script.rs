//! `nft -f` scripts that mix blocks and commands: `table ip calico { ... }` blocks followed by
//! `add element ip calico m { "k" : goto x }` lines, as Calico, k3s and hand-written
//! `/etc/nftables.conf` files write them. nft applies such a script as one transaction, in
//! order: a block declares (a block for a table that exists adds to it), a command adds,
//! flushes or deletes on top of what was declared before it.
//!
//! The transaction reader ([`crate::parse_transaction`]) reads the commands. Each block goes
//! through the listing's block reader (`parse.rs`), so that a block reads as it does in a
//! listing, over the script's own tokens, so that its spans are the script's; what the block
//! declares is then folded by name into the ruleset the commands build.

use crate::codes;
use crate::lexer::Kind;
use crate::model::{ChainId, Family, RuleList, Ruleset, TableId};
use crate::parse::{Parsed, parse_block_tokens};
use crate::stmt::unquote;
use crate::transaction::Tx;

/// A statement the block reader reads: tokens `start..end` (from its `table`, `chain`, `set`
/// or `map` keyword), and the table the members of a `chain|set|map [FAMILY] TABLE NAME { }`
/// statement belong to.
pub(crate) struct BlockStatement<'a> {
    start: usize,
    pub(crate) end: usize,
    home: Option<(Option<Family>, Option<&'a str>, &'a str)>,
}

/// What a chain body may declare besides rules (the transaction reader reads these).
const CHAIN_PROPERTIES: &[&str] = &["type", "policy", "comment", "devices", "flags"];

/// Verbs that start a command that changes the ruleset, and the objects they name: a line of
/// them inside an unclosed block ends the block (a cut block before the script's commands).
const COMMAND_VERBS: &[&str] = &[
    "add", "create", "insert", "replace", "flush", "delete", "destroy",
];
const COMMAND_OBJECTS: &[&str] = &["table", "chain", "rule", "set", "map", "element", "ruleset"];

/// Whether text the listing reader read (`parsed`) is an `nft -f` script rather than a
/// listing: a line it could not place is a command (`table ip t { ... }` then `add element ip
/// t m { ... }`). Then [`crate::parse_transaction`] reads it, blocks and commands in order.
///
/// Two blocks of one table alone do not make a script: two listings pasted one after the
/// other (two nodes) look the same, and read as they always did.
pub(crate) fn reads_as_script(text: &str, parsed: &Parsed<'_>) -> bool {
    parsed
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::STRAY_TEXT.code)
        .filter_map(|d| text.get(d.span.start as usize..d.span.end as usize))
        .flat_map(str::lines)
        .any(is_command_line)
}

/// Whether a line is a command of an `nft -f` script: `add|insert|flush|delete|...
/// table|chain|rule|set|map|element ...`, `flush ruleset [FAMILY]`, or one that nft reads as `add`,
/// written without it and with its family, in the shape nft accepts (`table ip t`, `chain ip t
/// c`, `chain ip t c { ... }`, `rule ip t c accept`, `element ip t m { ... }`). Prose does not
/// write the family, so it does not read as a command. Words after a `#` are a comment.
///
/// This is the one definition: the section finder of the lint crate and the script reader both
/// ask it.
pub fn is_command_line(line: &str) -> bool {
    let mut words = line
        .split('#')
        .next()
        .unwrap_or("")
        .split_ascii_whitespace();
    let Some(first) = words.next() else {
        return false;
    };
    let rest: Vec<&str> = words.collect();
    if COMMAND_VERBS.contains(&first) {
        return match rest.as_slice() {
            // `flush ruleset` or `flush ruleset ip`: nothing else follows.
            ["ruleset"] => true,
            ["ruleset", family] => Family::from_word(family).is_some(),
            [object, _, ..] => COMMAND_OBJECTS.contains(object),
            _ => false,
        };
    }
    let family = rest.first().is_some_and(|w| Family::from_word(w).is_some());
    // `{` after the family, table and name, or glued to the name (`m{`).
    let brace_after_names = rest.get(3).is_some_and(|w| w.starts_with('{'))
        || rest.get(2).is_some_and(|w| w.len() > 1 && w.ends_with('{'));
    let shaped = match first {
        "table" => rest.len() == 2,
        "chain" => rest.len() == 3 || brace_after_names,
        "rule" => rest.len() > 3,
        "set" | "map" | "element" => brace_after_names,
        _ => false,
    };
    family && shaped
}

impl<'a> Tx<'_, 'a> {
    fn word(&self, i: usize) -> Option<&'a str> {
        self.toks
            .get(i)
            .filter(|t| t.kind(self.text) == Kind::Word)
            .map(|t| self.s(*t))
    }

    /// The index of the `{` ending the header `KEYWORD NAME... {` at `kw` (one to three
    /// names, on the keyword's line), and how many names it has.
    fn header_brace(&self, kw: usize) -> Option<(usize, usize)> {
        let mut i = kw + 1;
        while self
            .toks
            .get(i)
            .is_some_and(|t| matches!(t.kind(self.text), Kind::Word | Kind::Str))
        {
            i += 1;
        }
        let names = i - kw - 1;
        let brace = self.toks.get(i)?;
        (brace.kind(self.text) == Kind::LBrace && (1..=3).contains(&names)).then_some((i, names))
    }

    /// The block statement starting at token `pos`, if the block reader reads it: a
    /// `table|chain|set|map ... {` without a verb, or an `add|create table|chain ... {` whose
    /// body holds what only the block reader reads (a table's chains, a chain's rules).
    pub(crate) fn block_at(&self, pos: usize) -> Option<BlockStatement<'a>> {
        let first = self.word(pos)?;
        let (kw_at, verb) = match first {
            "table" | "chain" | "set" | "map" => (pos, false),
            "add" | "create" if matches!(self.word(pos + 1), Some("table" | "chain")) => {
                (pos + 1, true)
            }
            _ => return None,
        };
        let kw = self.word(kw_at)?;
        let (brace, names) = self.header_brace(kw_at)?;
        let end = self.block_end(brace);
        if verb && !self.body_needs_block_reader(kw, brace, end) {
            return None;
        }
        let home = if kw == "table" || names == 1 {
            // A table reads its own header; a lone `chain NAME {` is a fragment without its
            // table, as in a listing.
            None
        } else {
            let name = |i: usize| unquote(self.s(self.toks[i]));
            let (family, family_word, table) = if names == 3 {
                let word = name(kw_at + 1);
                (Some(Family::from_word(word)?), Some(word), name(kw_at + 2))
            } else {
                (Some(Family::Ip), None, name(kw_at + 1))
            };
            Some((family, family_word, table))
        };
        Some(BlockStatement {
            start: kw_at,
            end,
            home,
        })
    }

    /// Where the block whose `{` is at `brace` ends: after its `}`, or, when it does not
    /// close, before a line that starts a command or another `table` block, or the end.
    fn block_end(&self, brace: usize) -> usize {
        let mut depth = 0u32;
        for (i, t) in self.toks.iter().enumerate().skip(brace) {
            match t.kind(self.text) {
                Kind::LBrace => depth += 1,
                Kind::RBrace => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return i + 1;
                    }
                }
                Kind::Newline => {
                    let command = self.word(i + 1).is_some_and(|w| COMMAND_VERBS.contains(&w))
                        && self
                            .word(i + 2)
                            .is_some_and(|w| COMMAND_OBJECTS.contains(&w));
                    let table =
                        self.word(i + 1) == Some("table") && self.header_brace(i + 1).is_some();
                    if command || table {
                        return i + 1;
                    }
                }
                _ => {}
            }
        }
        self.toks.len()
    }

    /// Whether the body `brace..end` of an `add table|chain` holds a nested block (a table's
    /// chain or set) or a statement that is no chain property (a chain's rule).
    fn body_needs_block_reader(&self, kw: &str, brace: usize, end: usize) -> bool {
        let mut depth = 0u32;
        let mut at_statement = false;
        for i in brace..end {
            match self.toks[i].kind(self.text) {
                Kind::LBrace => {
                    depth += 1;
                    if depth > 1 && kw == "table" {
                        return true;
                    }
                    at_statement = depth == 1;
                }
                Kind::RBrace => depth = depth.saturating_sub(1),
                Kind::Newline | Kind::Semi if depth == 1 => at_statement = true,
                Kind::Word if at_statement => {
                    if kw == "chain" && !CHAIN_PROPERTIES.contains(&self.s(self.toks[i])) {
                        return true;
                    }
                    at_statement = false;
                }
                _ => at_statement = false,
            }
        }
        false
    }

    /// Reads `block` with the block reader and folds what it declares into the ruleset.
    pub(crate) fn read_block(&mut self, block: BlockStatement<'a>) {
        self.blocks_read = true;
        let toks = self.toks[block.start..block.end].to_vec();
        let keyword = self.toks[block.start].span();
        let (fragment, diags) = parse_block_tokens(self.text, toks);
        // `chain ip t c { }` names its table: it is not the fragment the reader takes it for.
        let homed = block.home.is_some();
        self.diags.extend(
            diags.into_iter().filter(|d| {
                !(homed && d.code == codes::HEADERLESS_BLOCK.code && d.span == keyword)
            }),
        );
        self.fold(fragment, block.home);
    }

    /// Adds what `fragment` declares: a table, chain or set that exists gets its members,
    /// rules and elements appended (and the properties the fragment sets), others are added.
    /// The fragment's headerless table is `home` when given.
    fn fold(
        &mut self,
        fragment: Ruleset<'a>,
        home: Option<(Option<Family>, Option<&'a str>, &'a str)>,
    ) {
        let Ruleset {
            tables,
            chains,
            sets,
            rules,
            statements,
            ..
        } = fragment;
        let chunks = self.rs.statements.len() as u32;
        self.rs.statements.extend(statements);
        let mut table_of = Vec::with_capacity(tables.len());
        for table in tables {
            let known = table
                .name
                .and_then(|name| self.tables.get(&(table.family, name)).copied());
            let tid = match (table.name, home, known) {
                (None, Some((family, family_word, name)), _) => {
                    self.table_named(family, family_word, name, table.span, false)
                }
                (Some(_), _, Some(tid)) => {
                    let into = &mut self.rs.tables[tid.index()];
                    into.comment = table.comment.or(into.comment);
                    if !table.flags.is_empty() {
                        into.flags = table.flags;
                    }
                    into.objects.extend(table.objects);
                    into.closed &= table.closed;
                    tid
                }
                (name, _, _) => {
                    let tid = TableId(self.rs.tables.len() as u32);
                    if let Some(name) = name {
                        self.tables.insert((table.family, name), tid);
                    }
                    self.deleted.push(false);
                    self.rs.tables.push(crate::model::Table {
                        chains: Vec::new(),
                        sets: Vec::new(),
                        ..table
                    });
                    tid
                }
            };
            table_of.push(tid);
        }
        let mut chain_of: Vec<ChainId> = Vec::with_capacity(chains.len());
        for chain in chains {
            let tid = table_of[chain.table.index()];
            let known = self
                .chains
                .get(&(tid, chain.name))
                .copied()
                .filter(|_| !self.rs.tables[tid.index()].is_headerless());
            let cid = match known {
                Some(cid) => {
                    let into = &mut self.rs.chains[cid.index()];
                    if chain.base.is_some() {
                        into.base = chain.base;
                    }
                    into.comment = chain.comment.or(into.comment);
                    into.closed &= chain.closed;
                    cid
                }
                None => {
                    let cid = ChainId(self.rs.chains.len() as u32);
                    if !self.rs.tables[tid.index()].is_headerless() {
                        self.chains.insert((tid, chain.name), cid);
                    }
                    self.rs.tables[tid.index()].chains.push(cid);
                    self.rs.chains.push(crate::model::Chain {
                        table: tid,
                        rules: RuleList::default(),
                        ..chain
                    });
                    cid
                }
            };
            chain_of.push(cid);
        }
        for set in sets {
            let tid = table_of[set.table.index()];
            let known = self
                .sets
                .get(&(tid, set.name))
                .copied()
                .filter(|_| !self.rs.tables[tid.index()].is_headerless());
            match known {
                Some(sid) => {
                    let into = &mut self.rs.sets[sid.index()];
                    into.is_map |= set.is_map;
                    into.key_type = set.key_type.or(into.key_type.take());
                    if !set.flags.is_empty() {
                        into.flags = set.flags;
                    }
                    into.timeout = set.timeout.or(into.timeout);
                    into.size = set.size.or(into.size);
                    into.comment = set.comment.or(into.comment);
                    into.properties.extend(set.properties);
                    into.elements.extend(set.elements);
                    into.closed &= set.closed;
                }
                None => {
                    let sid = crate::model::SetId(self.rs.sets.len() as u32);
                    if !self.rs.tables[tid.index()].is_headerless() {
                        self.sets.insert((tid, set.name), sid);
                    }
                    self.rs.tables[tid.index()].sets.push(sid);
                    self.rs.sets.push(crate::model::Set { table: tid, ..set });
                }
            }
        }
        for mut rule in rules {
            let cid = chain_of[rule.chain.index()];
            rule.chain = cid;
            rule.statements.chunk += chunks;
            let rid = crate::model::RuleId(self.rs.rules.len() as u32);
            self.rs.rules.push(rule);
            self.rs.chains[cid.index()].rules.to_mut().push(rid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_command_line;

    #[test]
    fn commands_with_their_verb_are_commands() {
        for line in [
            "add rule ip kube-proxy services ip daddr 10.0.0.1 accept",
            "add element ip t m { 1.2.3.4 : goto c }",
            "flush ruleset",
            "flush ruleset inet",
            "flush chain ip t c",
            "delete table inet filter",
            "  insert rule ip t c counter # why",
        ] {
            assert!(is_command_line(line), "{line}");
        }
    }

    #[test]
    fn commands_without_add_need_their_family_and_shape() {
        for line in [
            "table ip t",
            "chain ip t c",
            "chain ip t c { type filter hook input priority 0; }",
            "rule ip t c accept",
            "element ip t m { 1.2.3.4 }",
            "set ip t s { type ipv4_addr; }",
            "map ip t m{ type ipv4_addr : verdict; }",
        ] {
            assert!(is_command_line(line), "{line}");
        }
    }

    #[test]
    fn prose_and_listing_lines_are_not_commands() {
        for line in [
            "",
            "add the table to the chain",
            "flush",
            "flush ruleset now",
            "table of contents",
            "the rule ip addresses follow",
            "chain input {",
            "rule ip t",
            "set ip t s",
            "# add rule ip t c accept",
            "delete",
        ] {
            assert!(!is_command_line(line), "{line}");
        }
    }
}
