//! The catalogue of nft parser diagnostics: codes `RL151`..`RL169` of layer `RL1xx`, "the text
//! would not load (as pasted)". The iptables parser owns `RL101`..`RL118`.
//!
//! Codes are stable and never reused. Each entry's docs use the headings *What it flags*, *Why
//! it matters*, *Example* and *Instead*.

use rulelint_parser::{CodeInfo, Severity};

macro_rules! code {
    ($ident:ident, $code:literal, $name:literal, $severity:ident, $summary:literal, $docs:literal) => {
        #[doc = $summary]
        pub const $ident: CodeInfo = CodeInfo {
            code: $code,
            name: $name,
            severity: Severity::$severity,
            summary: $summary,
            docs: $docs,
        };
    };
}

code!(
    STRAY_TEXT,
    "RL151",
    "nft-stray-text",
    Warning,
    "text outside any table: a shell prompt, prose or other output pasted with the ruleset",
    "## What it flags
Lines outside every `table ... { }` block that are neither `#` comments nor a `chain`, `set` or
`map` block: a shell prompt (`root@node:~# nft list ruleset`), prose, or another command's
output. One diagnostic covers a run of such lines.

## Why it matters
`nft -f` refuses the file as it is. rulelint skips the lines and reads the rest.

## Example
```text
root@node-1:~# nft list ruleset
table ip kube-proxy {
}
```

## Instead
Keep only the output of `nft list ruleset` (`nft list ruleset > node-1.nft`)."
);

code!(
    INVALID_LINE,
    "RL152",
    "nft-invalid-line",
    Error,
    "a line inside a table, set or map block that is not one of its properties or members",
    "## What it flags
A line inside `table { }` that is not `comment`, `flags`, a `chain`, `set`, `map` or a named
object (`flowtable`, `counter`, `quota`, `ct helper`, `limit`, ...), or a line inside a `set` or
`map` block that is not `type`, `typeof`, `flags`, `timeout`, `size`, `comment`, `elements = {`
or another set property.

## Why it matters
`nft -f` refuses the whole file at this line. rulelint skips the line and reads the rest.

## Example
```text
table ip filter {
	hook input
}
```

## Instead
Paste the ruleset as `nft list ruleset` prints it."
);

code!(
    UNCLOSED_BLOCK,
    "RL153",
    "nft-unclosed-block",
    Error,
    "a `{` that is never closed: a truncated paste",
    "## What it flags
A table, chain, set, map or element list whose `{` has no matching `}` before the text ends or
before the next `table`/`chain`/`set`/`map` block starts. It is reported once, on the innermost
block that is open where the text stops; the blocks around it are marked as not closed.

## Why it matters
A ruleset cut short is missing whatever came after the cut: chains, rules and set elements.
Findings that conclude from absence are not reliable for the blocks that are not closed.

## Example
```text
table ip kube-proxy {
	chain services {
		ip daddr . meta l4proto . th dport vmap @service-ips
```

## Instead
Paste the whole output of `nft list ruleset` (or `nft list table ip kube-proxy`)."
);

code!(
    UNMATCHED_CLOSE,
    "RL154",
    "nft-unmatched-brace",
    Warning,
    "a `}` that closes nothing",
    "## What it flags
A `}` outside every block, usually the tail of a partial copy whose opening lines were left out.

## Why it matters
`nft -f` refuses it. rulelint skips it.

## Example
```text
	chain filter-input {
		ct state new jump service-endpoints-check
	}
}
```

## Instead
Copy the block from its `table` line to its last `}`."
);

code!(
    HEADERLESS_BLOCK,
    "RL155",
    "nft-headerless-block",
    Warning,
    "a chain, set or map pasted without its `table` line: family and table are unknown",
    "## What it flags
A `chain NAME {`, `set NAME {` or `map NAME {` block outside any table, as a partial copy of
`nft list ruleset` output produces. Such blocks are read into one table of unknown family and
name; a jump resolves to a chain of the same fragment.

## Why it matters
The family decides what a base chain's priority names mean and which addresses a rule can
match. Checks that need the whole table (undefined jump targets, unreferenced chains) are not
reliable on a fragment.

## Example
```text
chain filter-input {
	type filter hook input priority -110; policy accept;
	ct state new jump nodeport-endpoints-check
}
```

## Instead
Paste the whole table: `nft list table ip kube-proxy`."
);

