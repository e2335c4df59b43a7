//! RL451 dangling-verdict-target: a verdict-map element (named map or `numgen ... vmap`) that
//! sends packets to a chain that does not exist, or to an empty kube-proxy Service chain.

use crate::nft::NftLint;
use crate::nft::context::{NftContext, NftFindings};
use crate::registry::Category;
use rulelint_nft::{
    ChainId, Element, Expr, Node, RuleId, Severity, Stmt, TableId, Value, Verdict, Via,
};
use rulelint_parser::CodeInfo;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL451",
        name: "dangling-verdict-target",
        severity: Severity::Error,
        summary: "a verdict-map element goes to a chain that is missing, or to an empty kube-proxy Service chain",
        docs: "## What it flags
- An element of a verdict map (`map service-ips { ... : goto service-X }`) or of an anonymous
  one in a rule (`numgen random mod 2 vmap { 0 : goto endpoint-A, ... }`) whose `jump`/`goto`
  names a chain the table does not have.
- In `table ip|ip6 kube-proxy`, such an element going to one of kube-proxy's Service or
  endpoint chains (`service-`, `external-`, `local-`, `firewall-`, `endpoint-` with a `/` in
  the name) that has no rule.

## Why it matters
`nft -f` refuses a map element naming a missing chain, so a listing that has one was edited
or cut. kube-proxy flushes a Service's chains in the same transaction that removes the map
elements pointing at them, so an element going to an empty chain means a partial sync or a
hand edit: the packets `goto` the empty chain, nothing DNATs them, and they go on to the
original (virtual) destination, which answers nothing.

## Example
```text
map service-ips {
	type ipv4_addr . inet_proto . inet_service : verdict
	elements = { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
}
chain service-ULMVA6XW-ns1/svc1/tcp/p80 {
}
```

## Instead
Let kube-proxy rewrite its table: restart it (it recreates the whole table on its first sync),
and look in its log for failed `nft` transactions.

