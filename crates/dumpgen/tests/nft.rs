//! nftables-mode nodes: dumpgen's forms against real `nft` output (checked-in
//! fixtures, so CI without `nft` still guards the format), against each other,
//! and against the iptables-mode dump of the same cluster.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use rulelint_dumpgen::{NftForm, Shape, generate, generate_nft, nft_rule_count};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn fixture_shape(ipv6: bool) -> Shape {
    let mut shape = Shape::with_services(16);
    shape.seed = 8529;
    shape.ipv6 = ipv6;
    shape
}

fn read_fixture(name: &str) -> String {
    let path = format!("{FIXTURES}/{name}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Sorts the elements of every `elements = { ... }` block, keeping how many
/// each line holds: the kernel lists elements in hash order, but the
/// wrapping nft applies must still match.
fn sort_elements(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let Some(open) = line.find("elements = { ") else {
            out.push(line.to_owned());
            i += 1;
            continue;
        };
        let mut block = vec![line];
        while !block.last().is_some_and(|l| l.ends_with(" }")) {
            i += 1;
            block.push(lines[i]);
        }
        i += 1;
        let head = &line[..open + "elements = { ".len()];
        let indent_len = block.get(1).map_or(0, |l| l.len() - l.trim_start().len());
        let mut rows: Vec<Vec<String>> = Vec::new();
        for (n, row) in block.iter().enumerate() {
            let row = if n == 0 {
                &row[head.len()..]
            } else {
                &row[indent_len..]
            };
            let row = row.trim_end_matches(',').trim_end_matches(" }");
            rows.push(row.split(", ").map(str::to_owned).collect());
        }
        let mut items: Vec<String> = rows.iter().flatten().cloned().collect();
        items.sort();
        let mut next = items.into_iter();
        for (n, row) in rows.iter().enumerate() {
            let part: Vec<String> = next.by_ref().take(row.len()).collect();
            let prefix = if n == 0 {
                head
            } else {
                &block[1][..indent_len]
            };
            let end = if n + 1 == rows.len() { " }" } else { "," };
            out.push(format!("{prefix}{}{end}", part.join(", ")));
        }
    }
    out.join("\n")
}

fn sort_json_elements(text: &str) -> serde_json::Value {
    let mut doc: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
    if let Some(objects) = doc["nftables"].as_array_mut() {
        for object in objects {
            for kind in ["set", "map"] {
                if let Some(elems) = object[kind]["elem"].as_array_mut() {
                    elems.sort_by_key(|e| e.to_string());
                }
            }
        }
    }
    doc
}

#[test]
fn list_form_is_what_nft_lists() {
    for (ipv6, family) in [(false, "ipv4"), (true, "ipv6")] {
        let ours = generate_nft(&fixture_shape(ipv6), NftForm::List);
        let nft = read_fixture(&format!("nft-16-services-seed-8529-{family}.list.txt"));
        assert_eq!(sort_elements(&ours), sort_elements(&nft), "{family}");
    }
}

#[test]
fn json_form_is_what_nft_lists() {
    for (ipv6, family) in [(false, "ipv4"), (true, "ipv6")] {
        let ours = generate_nft(&fixture_shape(ipv6), NftForm::Json);
        let nft = read_fixture(&format!("nft-16-services-seed-8529-{family}.json"));
        assert_eq!(
            sort_json_elements(&ours),
            sort_json_elements(&nft),
            "{family}"
        );
    }
}

#[test]
fn element_sorting_keeps_the_wrapping() {
    let text = "\t\telements = { b, a,\n\t\t\t     d, c,\n\t\t\t     e }\n";
    assert_eq!(
        sort_elements(text),
        "\t\telements = { a, b,\n\t\t\t     c, d,\n\t\t\t     e }\n"
    );
    // A different wrapping is a difference.
    let rewrapped = "\t\telements = { a,\n\t\t\t     b, c, d, e }\n";
    assert_ne!(sort_elements(text), sort_elements(rewrapped));
}

/// Chains, sets and rules declared by the transaction form, and every
/// chain and set its rules and elements refer to.
#[test]
fn transaction_form_refers_only_to_what_it_adds() {
    for ipv6 in [false, true] {
        let shape = Shape {
            ipv6,
            ..Shape::with_services(400)
        };
        let tx = generate_nft(&shape, NftForm::Transaction);
        let mut chains = HashSet::new();
        let mut sets = HashSet::new();
        let mut rules = 0;
        for line in tx.lines() {
            let words: Vec<&str> = line.split(' ').collect();
            match words.get(1) {
                Some(&"chain") => assert!(chains.insert(words[4]), "chain added twice: {line}"),
                Some(&"set") | Some(&"map") => {
                    assert!(sets.insert(words[4]), "set added twice: {line}")
                }
                Some(&"rule") => rules += 1,
                Some(&"table") | Some(&"element") => {}
                _ => panic!("not an add line: {line}"),
            }
        }
        assert_eq!(rules, nft_rule_count(&shape));
        for line in tx
            .lines()
            .filter(|l| l.starts_with("add rule") || l.starts_with("add element"))
        {
            let words: Vec<&str> = line.split(' ').collect();
            for pair in words.windows(2) {
                if pair[0] == "goto" || pair[0] == "jump" {
                    assert!(
                        chains.contains(pair[1]),
                        "missing chain {}: {line}",
                        pair[1]
                    );
                }
            }
            for word in words.iter().filter_map(|w| w.strip_prefix('@')) {
                assert!(sets.contains(word), "missing set {word}: {line}");
            }
            if line.starts_with("add element") {
                assert!(sets.contains(words[4]), "element of a missing set: {line}");
            }
        }
    }
}

#[test]
fn forms_describe_the_same_objects() {
    let shape = Shape::with_services(300);
    let list = generate_nft(&shape, NftForm::List);
    let tx = generate_nft(&shape, NftForm::Transaction);
    let json: serde_json::Value =
        serde_json::from_str(&generate_nft(&shape, NftForm::Json)).expect("valid JSON");
    let objects = json["nftables"].as_array().expect("nftables array");
    let json_chains: Vec<&str> = objects
        .iter()
        .filter_map(|o| o["chain"]["name"].as_str())
        .collect();
    let list_chains: Vec<&str> = list
        .lines()
        .filter_map(|l| l.strip_prefix("\tchain ")?.strip_suffix(" {"))
        .collect();
    let tx_chains: Vec<&str> = tx
        .lines()
        .filter_map(|l| l.strip_prefix("add chain ip kube-proxy "))
        .map(|rest| rest.split(' ').next().unwrap_or(rest))
        .collect();
    assert_eq!(json_chains, list_chains);
    assert_eq!(tx_chains, list_chains);
    let json_rules = objects.iter().filter(|o| o.get("rule").is_some()).count();
    assert_eq!(json_rules, nft_rule_count(&shape));
    assert_eq!(generate_nft(&shape, NftForm::List), list, "deterministic");
}

/// `(address, protocol, port)` keys of one map in the transaction form, by
/// the prefix of the chain their verdict goes to.
fn map_keys(tx: &str, map: &str, target_prefix: &str) -> BTreeSet<String> {
    let head = format!(" kube-proxy {map} {{ ");
    tx.lines()
        .filter_map(|l| l.split_once(&head).map(|(_, rest)| rest))
        .filter(|rest| rest.contains(&format!(": goto {target_prefix}")))
        .map(|rest| {
            rest.split(" : ")
                .next()
                .unwrap_or(rest)
                .split(" comment ")
                .next()
                .unwrap_or(rest)
                .to_owned()
        })
        .collect()
}

/// `IP . proto . port` keys of the iptables rules in `chain` that end in a
/// target starting with `target`.
fn iptables_keys(dump: &str, chain: &str, target: &str, v6: bool) -> BTreeSet<String> {
    let host = if v6 { "/128" } else { "/32" };
    dump.lines()
        .filter(|l| l.starts_with(&format!("-A {chain} ")) && l.contains(&format!("-j {target}")))
        .filter_map(|l| {
            let words: Vec<&str> = l.split(' ').collect();
            let after = |flag: &str| words.iter().position(|w| *w == flag).map(|i| words[i + 1]);
            let port = after("--dport")?;
            let proto = after("-p")?;
            Some(match after("-d") {
                Some(addr) => format!("{} . {proto} . {port}", addr.strip_suffix(host)?),
                None => format!("{proto} . {port}"),
            })
        })
        .collect()
}

/// The nftables node and the iptables dump of one cluster describe the same
/// Services: cluster IPs, load-balancer IPs and node ports with endpoints,
/// those without, and the same DNAT destinations per Service port.
#[test]
fn same_cluster_as_the_iptables_dump() {
    for ipv6 in [false, true] {
        let mut shape = Shape::with_services(1_500);
        shape.ipv6 = ipv6;
        shape.empty_share = 0.05;
        shape.loadbalancer_share = 0.1;
        let ipt = generate(&shape);
        let tx = generate_nft(&shape, NftForm::Transaction);

        let ipt_cluster = iptables_keys(&ipt, "KUBE-SERVICES", "KUBE-SVC-", ipv6);
        assert!(ipt_cluster.len() > 1_000);
        assert_eq!(map_keys(&tx, "service-ips", "service-"), ipt_cluster);
        // Load-balancer IPs: iptables sends those with source ranges to
        // KUBE-FW-* first, nftables checks them in firewall-check.
        let mut ipt_lb = iptables_keys(&ipt, "KUBE-SERVICES", "KUBE-EXT-", ipv6);
        ipt_lb.extend(iptables_keys(&ipt, "KUBE-SERVICES", "KUBE-FW-", ipv6));
        assert_eq!(map_keys(&tx, "service-ips", "external-"), ipt_lb);
        assert!(!map_keys(&tx, "firewall-ips", "firewall-").is_empty());
        assert_eq!(
            map_keys(&tx, "service-nodeports", "external-"),
            iptables_keys(&ipt, "KUBE-NODEPORTS", "KUBE-EXT-", ipv6)
        );
        let rejected = iptables_keys(&ipt, "KUBE-SERVICES", "REJECT", ipv6);
        assert!(!rejected.is_empty());
        let no_endpoints = map_keys(&tx, "no-endpoint-services", "reject-chain");
        assert!(rejected.is_subset(&no_endpoints));

        // DNAT destinations, counted per destination.
        let mut ipt_dnat: BTreeMap<&str, usize> = BTreeMap::new();
        for l in ipt.lines().filter(|l| l.contains("--to-destination ")) {
            let dest = l.rsplit(' ').next().unwrap_or(l);
            *ipt_dnat.entry(dest).or_default() += 1;
        }
        let mut nft_dnat: BTreeMap<&str, usize> = BTreeMap::new();
        for l in tx.lines().filter(|l| l.contains(" dnat to ")) {
            let dest = l.rsplit(' ').next().unwrap_or(l);
            *nft_dnat.entry(dest).or_default() += 1;
        }
        assert!(ipt_dnat.len() > 1_000);
        assert_eq!(nft_dnat, ipt_dnat);
    }
}
