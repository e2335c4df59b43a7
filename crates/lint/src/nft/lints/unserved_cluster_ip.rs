//! RL461 unserved-cluster-ip: an address of kube-proxy's `cluster-ips` set that neither
//! `service-ips` nor `no-endpoint-services` has for any port.

use crate::nft::NftLint;
use crate::nft::context::{NO_ENDPOINT_SERVICES, NftContext, NftFindings, SERVICE_IPS};
use crate::registry::Category;
use rulelint_nft::{Expr, Severity};
use rulelint_parser::CodeInfo;
use rustc_hash::FxHashSet;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL461",
        name: "unserved-cluster-ip",
        severity: Severity::Warning,
        summary: "a ClusterIP in kube-proxy's cluster-ips set has no entry in service-ips or no-endpoint-services",
        docs: "## What it flags
In a whole `table ip|ip6 kube-proxy`, an element of the `cluster-ips` set that is not the
address of any element of `service-ips` or `no-endpoint-services` (for any protocol and port).

## Why it matters
`cluster-ips-check` rejects new connections to a ClusterIP on a port no Service serves
(`ip daddr @cluster-ips reject`). kube-proxy writes every Service port either into
`service-ips` (it has endpoints) or `no-endpoint-services` (it has none), in the same sync in
which it writes the ClusterIP into `cluster-ips`. An address with neither is rejected on every
port: the sync was partial, or the maps were edited.

## Example
```text
set cluster-ips {
	type ipv4_addr
	elements = { 172.30.0.41, 172.30.0.99 }
}
```
with no `172.30.0.99 . tcp . PORT` element in either map.

## Instead
Restart kube-proxy so that it rewrites its table; look for failed syncs in its log.

## Exceptions
Cut pastes are not read; when both maps are empty the sync failed as a whole, which is
`RL455 unsynced-kube-proxy-table`'s to report; nor are tables without a `cluster-ips` set (layouts before
kubernetes#122692).",
    },
    category: Category::Correctness,
    check,
};

const CLUSTER_IPS: &str = "cluster-ips";

fn first_part<'a>(key: &Expr<'a>) -> Option<&'a str> {
    match key {
        Expr::Concat(parts) => match parts.first() {
            Some(Expr::Literal(s)) => Some(*s),
            _ => None,
        },
        Expr::Literal(s) => Some(*s),
        _ => None,
    }
}

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    for table in cx.kube_proxy_tables() {
        if !cx.is_complete(table) {
            continue;
        }
        let (Some(cluster), Some(dispatch), Some(rejecting)) = (
            cx.set_in(table, CLUSTER_IPS),
            cx.set_in(table, SERVICE_IPS),
            cx.set_in(table, NO_ENDPOINT_SERVICES),
        ) else {
            continue;
        };
        let served: FxHashSet<&str> = [dispatch, rejecting]
            .iter()
            .flat_map(|&m| cx.set(m).elements.iter())
            .filter_map(|e| first_part(&e.key))
            .collect();
        // Both maps empty is a failed sync, `RL455 unsynced-kube-proxy-table`'s.
        if served.is_empty() {
            continue;
        }
        for element in &cx.set(cluster).elements {
            let Expr::Literal(address) = &element.key else {
                continue;
            };
            if served.contains(address) {
                continue;
            }
            out.push(
                out.diagnostic(element.span, format!("ClusterIP {address} has no entry in service-ips or no-endpoint-services: cluster-ips-check rejects it on every port"))
                    .with_label("member of cluster-ips")
                    .with_help("kube-proxy writes each Service port into one of the two maps in the sync that adds its ClusterIP; restart it to rewrite its table, and look for failed syncs in its log"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::lints::testing::{HEALTHY, assert_cases};

    #[test]
    fn cases() {
        let unserved = HEALTHY.replace(
            "elements = { 172.30.0.41, 172.30.0.46 }",
            "elements = { 172.30.0.41, 172.30.0.46, 172.30.0.99 }",
        );
        let cut = &unserved[..unserved.len() - 2];
        let no_set = HEALTHY.replace(
            "\tset cluster-ips {\n\t\ttype ipv4_addr\n\t\telements = { 172.30.0.41, 172.30.0.46 }\n\t}\n",
            "",
        );
        assert_cases(&LINT, &[HEALTHY, cut, &no_set], &[(&unserved, 1)]);
    }
}