## Exceptions
Tables cut short (`RL153`) and headerless fragments (`RL155`) are not read: the chain may be in
the missing part. Empty chains that no element references are `RL457 stale-service-chain`'s.",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let set = cx.ruleset();
    let walked = cx.walked();
    let kube: Vec<TableId> = cx.kube_proxy_tables().collect();
    let graph = cx.graph();
    // `holder` names the map only for a finding: most elements are fine.
    let mut visit = |element: &Element<'_>,
                     resolved: Option<ChainId>,
                     kube_table: bool,
                     holder: &dyn Fn() -> String| {
        let Some(Value::Verdict(Verdict {
            kind,
            target: Some(target),
        })) = &element.value
        else {
            return;
        };
        let span = || cx.span_or(target, element.span);
        match resolved {
            None => out.push(
                out.diagnostic(span(), format!("{} {target}: no such chain in this table", kind.as_str()))
                    .with_label(format!("element of {}", holder()))
                    .with_help("nft refuses a map element naming a missing chain: the listing was edited or cut; paste the whole `nft list ruleset`"),
            ),
            // The graph resolves `target` to the chain of that name in the element's table.
            Some(c) if kube_table && walked.is_empty_service_chain(c) =>
            {
                let line = cx.line(cx.chain(c).span.start);
                out.push_in(
                    c,
                    out.diagnostic(span(), format!("{} {target}: the chain is empty, so these packets are not DNATed", kind.as_str()))
                        .with_label(format!("element of {}; the chain is on line {line}", holder()))
                        .with_help("kube-proxy removes a map element in the same transaction that flushes its chain: this is a partial sync or a hand edit; restart kube-proxy and check its log for failed nft transactions"),
                );
            }
            Some(_) => {}
        }
    };
    // The chain each element goes to, as the graph resolved it (names within the table), by the
    // element's index: no second index of names.
    let mut targets: Vec<Option<ChainId>> = Vec::new();
    for (t, table) in set.tables.iter().enumerate() {
        let table_id = TableId(t as u32);
        if !cx.is_complete(table_id) {
            continue;
        }
        let kube_table = kube.contains(&table_id);
        for &s in &table.sets {
            let map = cx.set(s);
            targets.clear();
            targets.resize(map.elements.len(), None);
            for (to, edge) in graph.edges_from(Node::Set(s)) {
                if let (Node::Chain(c), Via::Element { element, .. }) = (to, edge.via)
                    && let Some(slot) = targets.get_mut(element as usize)
                {
                    *slot = Some(c);
                }
            }
            let holder = || format!("map {}", map.name);
            for (element, resolved) in map.elements.iter().zip(&targets) {
                visit(element, *resolved, kube_table, &holder);
            }
        }
    }
    // Anonymous verdict maps (`vmap { ... }` in a rule), by chain: the context found them.
    // Sorted by (rule, statement, element), looked up by binary search: a chain has few.
    let mut anon: Vec<((RuleId, u32, u32), ChainId)> = Vec::new();
    // Every jump or goto element gives an edge or an unresolved one, so a chain whose rules
    // have no unresolved element and no edge to an empty Service chain has nothing to report:
    // its statements, the lint's cost on a healthy node and the check's last step, go unread.
    let mut unresolved_rules: Vec<RuleId> = graph
        .unresolved_jumps()
        .iter()
        .filter_map(|via| match via {
            Via::AnonElement { rule, .. } => Some(*rule),
            _ => None,
        })
        .collect();
    unresolved_rules.sort_unstable();
    for by_chain in walked.anon_vmaps().chunk_by(|a, b| a.0 == b.0) {
        let Some(&(c, _, _)) = by_chain.first() else {
            continue;
        };
        let table = cx.chain(c).table;
        if !cx.is_complete(table) {
            continue;
        }
        let kube_table = kube.contains(&table);
        let all_resolved = by_chain.iter().all(|&(_, rule_id, _)| {
            set.rules.get(rule_id.index()).is_some_and(|r| r.chain == c)
                && unresolved_rules.binary_search(&rule_id).is_err()
        });
        let to_empty_chain = || {
            graph.edges_from(Node::Chain(c)).any(|(to, edge)| {
                matches!(edge.via, Via::AnonElement { .. })
                    && matches!(to, Node::Chain(t) if walked.is_empty_service_chain(t))
            })
        };
        if all_resolved && !(kube_table && to_empty_chain()) {
            continue;
        }
        anon.clear();
        for (to, edge) in graph.edges_from(Node::Chain(c)) {
            if let (
                Node::Chain(target),
                Via::AnonElement {
                    rule,
                    statement,
                    element,
                },
            ) = (to, edge.via)
            {
                anon.push(((rule, statement, element), target));
            }
        }
        // Keys are unique: an element of a statement gives at most one edge.
        anon.sort_unstable_by_key(|&(key, _)| key);
        for &(_, rule_id, s) in by_chain {
            let Some(Stmt::Vmap {
                map: Expr::Set(elements),
                ..
            }) = set
                .rules
                .get(rule_id.index())
                .and_then(|rule| set.statements_of(rule).get(s as usize))
                .map(|st| &st.kind)
            else {
                continue;
            };
            let holder = || format!("the verdict map of a rule in {}", cx.chain(c).name);
            for (e, element) in elements.iter().enumerate() {
                let resolved = anon
                    .binary_search_by_key(&(rule_id, s, e as u32), |&(key, _)| key)
                    .ok()
                    .map(|i| anon[i].1);
                visit(element, resolved, kube_table, &holder);
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
        let stale_but_unreferenced = HEALTHY.replace(
            "\tchain reject-chain {",
            "\tchain service-XXXXXXXX-ns9/svc9/tcp/p80 {\n\t}\n\n\tchain reject-chain {",
        );
        let missing = HEALTHY.replace(
            "\tchain endpoint-AAAAAAAA-ns1/svc1/tcp/p80__10.180.0.2/80 {\n\t\tip saddr 10.180.0.2 jump mark-for-masquerade\n\t\tmeta l4proto tcp dnat to 10.180.0.2:80\n\t}\n",
            "",
        );
        let empty = HEALTHY.replace(
            "\t\tip saddr 10.180.0.2 jump mark-for-masquerade\n\t\tmeta l4proto tcp dnat to 10.180.0.2:80\n",
            "",
        );
        let empty_service = HEALTHY.replace(
            "\t\tip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade\n\t\tnumgen random mod 2 vmap { 0 : goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80, 1 : goto endpoint-AAAAAAAA-ns1/svc1/tcp/p80__10.180.0.2/80 }\n",
            "",
        );
        // An anonymous map's element to the emptied Service chain: the chain is read, not skipped.
        let anon_to_empty_service = empty_service.replace(
            "\tchain reject-chain {",
            "\tchain anon-to-empty {\n\t\tnumgen random mod 1 vmap { 0 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }\n\t}\n\n\tchain reject-chain {",
        );
        let cut = &missing[..missing.len() - 3];
        let other_table_empty = "table inet t {\n\tmap m {\n\t\ttype ipv4_addr : verdict\n\t\telements = { 10.0.0.1 : jump a/b }\n\t}\n\tchain a/b {\n\t}\n}\n";
        let other_table_missing = "table inet t {\n\tmap m {\n\t\ttype ipv4_addr : verdict\n\t\telements = { 10.0.0.1 : jump nowhere }\n\t}\n}\n";
        assert_cases(
            &LINT,
            &[HEALTHY, &stale_but_unreferenced, cut, other_table_empty],
            &[
                (&missing, 1),
                (&empty, 1),
                (&empty_service, 1),
                (&anon_to_empty_service, 2),
                (other_table_missing, 1),
            ],
        );
    }
}
