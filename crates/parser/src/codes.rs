//! The catalogue of parser diagnostics: layer `RL1xx`, "the dump would not restore (as pasted)".
//!
//! Codes are stable and never reused. `RL115` is the tool's own limit on input size.

use crate::diagnostic::{CodeInfo, Severity};

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
    "RL101",
    "stray-text",
    Warning,
    "text outside any table: a shell prompt, prose or command output pasted with the dump",
    "## What it flags
Lines before the first `*table`, between a `COMMIT` and the next `*table`, or after the last
`COMMIT` that are not `#` comments: a shell prompt (`root@node:~# iptables-save`), prose, or the
output of another command.

## Why it matters
`iptables-restore` refuses the file as it is. rulelint skips the lines and analyses the rest.

## Example
```text
root@node-1:~# iptables-save
*filter
```

## Instead
Keep only the output of `iptables-save` (`iptables-save > node-1.txt`)."
);

code!(
    INVALID_LINE,
    "RL102",
    "invalid-line",
    Error,
    "a line inside a table that is not a rule, chain declaration, COMMIT or comment",
    "## What it flags
A line between `*table` and `COMMIT` that does not start with `-A`/`-I`/`-D`/`-N`/`-X`/`-F`/`-P`,
`:CHAIN`, `[counters]`, `COMMIT` or `#`.

## Why it matters
`iptables-restore` stops at this line and applies nothing of the table.

## Example
```text
*filter
:INPUT ACCEPT [0:0]
INPUT -j ACCEPT
COMMIT
```

## Instead
```text
-A INPUT -j ACCEPT
```"
);

code!(
    MISSING_COMMIT,
    "RL103",
    "missing-commit",
    Error,
    "a table block is not closed by COMMIT: a truncated paste",
    "## What it flags
A `*table` block that ends (at the end of the text, or at the next `*table`) without `COMMIT`.

## Why it matters
`iptables-restore` applies a table only at its `COMMIT`. A dump without it is usually a paste that
was cut short: rules after the cut are missing from the analysis.

## Example
```text
*nat
:PREROUTING ACCEPT [0:0]
-A PREROUTING -j KUBE-SERVICES
```

## Instead
Paste the whole dump; every table ends with `COMMIT`."
);

code!(
    HEADERLESS_RULES,
    "RL104",
    "headerless-rules",
    Warning,
    "rules with no `*table` header: read as a fragment, the table inferred from names and targets",
    "## What it flags
Rules and chain declarations outside any `*table` block, as `iptables-save | grep KUBE-SVC-...`,
a partial copy or an `iptables -S` listing (`-P`, `-N`, `-A`) produce.

## Why it matters
The table a rule belongs to decides what it means. rulelint infers it from every chain name and
target (`KUBE-SVC-*`, `DNAT`, `MASQUERADE`: nat; `TPROXY`, `*_mangle` chains: mangle; `NOTRACK`:
raw; `REJECT`: likely filter) and says which it chose. Chains that jump to each other stay in one
table; a listing that declares its built-in chains is the smallest table that has them all
(`PREROUTING`, `INPUT`, `FORWARD`, `OUTPUT`, `POSTROUTING`: mangle). Lints that need the whole
dump (missing chains, unreferenced chains) are less certain, and a declared chain the fragment
shows no rule of is taken as unknown, not empty.

## Example
```text
-A KUBE-SVC-TCOU7JCQXEZGVUNU -m comment --comment \"kube-system/kube-dns:dns\" -j KUBE-SEP-AAAA
```

## Instead
Analyse the whole `iptables-save` output where you can."
);

code!(
    UNDECLARED_CHAIN,
    "RL105",
    "undeclared-chain",
    Error,
    "a rule is added to a user chain that its table does not declare",
    "## What it flags
`-A CHAIN ...` inside a `*table` block where `CHAIN` is neither a built-in chain of that table nor
declared with `:CHAIN - [0:0]` (or `-N CHAIN`).

## Why it matters
`iptables-restore` fails with `Chain 'CHAIN' does not exist` and applies nothing of the table.

## Example
```text
*nat
:PREROUTING ACCEPT [0:0]
-A KUBE-SERVICES -j KUBE-NODEPORTS
COMMIT
```

## Instead
```text
:KUBE-SERVICES - [0:0]
```"
);

code!(
    REPEATED_TABLE,
    "RL106",
    "repeated-table",
    Warning,
    "a table appears twice: two dumps back to back; the later block replaces the earlier",
    "## What it flags
A second `*table` block for a table that already had one in the same file.

## Why it matters
This is usually two `iptables-save` runs pasted one after the other (often from two nodes).
`iptables-restore` would apply both, the later replacing the earlier; rulelint analyses the later
block and marks the earlier one superseded.

## Example
```text
*nat
COMMIT
*nat
COMMIT
```

## Instead
One dump per file: `rulelint diff` compares two nodes."
);