code!(
    UNTERMINATED_STRING,
    "RL156",
    "nft-unterminated-string",
    Error,
    "a `\"` that opens a string the line never closes",
    "## What it flags
A quoted string (a comment, an interface name) whose closing `\"` is missing on its line.

## Why it matters
`nft -f` refuses it. rulelint reads the string up to the end of the line.

## Example
```text
		ip daddr @cluster-ips reject comment \"Reject traffic
```

## Instead
Close the string on the same line."
);

code!(
    UNKNOWN_PRIORITY,
    "RL157",
    "nft-unknown-priority",
    Error,
    "a base chain priority that is neither a number nor a priority name of its family",
    "## What it flags
`priority NAME` or `priority NAME +|- N` where `NAME` is not one of the names nft knows for the
table's family (`raw` -300, `mangle` -150, `dstnat` -100, `filter` 0, `security` 50, `srcnat`
100; in `bridge` tables `dstnat` -300, `filter` -200, `out` 100, `srcnat` 300), or an offset
that is not a number.

## Why it matters
The priority orders the base chains of one hook across tables; without it the order packets
take through them is unknown.

## Example
```text
type nat hook prerouting priority dnat; policy accept;
```

## Instead
```text
type nat hook prerouting priority dstnat; policy accept;
```"
);

code!(
    INCOMPLETE_BASE_CHAIN,
    "RL158",
    "nft-incomplete-base-chain",
    Error,
    "a base chain declaration without its type, hook or priority",
    "## What it flags
A `type ... hook ... priority ...;` line inside a chain that lacks one of the three, or has a
word after them that nft does not know.

## Why it matters
`nft -f` refuses the declaration, and without a hook the chain is not an entry point: nothing
reaches its rules.

## Example
```text
type filter hook input; policy accept;
```

## Instead
```text
type filter hook input priority filter; policy accept;
```"
);

code!(
    UNKNOWN_FAMILY,
    "RL159",
    "nft-unknown-family",
    Error,
    "a table whose family is not ip, ip6, inet, arp, bridge or netdev",
    "## What it flags
`table FAMILY NAME {` with a family nft does not have.

## Why it matters
`nft -f` refuses the table. rulelint reads its contents with an unknown family.

## Example
```text
table ipv4 kube-proxy {
```

## Instead
```text
table ip kube-proxy {
```"
);

code!(
    INVALID_ELEMENT,
    "RL160",
    "nft-invalid-element",
    Error,
    "a set or map element that cannot be read",
    "## What it flags
An entry of `elements = { ... }` (or of an anonymous set in a rule) that is not a key, a key
with options (`timeout`, `expires`, `comment`), or, in a map, `key : value`: a `:` without a
value, two keys without a `,` between them, a stray `:`.

## Why it matters
`nft -f` refuses the whole set. rulelint skips the entry and reads the rest.

## Example
```text
elements = { 10.0.0.1 . tcp . 80 : , 10.0.0.2 . tcp . 80 : goto service-B }
```

## Instead
Give every map element its value: `10.0.0.1 . tcp . 80 : goto service-A`."
);

code!(
    INPUT_TOO_LARGE,
    "RL161",
    "nft-input-too-large",
    Error,
    "the input is 4 GiB or larger: rulelint does not read it",
    "## What it flags
Text of 4 GiB or more. Spans are 32-bit byte offsets.

## Why it matters
Nothing of the input is analysed.

## Example
A 5 GB concatenation of many nodes' rulesets.

## Instead
Analyse one node's ruleset per file."
);

code!(
    MISSING_JUMP_TARGET,
    "RL162",
    "nft-missing-jump-target",
    Error,
    "a `jump` or `goto` without the chain it goes to",
    "## What it flags
A `jump` or `goto` verdict (in a rule or a verdict map element) that is the last word of its
rule or element, so it names no chain.

## Why it matters
`nft -f` refuses it; the rule is usually cut short by a paste.

## Example
```text
ct state new jump
```

## Instead
```text
ct state new jump firewall-check
```"
);

code!(
    INVALID_JSON,
    "RL163",
    "nft-invalid-json",
    Error,
    "`nft -j` JSON that is not valid JSON or ends early",
    "## What it flags
`nft -j list ruleset` output that breaks: a syntax error, or a text that ends inside an object
or before the `nftables` array closes (a paste cut short). The span is where it broke.

## Why it matters
`nft -j -f` refuses it. rulelint keeps every object of the array before the break and reads
nothing after it.

## Example
```text
{\"nftables\": [{\"table\": {\"family\": \"ip\", \"name\": \"kube-proxy\", \"handle\": 1}}, {\"chain\": {\"fam
```

## Instead
Save the whole output: `nft -j list ruleset > node-1.json`."
);

