//! RL453 rejected-service-key: a Service destination that kube-proxy both dispatches
//! (`service-ips`, `service-nodeports`) and rejects as having no endpoints
//! (`no-endpoint-services`, `no-endpoint-nodeports` with `goto reject-chain`).

use crate::nft::NftLint;
use crate::nft::context::{
    NO_ENDPOINT_NODEPORTS, NO_ENDPOINT_SERVICES, NftContext, NftFindings, SERVICE_IPS,
    SERVICE_NODEPORTS, push_key_text,
};
use crate::registry::Category;
use rulelint_nft::{Severity, Value, VerdictKind};
use rulelint_parser::CodeInfo;
use rustc_hash::FxHashMap;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL453",
        name: "rejected-service-key",
        severity: Severity::Error,
        summary: "a Service address and port is both dispatched to endpoints and rejected as having none",
        docs: "## What it flags
In `table ip|ip6 kube-proxy`, a key of `service-ips` that is also in `no-endpoint-services`, or
a key of `service-nodeports` that is also in `no-endpoint-nodeports`, when the no-endpoint
element does not `drop` (kube-proxy's reject is `goto reject-chain`).

## Why it matters
The nat chains DNAT new connections to the Service's endpoints, but the filter chains run the
no-endpoint map on the original destination first for traffic that is not DNATed (and on
input/output/forward hooks for the rest): connections to a Service that has endpoints are
rejected. kube-proxy writes a key into exactly one of the two maps in one sync; both means a
half-applied sync or two writers.

## Example
```text
map no-endpoint-services {
	elements = { 172.30.0.41 . tcp . 80 comment \"ns1/svc1:p80\" : goto reject-chain }
}
map service-ips {
	elements = { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
}
```

## Instead
Restart kube-proxy so that it rewrites the table, and look for a second writer.

## Exceptions
A `drop` element is not flagged: for a Service with `externalTrafficPolicy: Local` (or
`internalTrafficPolicy: Local`) and no endpoint on this node, kube-proxy writes the key into
both maps on purpose: `service-ips` short-circuits pod and host traffic to the cluster-wide
endpoints, `no-endpoint-services` drops the rest (kube-proxy's `TestOverallNFTablesRules`).",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    for table in cx.kube_proxy_tables() {
        for (dispatch, rejecting) in [
            (SERVICE_IPS, NO_ENDPOINT_SERVICES),
            (SERVICE_NODEPORTS, NO_ENDPOINT_NODEPORTS),
        ] {
            let (Some(dispatch), Some(rejecting)) =
                (cx.set_in(table, dispatch), cx.set_in(table, rejecting))
            else {
                continue;
            };
            if !(cx.set(dispatch).closed && cx.set(rejecting).closed) {
                continue;
            }
            let dispatch = cx.set(dispatch);
            // The dispatch map's key texts in one buffer, then indexed: no `String` per key.
            let mut texts = String::new();
            let mut keys: Vec<(std::ops::Range<usize>, usize)> =
                Vec::with_capacity(dispatch.elements.len());
            for (i, element) in dispatch.elements.iter().enumerate() {
                let start = texts.len();
                if push_key_text(&element.key, &mut texts) {
                    keys.push((start..texts.len(), i));
                } else {
                    texts.truncate(start);
                }
            }
            let mut dispatched: FxHashMap<&str, usize> =
                FxHashMap::with_capacity_and_hasher(keys.len(), Default::default());
            for (range, i) in keys {
                dispatched.entry(&texts[range]).or_insert(i);
            }
            let mut key = String::new();
            let rejecting = cx.set(rejecting);
            for element in &rejecting.elements {
                let Some(Value::Verdict(verdict)) = &element.value else {
                    continue;
                };
                if verdict.kind == VerdictKind::Drop {
                    continue;
                }
                key.clear();
                if !push_key_text(&element.key, &mut key) {
                    continue;
                }
                let Some(&i) = dispatched.get(key.as_str()) else {
                    continue;
                };
                let line = cx.line(dispatch.elements[i].span.start);
                let what = element.comment.map_or(String::new(), |c| format!(" ({c})"));
                let verdict_text = match verdict.target {
                    Some(t) => format!("{} {t}", verdict.kind.as_str()),
                    None => verdict.kind.as_str().to_string(),
                };
                out.push(
                    out.diagnostic(element.span, format!("{key}{what} is in {} and in {}: connections to it are rejected although it has endpoints", dispatch.name, rejecting.name))
                        .with_label(format!("{verdict_text}; the {} element is on line {line}", dispatch.name))
                        .with_help("kube-proxy writes a key into one of the two maps per sync: restart it to rewrite the table, and look for a second writer or a failed transaction"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::lints::testing::{HEALTHY, assert_cases};

    #[test]
    fn cases() {
        let rejected = HEALTHY.replace(
            "elements = { 172.30.0.46 . tcp . 80 comment \"ns6/svc6:p80\" : goto reject-chain }",
            "elements = { 172.30.0.46 . tcp . 80 comment \"ns6/svc6:p80\" : goto reject-chain,\n\t\t\t     172.30.0.41 . tcp . 80 comment \"ns1/svc1:p80\" : goto reject-chain }",
        );
        let dropped = rejected.replace(
            "\"ns1/svc1:p80\" : goto reject-chain",
            "\"ns1/svc1:p80\" : drop",
        );
        let other_port = rejected.replace(
            "172.30.0.41 . tcp . 80 comment",
            "172.30.0.41 . tcp . 443 comment",
        );
        let other_table = rejected.replace("table ip kube-proxy", "table ip other");
        assert_cases(
            &LINT,
            &[HEALTHY, &dropped, &other_port, &other_table],
            &[(&rejected, 1)],
        );
    }
}