code!(
    WRAPPED_RULE,
    "RL107",
    "wrapped-rule",
    Error,
    "a rule is wrapped onto the next line with a backslash",
    "## What it flags
A rule line that ends with `\\` and continues on the next, indented line, as people wrap long lines
by hand in notes.

## Why it matters
`iptables-save` never wraps lines and `iptables-restore` rejects them. rulelint joins the lines
and analyses the rule.

## Example
```text
-A KUBE-SERVICES -d 10.96.0.10/32 -p udp \\
	-m udp --dport 53 -j KUBE-SVC-TCOU7JCQXEZGVUNU
```

## Instead
One rule per line."
);

code!(
    UNKNOWN_TABLE,
    "RL108",
    "unknown-table",
    Error,
    "a `*table` header names a table that iptables does not have",
    "## What it flags
`*NAME` where NAME is not one of `raw`, `mangle`, `nat`, `filter`, `security`.

## Why it matters
`iptables-restore` fails: `can't initialize iptables table`.

## Example
```text
*nattt
```

## Instead
```text
*nat
```"
);

code!(
    INVALID_CHAIN_DECLARATION,
    "RL109",
    "invalid-chain-declaration",
    Error,
    "a chain declaration is malformed, has the wrong kind of policy, or repeats a chain",
    "## What it flags
A `:CHAIN POLICY [packets:bytes]` line with no policy, a policy that is not `ACCEPT`, `DROP` or
`-` on a built-in chain, a policy other than `-` on a user chain, or a chain declared twice in a
table. (`:INPUT - [0:0]` is valid restore input: it keeps the chain's current policy, and
kube-proxy writes it.)

## Why it matters
`iptables-restore` rejects the table.

## Example
```text
:KUBE-SERVICES ACCEPT [0:0]
```

## Instead
```text
:KUBE-SERVICES - [0:0]
```"
);

code!(
    MISSING_ARGUMENT,
    "RL110",
    "missing-argument",
    Error,
    "an option that needs an argument has none",
    "## What it flags
`-j`, `-g` or `-m` with no name after it, `-s`, `-d`, `-p`, `-i`, `-o` with no value, a module
or target option that needs a value and has none (`--comment`, `--dport`, `--reject-with`,
`--to-destination`, `--to-source`, `--to-ports`, `--set-xmark`, `--log-prefix`, `--on-port`,
`--tproxy-mark`, ...), or a verb (`-A`) with no chain.

## Why it matters
`iptables-restore` rejects the line; the rule's meaning is unknown.

## Example
```text
-A INPUT -s -j ACCEPT
-A INPUT -p tcp -j REJECT --reject-with
```

## Instead
```text
-A INPUT -s 10.0.0.0/8 -j ACCEPT
-A INPUT -p tcp -j REJECT --reject-with tcp-reset
```"
);

code!(
    UNTERMINATED_QUOTE,
    "RL111",
    "unterminated-quote",
    Error,
    "a quoted argument is not closed on its line",
    "## What it flags
A `\"` that opens an argument (usually `--comment`) with no closing `\"` before the end of the line.

## Why it matters
`iptables-restore` rejects the line. Often the sign of a paste cut in the middle of a line.

## Example
```text
-A INPUT -m comment --comment \"ssh from office -j ACCEPT
```

## Instead
Close the quote; escape quotes inside it as `\\\"`."
);

code!(
    INVALID_COUNTERS,
    "RL112",
    "invalid-counters",
    Error,
    "packet and byte counters are not `[digits:digits]`",
    "## What it flags
A `[packets:bytes]` prefix of a rule or suffix of a chain declaration that is not two decimal
numbers in brackets.

## Why it matters
`iptables-restore --counters` rejects the line.

## Example
```text
[12:abc] -A INPUT -j ACCEPT
```

## Instead
```text
[12:3456] -A INPUT -j ACCEPT
```"
);

code!(
    COMMIT_OUTSIDE_TABLE,
    "RL113",
    "commit-outside-table",
    Error,
    "a COMMIT with no open table",
    "## What it flags
`COMMIT` when no `*table` block is open, for example a second `COMMIT` in a row.

## Why it matters
`iptables-restore` rejects the file; the text around it was probably edited by hand.

## Example
```text
COMMIT
COMMIT
```

## Instead
One `COMMIT` closing each `*table`."
);

