//! RL455 unsynced-kube-proxy-table: kube-proxy's table has its base chains but no Service in
//! any of its maps: the first full sync did not complete.

use crate::nft::NftLint;
use crate::nft::context::{
    NO_ENDPOINT_NODEPORTS, NO_ENDPOINT_SERVICES, NftContext, NftFindings, SERVICE_IPS,
    SERVICE_NODEPORTS,
};
use crate::registry::Category;
use rulelint_nft::Severity;
use rulelint_parser::CodeInfo;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL455",
        name: "unsynced-kube-proxy-table",
        severity: Severity::Warning,
        summary: "kube-proxy's nftables table has base chains but no Service in its maps: a failed sync",
        docs: "## What it flags
A whole `table ip|ip6 kube-proxy` with base chains (`nat-prerouting`, `filter-input`, ...)
whose `service-ips`, `service-nodeports`, `no-endpoint-services` and `no-endpoint-nodeports`
maps hold no element at all, or are missing.

## Why it matters
Every cluster has at least the `default/kubernetes` Service, so kube-proxy writes at least one
element into `service-ips` (or, without endpoints, `no-endpoint-services`) on every full
sync. Base chains with empty maps mean the syncs fail after the table was set up: no Service
works on this node. Known causes: `nft` crashing on the transaction (kubernetes#136786,
#140898), a kernel without `CONFIG_NFT_FIB_IPV4` (the whole transaction fails on
`fib saddr type local`, siderolabs/pkgs#951).

## Example
```text
table ip kube-proxy {
	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
	}
	chain nat-prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		jump services
	}
	...
}
```

## Instead
Read kube-proxy's log for the failing `nft` transaction (`sync_proxy_rules_nftables_sync_failures_total`)
and fix its cause.

## Exceptions
Cut pastes and fragments are not read. A `table ip6 kube-proxy` of a single-stack IPv4
cluster is not flagged when it has no base chain.",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let set = cx.ruleset();
    for table in cx.kube_proxy_tables() {
        let t = &set.tables[table.index()];
        let base = t.chains.iter().find(|c| cx.chain(**c).base.is_some());
        let Some(&base) = base else {
            continue;
        };
        if !cx.is_complete(table) {
            continue;
        }
        let elements: usize = [
            SERVICE_IPS,
            SERVICE_NODEPORTS,
            NO_ENDPOINT_SERVICES,
            NO_ENDPOINT_NODEPORTS,
        ]
        .iter()
        .filter_map(|name| cx.set_in(table, name))
        .map(|s| cx.set(s).elements.len())
        .sum();
        if elements > 0 {
            continue;
        }
        let family = t.family_word.unwrap_or("ip");
        let header_end = set.text[t.span.start as usize..]
            .find('\n')
            .map_or(t.span.end as usize, |i| t.span.start as usize + i)
            .min(t.span.end as usize);
        out.push(
            out.diagnostic(rulelint_nft::Span::new(t.span.start as usize, header_end), format!("table {family} kube-proxy has base chains but no Service in service-ips, service-nodeports or the no-endpoint maps: kube-proxy's syncs are failing"))
                .with_label(format!("base chain {} is hooked, the maps are empty", cx.chain(base).name))
                .with_help("every cluster has the default/kubernetes Service; read kube-proxy's log for the failing nft transaction (nft crashes, a kernel without CONFIG_NFT_FIB_IPV4)"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::lints::testing::{HEALTHY, assert_cases};

    #[test]
    fn cases() {
        let empty = HEALTHY
            .replace(
                "\t\telements = { 172.30.0.46 . tcp . 80 comment \"ns6/svc6:p80\" : goto reject-chain }\n",
                "",
            )
            .replace(
                "\t\telements = { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }\n",
                "",
            );
        let only_no_endpoints = HEALTHY.replace(
            "\t\telements = { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }\n",
            "",
        );
        let cut = &empty[..empty.len() - 2];
        let set_up_only = "table ip6 kube-proxy {\n\tcomment \"rules for kube-proxy\"\n}\n";
        let no_maps = "table ip kube-proxy {\n\tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t}\n}\n";
        assert_cases(
            &LINT,
            &[HEALTHY, &only_no_endpoints, cut, set_up_only],
            &[(&empty, 1), (no_maps, 1)],
        );
    }
}
