//! The catalogue of the IPVS-state readers' diagnostics: codes `RL171`..`RL179` of layer
//! `RL1xx`, "the text is not (entirely) what the tool printed". The iptables parser owns
//! `RL101`..`RL118`, the nft parser `RL151`..`RL169`.
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
    "RL171",
    "ipvs-stray-text",
    Warning,
    "text in an ipvsadm, ipset or ip addr section that none of these tools prints",
    "## What it flags
Lines inside a part of the file read as `ipvsadm`, `ipset` or `ip addr` output that none of
these tools prints: prose, another command's output, an error message. One diagnostic covers a
run of such lines. Shell prompts that run one of the tools (`[root@node ~]# ipvsadm -Ln`) and
`#` comments are skipped silently.

## Why it matters
rulelint skips the lines and reads the rest; if they were meant to be part of the output, what
they held is not checked.

## Example
```text
IP Virtual Server version 1.2.1 (size=4096)
Can't initialize ipvs: Protocol not available
```

## Instead
Paste each tool's output whole, one after the other:
`iptables-save; ipset save; ipvsadm -Ln; ip addr show kube-ipvs0`."
);

code!(
    MALFORMED_LINE,
    "RL172",
    "ipvs-malformed-line",
    Warning,
    "a line of ipvsadm, ipset or ip addr output that does not have the shape the tool prints",
    "## What it flags
A line that starts like one of the tools' lines but does not continue like it: a virtual
server line without an address, a real server line (`  -> ...`) before any virtual server, an
`ipvsadm-save` line without `-t`/`-u`/`-f`, an ipset member that is neither an address, a port,
nor `address,proto:port[,address]`, an `ip addr` address line outside an interface.

## Why it matters
rulelint skips the line; the virtual server, real server or member it held is not checked, and
checks that need it may miss something.

## Example
```text
  -> 10.244.0.4:80                Masq    1      0          0
TCP  10.96.0.1:443 rr
```

## Instead
Paste the tool's output unchanged, from its first line (`IP Virtual Server version ...`,
`create ...`, `Name: ...`)."
);

code!(
    NAMES_RESOLVED,
    "RL173",
    "ipvsadm-names-resolved",
    Warning,
    "ipvsadm printed host and service names instead of addresses and ports: the checks that need them are skipped",
    "## What it flags
`ipvsadm -L` without `-n` (or `ipvsadm-save` without `-n`): addresses replaced by host names
and ports by service names, then cut to 33 (virtual server) and 28 (real server) characters
(`TCP  ip-10-0-62-121.ec2.internal: rr`, `-> 100.99.43.2:bacula-fd`). One diagnostic per file,
at the first such line.

## Why it matters
The names cannot be turned back into addresses: every check that compares virtual servers with
the ipsets, `kube-ipvs0` or the node's pod network skips the servers that have them. Listing
with names is also slow: one reverse DNS lookup per address.

## Example
```text
TCP  ip-10-0-62-121.ec2.internal: rr
  -> 100.98.125.10:http           Masq    1      2          14
```

## Instead
Run `ipvsadm -Ln` (or `ipvsadm-save -n`)."
);

code!(
    CUT_OUTPUT,
    "RL174",
    "ipvs-output-cut",
    Info,
    "the output was cut: an ipset lists fewer members than declared, or the text ends inside a line",
    "## What it flags
An `ipset list` block whose `Number of entries:` is larger than the number of members listed
after `Members:`; `add` lines of a set whose `create` line is not in the text; a last line
without a newline that holds a virtual server, real server, member or address (a paste cut
there may have cut the address or port: the line is not read).

## Why it matters
The missing members cannot be checked, and checks that look for a member in this set skip it,
so that a member that is only cut off is not reported missing.

## Example
```text
Name: KUBE-CLUSTER-IP
Type: hash:ip,port
Number of entries: 143
Members:
10.68.135.246,tcp:39080
```

## Instead
Save the whole output to a file (`ipset save > node.ipset`) rather than copying it from a
terminal."
);

/// Every code of this crate, in code order.
pub const ALL: &[CodeInfo] = &[STRAY_TEXT, MALFORMED_LINE, NAMES_RESOLVED, CUT_OUTPUT];
