//! RL203 unreferenced-chain: a user chain nothing jumps to.

use crate::context::{Findings, LintContext};
use crate::known::{is_kube_service_chain, is_unreferenced_by_design};
use crate::lints::missing_hook_jump::expects_hook_to;
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, Severity};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL203",
        name: "unreferenced-chain",
        severity: Severity::Info,
        summary: "a user chain that no rule jumps to, so its rules never see a packet",
        docs: "## What it flags
A user-defined chain of a table that no `-j` or `-g` of that table names.

## Why it matters
Its rules never run. Usually it is a leftover: a component that was removed or reconfigured
deleted its jump but not its chain, or the jump was lost. Either way the ruleset does less than
it seems to.

## Example
```text
*filter
:INPUT ACCEPT [0:0]
:OLD-SSH-LIMIT - [0:0]
-A OLD-SSH-LIMIT -p tcp --dport 22 -m recent --update --seconds 60 --hitcount 4 -j DROP
COMMIT
```

## Instead
Delete the chain (`iptables -F OLD-SSH-LIMIT; iptables -X OLD-SSH-LIMIT`), or restore the jump
that should reach it. To keep a chain on purpose, list it in `rulelint.toml`:
`[lints.unreferenced-chain] allow-chains = [\"OLD-SSH-LIMIT\"]`.

## Exceptions
Kubernetes service and endpoint chains (`KUBE-SVC-*`, `KUBE-SEP-*`, `KUBE-EXT-*`, `KUBE-FW-*`,
`KUBE-SVL-*`) are left to the Kubernetes lints, which name the Service, and so are the chains
kube-proxy and kubelet hook into the built-in chains (`KUBE-SERVICES`, `KUBE-FORWARD`,
`KUBE-FIREWALL`, ...) on a Kubernetes node: `RL402 missing-hook-jump` names the jumps they lack. Some chains are never
jumped to by design: the canary chains of kubelet and kube-proxy (`KUBE-KUBELET-CANARY`,
`KUBE-PROXY-CANARY`), kubelet's `KUBE-IPTABLES-HINT`, the marking chains `KUBE-MARK-MASQ`,
`KUBE-MARK-DROP` and `CNI-HOSTPORT-SETMARK` (installed up front, jumped to once a Service or a
host port needs them), and ufw's chains for settings that are
off (`ufw-logging-*`, `ufw-skip-to-policy-*`, ...). Partial tables are not checked: headerless
fragments, and iptables-restore input that does not declare the table's built-in chains.",
    },
    category: Category::Unused,
    check,
};

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let graph = cx.graph();
    for table in cx.tables() {
        if !cx.is_complete(table) {
            continue;
        }
        for chain in table.chains() {
            let name = chain.name();
            if chain.get().builtin
                || is_kube_service_chain(name)
                || is_unreferenced_by_design(name)
                // A chain that only jumps to itself is still unreferenced.
                || graph.jumps_into(chain.id).any(|(from, _)| from != chain.id)
                // kube-proxy's and kubelet's hook chains: RL402 reports the missing jumps.
                || expects_hook_to(cx, chain)
            {
                continue;
            }
            let rules = chain.rule_count();
            // The table is named: `DOCKER` is in nat and in filter, often empty in both.
            let table_name = table.name();
            let message = match rules {
                0 => format!("{table_name} chain `{name}` is empty and nothing jumps to it"),
                1 => format!("nothing jumps to {table_name} chain `{name}`: its rule never runs"),
                n => {
                    format!("nothing jumps to {table_name} chain `{name}`: its {n} rules never run")
                }
            };
            out.push(
                out.diagnostic(cx.chain_span(chain), message)
                    .with_label("no rule of this table jumps to this chain")
                    .with_help(format!(
                        "if it is a leftover, delete it (`iptables -t {0} -F {name}; iptables -t {0} -X {name}`); otherwise restore the jump that should reach it",
                        table.name()
                    ))
                    .in_chain(table.id, chain.id),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter};

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                &filter(":A - [0:0]\n:B - [0:0]\n-A INPUT -j A\n-A A -g B\n"),
                &filter(
                    ":KUBE-KUBELET-CANARY - [0:0]\n:KUBE-SVC-NPX46M4PTMTKRN6Y - [0:0]\n:ufw-logging-allow - [0:0]\n",
                ),
                "-A LEFTOVER -j DROP\n",
                // Restore input: the jump to KUBE-SERVICES is installed by another command.
                "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -j RETURN\nCOMMIT\n",
                // An unhooked KUBE-FORWARD on a Kubernetes node is RL402's.
                &filter(
                    ":KUBE-FIREWALL - [0:0]\n:KUBE-FORWARD - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A OUTPUT -j KUBE-FIREWALL\n-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP\n",
                ),
            ],
            &[
                (&filter(":OLD - [0:0]\n-A OLD -j DROP\n"), 1),
                // Not a chain kube-proxy hooks into a built-in chain.
                (
                    &filter(
                        ":KUBE-FIREWALL - [0:0]\n:KUBE-ROUTER-OLD - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A OUTPUT -j KUBE-FIREWALL\n-A KUBE-ROUTER-OLD -j RETURN\n",
                    ),
                    1,
                ),
                (&filter(":EMPTY - [0:0]\n:A - [0:0]\n-A A -j A\n"), 2),
            ],
        );
    }
}
