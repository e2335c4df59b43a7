//! RL462 nft-ruleset-scale: kube-proxy's nftables table is large enough that its syncs and
//! listings get slow.

use crate::nft::NftLint;
use crate::nft::context::{NftContext, NftFindings, SERVICE_IPS, SERVICE_NODEPORTS};
use crate::registry::Category;
use rulelint_nft::Severity;
use rulelint_parser::CodeInfo;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL462",
        name: "nft-ruleset-scale",
        severity: Severity::Info,
        summary: "kube-proxy's nftables table is large: more than 5,000 Service destinations or 50,000 chains",
        docs: "## What it flags
A `table ip|ip6 kube-proxy` with more than 5,000 elements in `service-ips` and
`service-nodeports` together, or more than 50,000 chains (one per Service port and one per
endpoint).

## Why it matters
nftables mode scales far better than iptables mode per packet (one map lookup instead of a
chain walk), but the size of a sync still grows with the table: 5,006 Services with 250,000
endpoints took 13-minute syncs (kubernetes#135639), and `nft list table ip kube-proxy` of
45,000 Services takes 40 s (kubernetes#139513). It is information, not an error.

## Example
A node with 6,000 Services.

## Instead
Watch kube-proxy's sync duration (`sync_proxy_rules_duration_seconds`); keep kube-proxy
current (each release reduces the per-Service cost).",
    },
    category: Category::Performance,
    check,
};

const DESTINATIONS: usize = 5_000;
const CHAINS: usize = 50_000;

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    for table in cx.kube_proxy_tables() {
        let t = &cx.ruleset().tables[table.index()];
        let destinations: usize = [SERVICE_IPS, SERVICE_NODEPORTS]
            .iter()
            .filter_map(|m| cx.set_in(table, m))
            .map(|m| cx.set(m).elements.len())
            .sum();
        let chains = t.chains.len();
        if destinations <= DESTINATIONS && chains <= CHAINS {
            continue;
        }
        // The table's first line, searched for within the table only: a JSON ruleset is one
        // line of megabytes.
        let (start, span_end) = (t.span.start as usize, t.span.end as usize);
        let end = cx
            .ruleset()
            .text
            .get(start..span_end)
            .and_then(|table| table.find('\n'))
            .map_or(span_end, |i| start + i);
        out.push(
            out.diagnostic(rulelint_nft::Span::new(start, end), format!("kube-proxy's table holds {destinations} Service destinations and {chains} chains"))
                .with_label("kube-proxy's table")
                .with_help("watch kube-proxy's sync duration (sync_proxy_rules_duration_seconds); large tables sync slowly (kubernetes#135639)"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::lints::testing::{HEALTHY, assert_cases};

    #[test]
    fn cases() {
        let elements: Vec<String> = (0..=DESTINATIONS)
            .map(|i| format!("10.{}.{}.1 . tcp . 80 : goto services", i / 256, i % 256))
            .collect();
        let large = format!(
            "table ip kube-proxy {{\n\tmap service-ips {{\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\t\telements = {{ {} }}\n\t}}\n\tchain services {{\n\t}}\n}}\n",
            elements.join(",\n\t\t\t")
        );
        let at_limit = large.replacen(&format!("{},\n\t\t\t", elements[0]), "", 1);
        assert_cases(&LINT, &[HEALTHY, &at_limit], &[(&large, 1)]);
    }
}