code!(
    UNEXPECTED_JSON,
    "RL164",
    "nft-unexpected-json",
    Warning,
    "a JSON object that is not one `nft -j list ruleset` prints, or lacks a field it needs",
    "## What it flags
An item of the `nftables` array that is valid JSON but not of the libnftables schema as rulelint
reads it: an unknown kind (`{\"frobnicate\": ..}`), a command other than `add`/`create`/`insert`,
a `chain` without `name` or `table`, a set element that is neither a value nor `[key, value]`.

## Why it matters
The object is skipped, so what it holds is missing from the analysis.

## Example
```text
{\"chain\": {\"family\": \"ip\", \"name\": \"services\"}}
```

## Instead
Give each object the fields `nft -j list ruleset` prints (here `\"table\": \"kube-proxy\"`)."
);

code!(
    INVALID_COMMAND,
    "RL165",
    "nft-invalid-command",
    Error,
    "a line of an `nft -f` transaction that is not a command rulelint can read",
    "## What it flags
In the `add table/chain/set/map/rule/element ...` form kube-proxy pipes to `nft -f`: a line that
starts with a word that is no nft command, or a command that lacks its family, table or object
name, or whose `{ ... }` does not close.

## Why it matters
`nft -f` refuses the whole transaction. rulelint skips the command and reads the rest.

## Example
```text
add rule ip kube-proxy
```

## Instead
```text
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
```"
);

code!(
    INCLUDE_NOT_READ,
    "RL166",
    "nft-include-not-read",
    Info,
    "an `include` of an `nft -f` file: the included file is not read",
    "## What it flags
An `include \"FILE\"` line of an `nft -f` script (`/etc/nftables.conf` includes
`/etc/nftables.d/*.nft` so). rulelint reads one file at a time offline and cannot follow it.

## Why it matters
What the included file declares is missing from the analysis: a chain it declares that this
file jumps to, or a Service it adds, is not seen.

## Example
```text
include \"/etc/nftables.d/kube.nft\"
table inet filter {
}
```

## Instead
Check the ruleset nft loaded (`nft list ruleset`), or check the included file too."
);

/// The [`INCLUDE_NOT_READ`] finding on an `include \"FILE\"` line (both readers of `nft -f`
/// text report it alike).
pub(crate) fn include_not_read(span: rulelint_parser::Span) -> rulelint_parser::Diagnostic {
    rulelint_parser::Diagnostic::new(&INCLUDE_NOT_READ, span, "the included file is not read")
        .with_label("rulelint reads one file and does not follow `include`")
        .with_help("check the included file too, or the ruleset nft loaded (`nft list ruleset`)")
}

/// Every code of this crate, in code order.
pub const ALL: &[CodeInfo] = &[
    STRAY_TEXT,
    INVALID_LINE,
    UNCLOSED_BLOCK,
    UNMATCHED_CLOSE,
    HEADERLESS_BLOCK,
    UNTERMINATED_STRING,
    UNKNOWN_PRIORITY,
    INCOMPLETE_BASE_CHAIN,
    UNKNOWN_FAMILY,
    INVALID_ELEMENT,
    INPUT_TOO_LARGE,
    MISSING_JUMP_TARGET,
    INVALID_JSON,
    UNEXPECTED_JSON,
    INVALID_COMMAND,
    INCLUDE_NOT_READ,
];

/// The catalogue entry of `code`, if this crate owns it.
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    ALL.iter().find(|c| c.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_in_range_ordered_and_documented() {
        let mut last = 150;
        for info in ALL {
            let n: u32 = info.code[2..].parse().unwrap();
            assert!((151..=169).contains(&n), "{}", info.code);
            assert!(n > last, "{} out of order", info.code);
            last = n;
            assert!(info.name.starts_with("nft-"), "{}", info.name);
            for heading in [
                "## What it flags",
                "## Why it matters",
                "## Example",
                "## Instead",
            ] {
                assert!(info.docs.contains(heading), "{} lacks {heading}", info.code);
            }
        }
        assert_eq!(lookup("RL153").unwrap().name, "nft-unclosed-block");
    }
}