code!(
    NO_CONTENT,
    "RL114",
    "not-a-dump",
    Error,
    "the input holds no ruleset at all: no iptables-save, nftables or IPVS content",
    "## What it flags
Text with no table, chain declaration or rule: the wrong file, or the output of another command.

## Why it matters
There is nothing to analyse. The command line tool exits with status 2.

## Example
```text
NAME                     READY   STATUS    RESTARTS   AGE
coredns-5d78c9869d-6tq9x 1/1     Running   0          3d
```

## Instead
Run `iptables-save` (and `ip6tables-save`) on the node and analyse that."
);

code!(
    INPUT_TOO_LARGE,
    "RL115",
    "input-too-large",
    Error,
    "the input, or one word in it, is larger than rulelint reads",
    "## What it flags
Input of 4 GiB or more, or a single word (usually a quoted comment) of 64 KiB or more.

## Why it matters
These are not iptables-save output: the kernel limits comments to 256 bytes. rulelint skips
what it cannot hold instead of running out of memory.

## Example
A binary file, or a dump concatenated with a log file.

## Instead
Analyse the `iptables-save` output alone."
);

code!(
    UNEXPECTED_WORD,
    "RL116",
    "unexpected-word",
    Error,
    "a word in a rule is neither an option nor an option's argument",
    "## What it flags
A word that cannot belong to any option: a word before the first option, a `!` with no option
after it, a second `-j` target, or more words after an option that takes one value: most often
an unquoted comment or log prefix of several words (`--comment kubernetes service portals`).
rulelint still reads the rule, with the words as one value.

## Why it matters
`iptables-restore` rejects the line (`Bad argument`), and with it the whole table.

## Example
```text
-A INPUT ACCEPT -p tcp
-A INPUT -m comment --comment kubernetes service portals -j KUBE-SERVICES
```

## Instead
```text
-A INPUT -p tcp -j ACCEPT
-A INPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
```"
);

code!(
    INVALID_ADDRESS,
    "RL117",
    "invalid-address",
    Error,
    "a source or destination address is not a valid IPv4 or IPv6 address or network",
    "## What it flags
A `-s`/`-d` value that is neither an address nor `address/prefix` (or `address/netmask`): an
octet above 255, a prefix longer than the family allows, a malformed IPv6 address.

## Why it matters
`iptables-restore` rejects the line (`host/network not found`).

## Example
```text
-A INPUT -s 10.0.0.300/8 -j ACCEPT
```

## Instead
```text
-A INPUT -s 10.0.0.0/8 -j ACCEPT
```"
);

code!(
    PREFIXED_PASTE,
    "RL118",
    "prefixed-paste",
    Info,
    "every line of the dump carries a prefix (a quote mark, a log timestamp): read without it",
    "## What it flags
A dump whose lines all start with the same kind of prefix: quoted in Markdown or an e-mail
(`> `, `>> `), copied from a CI or test log (`# `, `+ `), or from `kubectl logs --timestamps` or
a container runtime's log file (`2024-05-02T10:11:12.123456789Z stdout F `). The prefix is
decided from the lines that look like a dump once it is read past; rulelint reads every line
without it, and reports this once. Positions in findings still point into the text as pasted.

## Why it matters
Nothing is wrong with the rules; `iptables-restore` would refuse the text as it is, and a prefix
that hides part of a line (a quoted line wrapped by a mail client) shows up as other findings.

## Example
```text
> *filter
> :INPUT ACCEPT [0:0]
> -A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
> COMMIT
```

## Instead
Analyse the dump as `iptables-save` printed it:
```text
*filter
:INPUT ACCEPT [0:0]
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
COMMIT
```

## Known problems
A container runtime splits lines longer than its limit (16 KiB) into partial entries (`P`);
rulelint reads each entry as its own line."
);

/// Every parser code, in code order.
pub const ALL: &[CodeInfo] = &[
    STRAY_TEXT,
    INVALID_LINE,
    MISSING_COMMIT,
    HEADERLESS_RULES,
    UNDECLARED_CHAIN,
    REPEATED_TABLE,
    WRAPPED_RULE,
    UNKNOWN_TABLE,
    INVALID_CHAIN_DECLARATION,
    MISSING_ARGUMENT,
    UNTERMINATED_QUOTE,
    INVALID_COUNTERS,
    COMMIT_OUTSIDE_TABLE,
    NO_CONTENT,
    INPUT_TOO_LARGE,
    UNEXPECTED_WORD,
    INVALID_ADDRESS,
    PREFIXED_PASTE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_documented() {
        let mut codes: Vec<_> = ALL.iter().map(|c| c.code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), ALL.len());
        for info in ALL {
            assert!(info.code.starts_with("RL1"), "{}", info.code);
            for heading in [
                "## What it flags",
                "## Why it matters",
                "## Example",
                "## Instead",
            ] {
                assert!(info.docs.contains(heading), "{} lacks {heading}", info.code);
            }
            assert!(!info.summary.ends_with('.'), "{}", info.code);
        }
    }
}
