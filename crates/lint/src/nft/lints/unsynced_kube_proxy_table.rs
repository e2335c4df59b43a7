//! RL455 unsynced-kube-proxy-table: kube-proxy's table has its base chains but no Service in
//! any of its maps (the first full sync did not complete), or its IPv4 table is absent beside a
//! set-up IPv6 one.

use crate::nft::NftLint;
use crate::nft::context::{
    NO_ENDPOINT_NODEPORTS, NO_ENDPOINT_SERVICES, NftContext, NftFindings, SERVICE_IPS,
    SERVICE_NODEPORTS,
};
use crate::registry::Category;
use rulelint_nft::{ChainId, Family, Severity, Span, TableId};
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

As info: a listing with a `table ip6 kube-proxy` that is set up (base chains hooked) and
serves Services, and no `table ip kube-proxy`. kube-proxy's nftables mode always runs both
families (it assumes the kernel supports both: `platformCheckSupported` in
`cmd/kube-proxy/app/server_linux.go`), so a whole `nft list ruleset` of its node holds both.

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
Cut pastes and fragments are not read. An empty table is not flagged when the other family's
table serves Services (a single-stack cluster: default/kubernetes is in the other family), nor
an empty `table ip6 kube-proxy` pasted alone (most clusters are IPv4). The absent IPv4 table is
info only, and only from a listing: a paste of `nft list table ip6 kube-proxy` looks the same,
and a transaction holds one family by design.",
    },
    category: Category::Correctness,
    check,
};

/// Elements in the four maps that dispatch Service traffic: how many Service destinations the
/// table serves.
fn services(cx: &NftContext<'_, '_>, table: TableId) -> usize {
    [
        SERVICE_IPS,
        SERVICE_NODEPORTS,
        NO_ENDPOINT_SERVICES,
        NO_ENDPOINT_NODEPORTS,
    ]
    .iter()
    .filter_map(|name| cx.set_in(table, name))
    .map(|s| cx.set(s).elements.len())
    .sum()
}

/// The first base chain of a table kube-proxy has set up.
fn base_chain(cx: &NftContext<'_, '_>, table: TableId) -> Option<ChainId> {
    let t = &cx.ruleset().tables[table.index()];
    t.chains
        .iter()
        .copied()
        .find(|c| cx.chain(*c).base.is_some())
}

/// The table's header line.
fn header(cx: &NftContext<'_, '_>, table: TableId) -> Span {
    let set = cx.ruleset();
    let t = &set.tables[table.index()];
    let header_end = set.text[t.span.start as usize..]
        .find('\n')
        .map_or(t.span.end as usize, |i| t.span.start as usize + i)
        .min(t.span.end as usize);
    Span::new(t.span.start as usize, header_end)
}

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let set = cx.ruleset();
    let tables: Vec<TableId> = cx.kube_proxy_tables().collect();
    let family = |t: TableId| set.tables[t.index()].family;
    for &table in &tables {
        let Some(base) = base_chain(cx, table) else {
            continue;
        };
        if !cx.is_complete(table) || services(cx, table) > 0 {
            continue;
        }
        // kube-proxy's nftables mode always runs both families, and default/kubernetes is
        // in the cluster's primary one: an empty side is normal when the other side serves,
        // and unknown when the other side was not pasted, unless this side is IPv4 (most
        // clusters).
        let other = tables.iter().find(|&&o| family(o) != family(table));
        match other {
            Some(&o) if services(cx, o) > 0 => continue,
            None if family(table) == Some(Family::Ip6) => continue,
            _ => {}
        }
        let family = set.tables[table.index()].family_word.unwrap_or("ip");
        out.push(
            out.diagnostic(header(cx, table), format!("table {family} kube-proxy has base chains but no Service in service-ips, service-nodeports or the no-endpoint maps: kube-proxy's syncs are failing"))
                .with_label(format!("base chain {} is hooked, the maps are empty", cx.chain(base).name))
                .with_help("every cluster has the default/kubernetes Service; read kube-proxy's log for the failing nft transaction (nft crashes, a kernel without CONFIG_NFT_FIB_IPV4)"),
        );
    }
    // The IPv4 table absent beside an IPv6 one that syncs Services. Only from a listing (a
    // transaction holds one family by design) and as info: a paste of one table looks the same.
    if let [ip6] = tables[..]
        && family(ip6) == Some(Family::Ip6)
        && cx.is_complete(ip6)
        && cx.is_listed(ip6)
        && services(cx, ip6) > 0
        && let Some(base) = base_chain(cx, ip6)
    {
        let mut d = out
            .diagnostic(header(cx, ip6), "table ip6 kube-proxy is set up but there is no table ip kube-proxy: kube-proxy's nftables mode writes both on every node")
            .with_label(format!("base chain {} of the IPv6 side is hooked", cx.chain(base).name))
            .with_help("if this is the whole `nft list ruleset`, kube-proxy never set up its IPv4 side: read its log for the failing nft transaction; if you pasted one table, paste the whole ruleset");
        d.severity = Severity::Info;
        out.push(d);
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
        // The ip6 side of an IPv4 single-stack cluster: set up, empty.
        let ip6_empty = no_maps.replace("table ip kube-proxy", "table ip6 kube-proxy");
        let ip6_serving = ip6_empty.replace(
            "\t}\n}\n",
            "\t}\n\tmap service-ips {\n\t\ttype ipv6_addr . inet_proto . inet_service : verdict\n\t\telements = { fd00::1 . tcp . 443 : goto reject-chain }\n\t}\n\tchain reject-chain {\n\t\treject\n\t}\n}\n",
        );
        let single_stack = format!("{HEALTHY}{ip6_empty}");
        let both_empty = format!("{empty}{ip6_empty}");
        // (A transaction, which holds one family by design, is a corpus case.)
        assert_cases(
            &LINT,
            &[&single_stack, &ip6_empty],
            &[(&both_empty, 2), (&ip6_serving, 1)],
        );
    }
}
