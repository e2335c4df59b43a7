//! RL456 kube-proxy-in-both-backends: kube-proxy's nftables table has Services while
//! kube-proxy's iptables-mode Service chains hold rules too, in the same file.

use crate::nft::NftLint;
use crate::nft::context::{NftContext, NftFindings, SERVICE_IPS};
use crate::registry::Category;
use rulelint_nft::Severity;
use rulelint_parser::CodeInfo;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL456",
        name: "kube-proxy-in-both-backends",
        severity: Severity::Warning,
        summary: "kube-proxy's nftables table and its iptables-mode Service chains both hold Services",
        docs: "## What it flags
A file (one node's `iptables-save` and `nft list ruleset`, or an `nft list ruleset` that also
shows iptables-nft's tables) in which `table ip|ip6 kube-proxy` has elements in `service-ips`
and a `KUBE-SVC-*` or `KUBE-SEP-*` chain has rules.

## Why it matters
kube-proxy in nftables mode deletes the iptables-mode rules when it starts, and in iptables
mode deletes its nftables table. Both populated means two kube-proxies (a DaemonSet and a
static pod, two versions during an upgrade), or a failed cleanup after a mode change: Service
traffic is DNATed by whichever hook runs first, and the stale set keeps endpoints that no
longer exist.

## Example
```text
-A KUBE-SVC-ULMVA6XWTTTTTTTT -j KUBE-SEP-5OJB2KTYTTTTTTTT
...
table ip kube-proxy {
	map service-ips {
		elements = { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
	}
}
```

## Instead
Run one kube-proxy per node, in one mode. After changing the mode, let the new kube-proxy
clean up (it does on start), or run `kube-proxy --cleanup` with the old mode.

## Exceptions
Empty `KUBE-*` chains next to an nftables kube-proxy (left by kubelet or a CNI) are not
flagged.",
    },
    category: Category::Suspicious,
    check,
};

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let set = cx.ruleset();
    // The iptables side: iptables-save in the same file, or iptables-nft's tables in this listing.
    let listed = set.chains.iter().find(|c| {
        (c.name.starts_with("KUBE-SVC-") || c.name.starts_with("KUBE-SEP-")) && !c.rules.is_empty()
    });
    let other = match (&cx.iptables().kube_proxy_chain, listed) {
        (Some((name, line)), _) => format!("iptables chain {name} on line {line} of the file"),
        (None, Some(c)) => format!(
            "iptables-nft chain {} on line {} of this listing",
            c.name,
            cx.line(c.span.start)
        ),
        (None, None) => return,
    };
    for table in cx.kube_proxy_tables() {
        let Some(map) = cx.set_in(table, SERVICE_IPS) else {
            continue;
        };
        let map = cx.set(map);
        if map.elements.is_empty() {
            continue;
        }
        out.push(
            out.diagnostic(cx.span_or(map.name, map.span), format!("kube-proxy's nftables table dispatches Services ({} in service-ips) while its iptables-mode rules are also present ({other})", map.elements.len()))
                .with_label("nftables-mode Services")
                .with_help("run one kube-proxy per node in one mode; after a mode change, the new kube-proxy deletes the old rules on start, or run `kube-proxy --cleanup` with the old mode"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::context::IptablesFacts;
    use crate::nft::lints::testing::{HEALTHY, assert_cases, run_with};

    #[test]
    fn cases() {
        let listed_iptables = format!(
            "{HEALTHY}table ip nat {{\n\tchain KUBE-SVC-ULMVA6XWTTTTTTTT {{\n\t\tcounter packets 0 bytes 0 jump KUBE-SEP-5OJB2KTYTTTTTTTT\n\t}}\n\tchain KUBE-SEP-5OJB2KTYTTTTTTTT {{\n\t}}\n}}\n"
        );
        let empty_kube_chains = "table ip nat {\n\tchain KUBE-SERVICES {\n\t}\n\tchain KUBE-SVC-ULMVA6XWTTTTTTTT {\n\t}\n}\n";
        assert_cases(
            &LINT,
            &[HEALTHY, &format!("{HEALTHY}{empty_kube_chains}")],
            &[(&listed_iptables, 1)],
        );
        let facts = IptablesFacts {
            kube_proxy_chain: Some(("KUBE-SVC-ULMVA6XWTTTTTTTT".into(), 7)),
        };
        assert_eq!(run_with(&LINT, HEALTHY, &facts).len(), 1);
        let no_services = HEALTHY.replace(
            "\t\telements = { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }\n",
            "",
        );
        assert!(run_with(&LINT, &no_services, &facts).is_empty());
    }
}
