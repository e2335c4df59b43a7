use super::*;
use rulelint_parser::parse;

const MODERN: &str = r#"*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-EXT-WEBWEBWEBWEBWEBW - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]
:KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-WEBWEBWEBWEBWEBW - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-EXT-WEBWEBWEBWEBWEBW -m comment --comment "masquerade traffic for default/web:http external destinations" -j KUBE-MARK-MASQ
-A KUBE-EXT-WEBWEBWEBWEBWEBW -j KUBE-SVC-WEBWEBWEBWEBWEBW
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-NODEPORTS -p tcp -m comment --comment "default/web:http" -m tcp --dport 30080 -j KUBE-EXT-WEBWEBWEBWEBWEBW
-A KUBE-SEP-AAAAAAAAAAAAAAAA -s 10.244.1.5/32 -m comment --comment "default/web:http" -j KUBE-MARK-MASQ
-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m comment --comment "default/web:http" -m tcp -j DNAT --to-destination 10.244.1.5:8080
-A KUBE-SEP-BBBBBBBBBBBBBBBB -s 10.244.2.7/32 -m comment --comment "default/web:http" -j KUBE-MARK-MASQ
-A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m comment --comment "default/web:http" -m tcp -j DNAT --to-destination 10.244.2.7:8080
-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-SVC-WEBWEBWEBWEBWEBW ! -s 10.244.0.0/16 -d 10.96.12.34/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment "default/web:http -> 10.244.1.5:8080" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-AAAAAAAAAAAAAAAA
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment "default/web:http -> 10.244.2.7:8080" -j KUBE-SEP-BBBBBBBBBBBBBBBB
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SERVICES - [0:0]
-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment "kube-system/kube-dns:dns has no endpoints" -m udp --dport 53 -j REJECT --reject-with icmp-port-unreachable
COMMIT
"#;

#[test]
fn reads_services_endpoints_and_layout() {
    let parsed = parse(MODERN);
    let model = KubeModel::build(&parsed.ruleset, &ChainGraph::build(&parsed.ruleset));
    assert_eq!(model.layout.generation, Generation::Modern);
    assert!(!model.layout.large_cluster);
    assert_eq!(
        model.layout.masquerade_mark,
        Some(Mark {
            value: 0x4000,
            mask: 0x4000
        })
    );
    assert_eq!(model.services.len(), 2);
    let web = &model.services[0];
    assert_eq!(web.name.as_deref(), Some("default/web:http"));
    assert_eq!(web.hash, Some("WEBWEBWEBWEBWEBW"));
    assert!(web.chains.cluster.is_some() && web.chains.external.is_some());
    let kinds: Vec<_> = web.addresses.iter().map(|a| a.kind).collect();
    assert_eq!(kinds, [AddressKind::ClusterIp, AddressKind::NodePort]);
    assert_eq!(web.addresses[1].port, PortRange::parse("30080"));
    let probabilities: Vec<_> = web.endpoints.iter().map(|j| j.probability).collect();
    assert_eq!(probabilities, [Some(0.5), None]);
    let destinations: Vec<_> = web
        .endpoints
        .iter()
        .map(|j| model.endpoint(j).unwrap().destination.unwrap())
        .collect();
    assert_eq!(destinations, ["10.244.1.5:8080", "10.244.2.7:8080"]);
    let dns = &model.services[1];
    assert_eq!(dns.name.as_deref(), Some("kube-system/kube-dns:dns"));
    assert_eq!(dns.hash, None);
    assert_eq!(dns.no_endpoints_rules.len(), 1);
    assert_eq!(dns.addresses[0].kind, AddressKind::ClusterIp);
}

#[test]
fn works_without_comments() {
    let text: String = MODERN
        .lines()
        .filter(|l| !l.contains("has no endpoints"))
        .map(|l| {
            // Large-cluster mode: no comments on endpoint rules.
            if l.contains("KUBE-SEP-") && l.starts_with("-A") {
                l.replace(" -m comment --comment \"default/web:http\"", "")
                    .replace(
                        " -m comment --comment \"default/web:http -> 10.244.1.5:8080\"",
                        "",
                    )
                    .replace(
                        " -m comment --comment \"default/web:http -> 10.244.2.7:8080\"",
                        "",
                    )
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let parsed = parse(&text);
    let model = KubeModel::build(&parsed.ruleset, &ChainGraph::build(&parsed.ruleset));
    assert!(model.layout.large_cluster);
    assert_eq!(model.services.len(), 1);
    assert_eq!(model.services[0].name.as_deref(), Some("default/web:http"));
    assert_eq!(model.services[0].endpoints.len(), 2);
    assert!(
        model
            .endpoints
            .iter()
            .all(|e| e.name(&parsed.ruleset).is_none())
    );
}

#[test]
fn no_kubernetes() {
    let parsed = parse("*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n");
    let model = KubeModel::build(&parsed.ruleset, &ChainGraph::build(&parsed.ruleset));
    assert_eq!(model.layout.generation, Generation::None);
    assert!(model.services.is_empty());
}

#[test]
fn ipvs_state() {
    // IPVS mode: KUBE-NODE-PORT (not KUBE-NODEPORTS) and the KUBE-LOOP-BACK ipset.
    let parsed = parse(
        "*nat\n:POSTROUTING ACCEPT [0:0]\n:KUBE-NODE-PORT - [0:0]\n:KUBE-POSTROUTING - [0:0]\n-A POSTROUTING -j KUBE-POSTROUTING\n-A KUBE-POSTROUTING -m comment --comment \"Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose\" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE\nCOMMIT\n",
    );
    let model = KubeModel::build(&parsed.ruleset, &ChainGraph::build(&parsed.ruleset));
    assert!(model.layout.ipvs);
    assert!(is_ipvs_chain("KUBE-NODE-PORT") && !is_ipvs_chain("KUBE-NODEPORTS"));
    assert!(is_ipvs_set("KUBE-CLUSTER-IP") && is_ipvs_set("KUBE-6-LOOP-BACK"));
    assert!(is_ipvs_set("KUBE-NODE-PORT-LOCAL-TCP"));
    // kube-router's network-policy ipsets are not IPVS state.
    assert!(!is_ipvs_set("KUBE-DST-ABCDEFGHIJKLMNOP") && !is_ipvs_set("kube-router-svip"));
    // iptables mode: none.
    let parsed = parse(MODERN);
    assert!(
        !KubeModel::build(&parsed.ruleset, &ChainGraph::build(&parsed.ruleset))
            .layout
            .ipvs
    );
}

#[test]
fn local_chain_without_local_endpoints_holds_its_drop() {
    let text = "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n\
        :KUBE-MARK-DROP - [0:0]\n:KUBE-NODEPORTS - [0:0]\n:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-SERVICES - [0:0]\n\
        :KUBE-SVC-WEBWEBWEBWEBWEBW - [0:0]\n:KUBE-XLB-WEBWEBWEBWEBWEBW - [0:0]\n\
        -A KUBE-NODEPORTS -p tcp -m comment --comment \"default/web:http\" -m tcp --dport 30080 -j KUBE-XLB-WEBWEBWEBWEBWEBW\n\
        -A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW\n\
        -A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n\
        -A KUBE-XLB-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http has no local endpoints\" -j KUBE-MARK-DROP\n\
        COMMIT\n";
    let parsed = parse(text);
    let model = KubeModel::build(
        &parsed.ruleset,
        &rulelint_parser::ChainGraph::build(&parsed.ruleset),
    );
    assert_eq!(model.services.len(), 1);
    let web = &model.services[0];
    assert!(web.chains.local.is_some());
    assert!(web.local_endpoints.is_empty());
    assert_eq!(web.no_local_endpoints_rules.len(), 1);
    assert_eq!(web.endpoints.len(), 1);
}

#[test]
fn live_services_are_dispatched_from_outside_their_own_chains() {
    let parsed = parse(MODERN);
    let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
    let model = KubeModel::build(
        &parsed.ruleset,
        &rulelint_parser::ChainGraph::build(&parsed.ruleset),
    );
    let web = &model.services[0];
    assert!(web.is_live(&graph));
    // KUBE-SVC is reached from KUBE-SERVICES; KUBE-EXT from KUBE-NODEPORTS.
    assert!(web.dispatched(&graph, web.chains.cluster.unwrap()));
    // Without its dispatch rules, the Service's chains only reach each other.
    let text: String = MODERN
        .lines()
        .filter(|l| !l.starts_with("-A KUBE-SERVICES -d") && !l.starts_with("-A KUBE-NODEPORTS"))
        .map(|l| format!("{l}\n"))
        .collect();
    let parsed = parse(&text);
    let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
    let model = KubeModel::build(
        &parsed.ruleset,
        &rulelint_parser::ChainGraph::build(&parsed.ruleset),
    );
    let web = &model.services[0];
    assert!(
        graph
            .jumps_into(web.chains.cluster.unwrap())
            .next()
            .is_some()
    );
    assert!(!web.dispatched(&graph, web.chains.cluster.unwrap()));
    assert!(!web.is_live(&graph));
}

#[test]
fn proxy_mode_is_decided_from_the_chains_each_mode_writes() {
    let mode = |text: &str| {
        let parsed = parse(text);
        KubeModel::build(&parsed.ruleset, &ChainGraph::build(&parsed.ruleset)).layout
    };
    let l = mode(MODERN);
    assert_eq!((l.mode, l.kubelet), (ProxyMode::Iptables, false));
    let nat = |chains: &str| format!("*nat\n:PREROUTING ACCEPT [0:0]\n{chains}COMMIT\n");
    let l = mode(&nat(":KUBE-SERVICES - [0:0]\n:KUBE-NODE-PORT - [0:0]\n"));
    assert_eq!(l.mode, ProxyMode::Ipvs);
    let l = mode(&nat(
        ":KUBE-MARK-DROP - [0:0]\n:KUBE-PORTALS-CONTAINER - [0:0]\n:KUBE-PORTALS-HOST - [0:0]\n",
    ));
    assert_eq!((l.mode, l.kubelet), (ProxyMode::Userspace, true));
    assert_eq!(l.generation, Generation::None);
    assert!(l.is_kubernetes() && l.describe().contains("userspace"));
    let l = mode(
        "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n:KUBE-ROUTER-SERVICES - [0:0]\nCOMMIT\n",
    );
    assert_eq!((l.mode, l.kubelet), (ProxyMode::KubeRouter, true));
    // kubelet's chains alone: a node whose Services another proxy serves.
    let l = mode("*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\nCOMMIT\n");
    assert_eq!((l.mode, l.kubelet), (ProxyMode::None, true));
    assert!(l.is_kubernetes() && l.describe().starts_with("kubelet's chains only"));
    let l = mode("*filter\n:INPUT ACCEPT [0:0]\n:KUBE-METADATA-CONCEAL - [0:0]\nCOMMIT\n");
    assert_eq!((l.mode, l.kubelet), (ProxyMode::None, false));
    assert!(!l.is_kubernetes());
}

/// The fast reading of `a.b.c.d:port` claims only what the general parser reads as one IPv4
/// address and one port from 1: checked on hand-picked edge cases and on 200k strings of the
/// characters such values are made of.
#[test]
fn plain_ipv4_destination_agrees_with_the_general_parser() {
    let general = |text: &str| {
        NatAddress::parse(text).is_ok_and(|n| {
            n.first.is_some_and(|a| a.is_ipv4())
                && n.last == n.first
                && n.ports.is_some_and(|p| p.first == p.last && p.first > 0)
        })
    };
    for text in [
        "10.244.1.5:8080",
        "0.0.0.0:1",
        "255.255.255.255:65535",
        "1.2.3.4:9",
        "10.0.0.1:0",
        "10.0.0.1:65536",
        "10.0.0.1:080",
        "010.0.0.1:80",
        "256.0.0.1:80",
        "1.2.3:80",
        "1.2.3.4.5:80",
        "1.2.3.4",
        "1.2.3.4:",
        ":80",
        "1.2.3.4:80-81",
        "1.2.3.4-1.2.3.5:80",
        "[fd00::1]:80",
        "1.2.3.4:99999",
        "1111.2.3.4:80",
        "",
        "1.2.3.4:80:",
        "1.2.3.4:123456",
        "00.1.2.3:80",
        "1.2.3.4:00",
    ] {
        assert_eq!(plain_ipv4_key(text), key_by_parts(text), "{text}");
        if plain_ipv4_destination(text) {
            assert!(general(text), "{text}");
        }
    }
    assert!(plain_ipv4_destination("10.244.1.5:8080"));
    assert!(!plain_ipv4_destination("10.0.0.1:0"));
    assert!(!plain_ipv4_destination("256.0.0.1:80"));
    // A fixed-seed generator: the same strings on every run, mostly in the plain shape with
    // wrong separators, lengths and values mixed in.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n) as usize
    };
    let mut claimed = 0;
    let mut by_key: std::collections::HashMap<u64, String> = Default::default();
    for _ in 0..200_000 {
        let mut text = String::new();
        for part in 0..5 {
            for _ in 0..next(if part == 4 { 7 } else { 5 }) {
                text.push(b"0123456789"[next(10)] as char);
            }
            let separator = match part {
                0..=2 => '.',
                3 => ':',
                _ => break,
            };
            text.push(if next(8) == 0 {
                b".:-x"[next(4)] as char
            } else {
                separator
            });
        }
        assert_eq!(plain_ipv4_key(&text), key_by_parts(&text), "{text}");
        if plain_ipv4_destination(&text) {
            claimed += 1;
            assert!(general(&text), "{text}");
            // One number per text: RL408 compares destinations by it.
            let key = plain_ipv4_key(&text).expect("plain");
            let earlier = by_key.entry(key).or_insert_with(|| text.clone());
            assert_eq!(*earlier, text, "{key:#x}");
        }
    }
    assert!(
        claimed > 1000,
        "{claimed} generated strings in the plain form"
    );
    assert!(by_key.len() > 1000, "{} distinct keys", by_key.len());
    assert_eq!(
        plain_ipv4_key("10.244.1.5:8080"),
        Some((0x0af4_0105 << 16) | 8080)
    );
}

/// `plain_ipv4_key` as it was first written, part by part: the one-pass reading gives the same
/// keys (see `plain_ipv4_destination_agrees_with_the_general_parser`).
fn key_by_parts(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut key: u64 = 0;
    for part in 0..5 {
        let start = i;
        let mut value: u32 = 0;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 5 {
            value = value * 10 + u32::from(b[i] - b'0');
            i += 1;
        }
        let len = i - start;
        let (max, max_len) = if part < 4 { (255, 3) } else { (65_535, 5) };
        if len == 0
            || len > max_len
            || value > max
            || (len > 1 && b[start] == b'0')
            || (part == 4 && value == 0)
        {
            return None;
        }
        key = (key << if part < 4 { 8 } else { 16 }) | u64::from(value);
        let separator = match part {
            0..=2 => b'.',
            3 => b':',
            _ => return (i == b.len()).then_some(key),
        };
        if b.get(i) != Some(&separator) {
            return None;
        }
        i += 1;
    }
    None
}

/// The fast read of kube-proxy's `--probability` values gives the same f64, bit for bit, as
/// `str::parse`, and leaves every other form to it.
#[test]
fn probability_agrees_with_str_parse() {
    let same = |text: &str| {
        let fast = parse_probability(text).map(f64::to_bits);
        let general = text.parse::<f64>().ok().map(f64::to_bits);
        assert_eq!(fast, general, "{text:?}");
    };
    for text in [
        "0.5000000000",
        "0.3333333333",
        "0.0000000001",
        "0.9999999999",
        "0.1",
        "0.",
        "0.000000000000000",
        "0.123456789012345",
        "0.1234567890123456",
        "1.0",
        "0.5e1",
        "-0.5",
        "0.5 ",
        "0.x",
        "",
        "nan",
    ] {
        same(text);
    }
    // kube-proxy's form for every endpoint count it balances (1/n written with ten digits),
    // and digit strings of every length from a fixed-seed generator.
    for n in 1..5000u32 {
        same(&format!("{:.10}", 1.0 / f64::from(n)));
    }
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..200_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 16) as usize + 1;
        let digits: String = (0..len)
            .map(|i| char::from(b'0' + ((seed >> (i * 4)) % 10) as u8))
            .collect();
        same(&format!("0.{digits}"));
    }
}

#[test]
fn dispatch_facts_read_in_one_walk_equal_the_readers_one_by_one() {
    let rules = [
        "-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-X",
        "-A KUBE-SERVICES -m comment --comment \"a/b:c\" -m comment --comment \"d/e:f cluster IP\" -d 10.0.0.1 -d 10.0.0.2 -j KUBE-SVC-X",
        "-A KUBE-SERVICES ! -d 10.0.0.1/32 ! -p udp -m tcp ! --dport 80 -j KUBE-SVC-X",
        "-A KUBE-SERVICES -d bad.example -p tcp -m multiport --dports 80,443 -j KUBE-SVC-X",
        "-A KUBE-SERVICES -d fd00::1/128 -p 6 -m multiport --dports 8000:8080 -m tcp --dport 9 -j KUBE-SVC-X",
        "-A KUBE-SERVICES -m tcp --dport nope -m udp --dport 53 -m comment --comment \"x\\\"y\" -j KUBE-SVC-X",
        "-A KUBE-SERVICES -m tcp --dport 80, -m comment --comment 'ns/n:p external IP' -j KUBE-SVC-X",
        "-A KUBE-SERVICES -m tcp --dport -j KUBE-SVC-X",
        "-A KUBE-SERVICES -j KUBE-SVC-X",
    ];
    for line in rules {
        let text = format!("*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-X - [0:0]\n{line}\nCOMMIT\n");
        let parsed = parse(&text);
        let rule = parsed.ruleset.iter_rules().next().unwrap();
        let facts = DispatchFacts::read(rule);
        let one_by_one = address(rule, AddressKind::ClusterIp);
        let together = facts.address(AddressKind::ClusterIp, rule.id);
        assert_eq!(format!("{together:?}"), format!("{one_by_one:?}"), "{line}");
        assert_eq!(facts.named, rule_service_name(rule), "{line}");
    }
}

/// The readers of kube-proxy's own forms (`lone_destination`, `rule_source`, `jump_balance`) give what the
/// general readers give, on every rule of the corpus, a generated node and some odd shapes.
#[test]
fn short_dnat_and_source_readers_equal_the_general_ones() {
    let mut texts = corpus_dumps_and_a_node();
    texts.push(
        "*nat\n:X - [0:0]\n-A X -s 10.0.0.1/32 -j DNAT --to-destination 1.2.3.4:80 --to-destination 1.2.3.5:80\n\
         -A X ! -s 10.0.0.1/32 -j KUBE-MARK-MASQ\n-A X --source 10.0.0.1/32 -j MARK --set-xmark 0x4000/0x4000\n\
         -A X -d 10.0.0.1/32 -j KUBE-MARK-MASQ\n-A X -s -j KUBE-MARK-MASQ\n-A X -j DNAT --to-destination\n\
         -A X -j DNAT --random --to-destination 1.2.3.4:80\n-A X -p tcp -j DNAT --to-destination [unsupported revision]\n\
         -A X -s 10.0.0.1/32 -j KUBE-MARK-MASQ -j DNAT --to-destination 1.2.3.4:80\n\
         -A X -m statistic --mode random --probability 0.5 -j X\n-A X -m statistic --probability 0.5 --probability 0.2 -j X\n\
         -A X -m recent --rcheck --probability 0.5 -j X\n-A X -m statistic --mode random --probability nope -j X\n\
         -A X -m statistic --mode random -p 0.5 -j X\n-A X -m statistic --mode random --probability 0.5 -g X\n\
         -A X -m comment -s 10.0.0.1 --comment a -j X\n-A X -m comment foo --comment a -j X\n\
         -A X -m comment --comment -j X\n-A X -j X -m comment --comment a\n-A X ! -m comment --comment a -j X\n\
         -A X -m comment ! --comment \"a b\" -m comment --comment c -j X\n-A X -m tcp --comment a -m comment --comment b -j X\nCOMMIT\n"
            .to_string(),
    );
    let (mut short_dnats, mut short_sources, mut short_comments) = (0, 0, 0);
    for text in &texts {
        let parsed = parse(text);
        for rule in parsed.ruleset.iter_rules() {
            let Some(target) = rule.target() else {
                continue;
            };
            let words = rule.tokens();
            if let Some(value) = lone_destination(rule, &words) {
                short_dnats += 1;
                assert_eq!(words[words.len() - 3], target.token(), "{text}");
                let mut options = target.options().filter(|o| o.name() == "--to-destination");
                let first = options.next();
                assert!(first.is_some() && options.next().is_none(), "{text}");
                assert_eq!(first.and_then(|o| o.args().next()), Some(value), "{text}");
            }
            assert_eq!(
                format!("{:?}", jump_balance(rule)),
                format!("{:?}", jump_balance_of_matches(rule)),
                "{}",
                rule.text()
            );
            if words.len() == 3 && words[2] == target.token() {
                short_sources += 1;
            }
            if let Some(comment) = first_comment_as_written(rule) {
                short_comments += 1;
                assert_eq!(
                    Some(comment),
                    rule.option(Some("comment"), &["--comment"])
                        .map(|o| o.value),
                    "{}",
                    rule.text()
                );
            }
            if let [_, _, jump] = *words {
                assert_eq!(
                    is_rule_target(rule, &jump),
                    jump == target.token(),
                    "{}",
                    rule.text()
                );
            }
            assert_eq!(
                rule_source(rule),
                rule.option(None, &["-s", "--source"]),
                "{}",
                rule.text()
            );
        }
    }
    assert!(
        short_dnats > 1_000 && short_sources > 100 && short_comments > 1_000,
        "{short_dnats} {short_sources} {short_comments}"
    );
}

/// The options of a rule of kube-proxy's dispatch shape as its readers take them from its
/// eleven words ([`dispatch_shape_tokens`]), each sliced as text to compare with the walk.
fn dispatch_shape_options<'a>(rule: RuleRef<'_, 'a>) -> Option<[WordOption<'a>; 4]> {
    let [d, d_arg, p, p_arg, m3, o3, a3, m4, o4, a4, _] = dispatch_shape_tokens(rule)?;
    let text = |t: &Token| rule.token_text(t);
    let option = |module: Option<&'a str>, o: &Token, arg: &Token| WordOption {
        module,
        name: text(o),
        negated: o.negated(),
        arg: text(arg),
    };
    Some([
        option(None, &d, &d_arg),
        option(None, &p, &p_arg),
        option(Some(text(&m3)), &o3, &a3),
        option(Some(text(&m4)), &o4, &a4),
    ])
}

/// kube-proxy's dispatch shape read from its words gives the options the walk over the matches
/// gives, on every rule of the corpus, a generated node and shapes that differ in one word;
/// and its port reader reads what `PortRange::parse` reads.
#[test]
fn dispatch_shape_options_equal_the_match_walk() {
    let mut texts = corpus_dumps_and_a_node();
    texts.push(
        "*nat\n:X - [0:0]\n\
         -A X -d 10.0.0.1/32 -p tcp -m comment --comment \"a/b:c cluster IP\" -m tcp --dport 80 -j X\n\
         -A X ! -d 10.0.0.1/32 ! -p tcp -m comment ! --comment x -m tcp ! --dport 80 -j X\n\
         -A X -d 10.0.0.1/32 -p tcp -m comment -s 10.0.0.2 -m tcp --dport 80 -j X\n\
         -A X -d 10.0.0.1/32 -p tcp -m comment --comment x -m tcp -d 10.0.0.2 -j X\n\
         -A X -d 10.0.0.1/32 -p tcp -m tcp --dport 80 -m comment --comment x -g X\n\
         -A X -m comment --comment x -p tcp -m tcp --dport 80 -m udp --dport 53 -j X\n\
         -A X -d 10.0.0.1/32 -p tcp -m comment --comment x -m tcp --dport 80 -j DNAT --to-destination 1.2.3.4:5\n\
         -A X -d 10.0.0.1/32 -p tcp -m comment --comment x -m tcp --dport 80 [unsupported revision] -j X\n\
         -A X --destination 10.0.0.1/32 --protocol tcp -m comment --comment x -m multiport --dports 80,443 -j X\n\
         COMMIT\n"
            .to_string(),
    );
    let mut shaped = 0;
    for text in &texts {
        let parsed = parse(text);
        for rule in parsed.ruleset.iter_rules() {
            let walked: Vec<WordOption> = word_options(rule).collect();
            if let Some(options) = dispatch_shape_options(rule) {
                shaped += 1;
                assert_eq!(options.to_vec(), walked, "{}", rule.text());
            }
            for o in &walked {
                assert_eq!(
                    port_range(o.arg),
                    PortRange::parse(o.arg),
                    "{}",
                    rule.text()
                );
            }
        }
    }
    assert!(shaped > 500, "{shaped}");
    for text in [
        "0", "1", "80", "080", "65535", "65536", "99999", "123456", "+80", "-80", "", "8:9", "9:8",
        "80-90", ":80", "80:", "٣",
    ] {
        assert_eq!(port_range(text), PortRange::parse(text), "{text}");
    }
}

/// The nfacct and set modules read from a rule's words are those of its matches, on every rule
/// of the corpus, a generated node and rules with modules after, between and without targets.
#[test]
fn nfacct_or_set_from_words_equal_the_match_walk() {
    let mut texts = corpus_dumps_and_a_node();
    texts.push(
        "*filter\n:X - [0:0]\n\
         -A X -m nfacct --nfacct-name a -j ACCEPT\n\
         -A X -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\n\
         -A X -j ACCEPT -m nfacct --nfacct-name a\n\
         -A X -m set --match-set S src -j X -m nfacct -j ACCEPT\n\
         -A X -m nfacct --nfacct-name a\n\
         -A X -p tcp -m set ! --match-set S src -m nfacct --nfacct-name b -g X\n\
         -A X -j X\n\
         -A X -m comment --comment \"-m set\" -j ACCEPT\n\
         COMMIT\n"
            .to_string(),
    );
    let mut seen = 0;
    for text in &texts {
        let parsed = parse(text);
        for rule in parsed.ruleset.iter_rules() {
            let walked = NfacctOrSet {
                nfacct: rule.matches().any(|m| m.module() == Some("nfacct")),
                set: rule.matches().any(|m| m.module() == Some("set")),
            };
            seen += usize::from(walked.nfacct || walked.set);
            assert_eq!(NfacctOrSet::of(rule), walked, "{}", rule.text());
        }
    }
    assert!(seen >= 5, "{seen}");
}

/// Every iptables dump of the corpus's lint, Kubernetes and well-formed syntax cases.
fn corpus_dumps() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    ["lints", "kube", "syntax/ok"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(root.join(dir)).into_iter().flatten())
        .flat_map(|entry| {
            let path = entry.expect("entry").path();
            match std::fs::read_dir(&path) {
                Ok(files) => files.map(|f| f.expect("entry").path()).collect(),
                Err(_) => vec![path],
            }
        })
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| std::fs::read_to_string(p).expect("dump"))
        .collect()
}

/// [`corpus_dumps`] and a generated node of 3,000 rules: the inputs of the tests that pin a
/// quick reader against the general one.
fn corpus_dumps_and_a_node() -> Vec<String> {
    let mut texts = corpus_dumps();
    assert!(texts.len() > 100, "{}", texts.len());
    texts.push(rulelint_dumpgen::generate(
        &rulelint_dumpgen::Shape::with_rule_target(3_000),
    ));
    texts
}

/// `comment_naming` gives what `comment_service_name` gives whenever it answers, for names
/// kube-proxy writes, odd quotings and near misses; and it answers kube-proxy's own comments.
#[test]
fn comment_naming_equals_the_full_reading() {
    let names = [
        "default/web:http",
        "ns/svc",
        "a/b:c:d",
        "kube-system/kube-dns:dns-tcp",
    ];
    let raws = [
        "\"{} cluster IP\"",
        "\"{} external IP\"",
        "\"{} loadbalancer IP\"",
        "\"{} has no endpoints\"",
        "\"{} has no local endpoints\"",
        "\"{} cluster IP",
        "{} cluster IP\"",
        "{} cluster IP",
        "\"{}  cluster IP\"",
        "\"{} cluster IP \"",
        "\"{}x cluster IP\"",
        "\"{} -> 10.244.1.5:8080\"",
        "\"{}\"",
        "\"{} cluster\\\" IP\"",
        "\"\"{} cluster IP\"\"",
        "\"masquerade traffic for {} external destinations\"",
    ];
    let mut answered = 0;
    for known in names {
        for other in names {
            for raw in raws {
                let raw = raw.replace("{}", other);
                if let Some(naming) = comment_naming(&raw, known) {
                    assert_eq!(
                        Some(naming),
                        comment_service_name(&raw),
                        "{raw:?} {known:?}"
                    );
                    answered += 1;
                }
            }
        }
    }
    assert_eq!(answered, names.len() * 5);
}

/// `destination_host` reads a `--to-destination` as the `char` splits did.
#[test]
fn destination_host_equals_the_char_splits() {
    fn by_split(text: &str) -> Option<&str> {
        match text.strip_prefix('[') {
            Some(rest) => rest.split_once(']').map(|(host, _)| host),
            None => text.split_once(':').map(|(host, _)| host),
        }
    }
    for text in [
        "10.244.1.5:8080",
        "[fd00::5]:8080",
        "[fd00::5",
        "fd00::5",
        "10.0.0.1",
        "",
        ":",
        "[",
        "[]",
        "é:1",
        "1.2.3.4-1.2.3.9:80-90",
        "[::1]:80-90",
    ] {
        assert_eq!(destination_host(text), by_split(text), "{text:?}");
    }
}

/// `comment_service_name` with its one-pass reading of `"NAME PHRASE"` gives what the general
/// reading (quotes and escapes searched for, then `service_comment`) gives, on names and
/// shapes kube-proxy writes, near misses and odd quotings.
#[test]
fn one_pass_quoted_comment_equals_the_general_reading() {
    let names = [
        "default/web:http",
        "ns/svc",
        "a/b:c:d",
        "/x",
        "x/",
        "a/b/c",
        "a b/c",
        "a:b/c",
        "x",
        "",
        "ns/:p",
        "a/b:",
        "a:/b",
        "é/b",
        "a/b\"",
        "a\\/b",
    ];
    let shapes = [
        "{} cluster IP",
        "{} external IP",
        "{} loadbalancer IP",
        "{} has no endpoints",
        "{} has no local endpoints",
        "{} -> 10.244.1.5:8080",
        "{}",
        "{}  cluster IP",
        "{} cluster IP ",
        "{}\tcluster IP",
        "{} cluster\\\" IP",
        "masquerade traffic for {} external destinations",
        "{} traffic not accepted by KUBE-FW-X",
        "{} foo",
    ];
    let mut quoted_form = 0;
    for name in names {
        for shape in shapes {
            let text = shape.replace("{}", name);
            for raw in [
                format!("\"{text}\""),
                text.clone(),
                format!("\"{text}"),
                format!("\"\"{text}\"\""),
            ] {
                assert_eq!(
                    comment_service_name(&raw),
                    comment_service_name_in_full(&raw),
                    "{raw:?}"
                );
                quoted_form += usize::from(names::quoted_phrase_comment(&raw).is_some());
            }
        }
    }
    assert!(quoted_form > 50, "{quoted_form}");
}

/// The model reads a dispatch rule of kube-proxy's shape from its words as the walk over its
/// matches reads it, on every rule of the corpus and a generated node.
#[test]
fn dispatch_facts_of_the_shape_equal_the_walk() {
    let mut shaped = 0;
    for text in corpus_dumps_and_a_node() {
        let parsed = parse(&text);
        for rule in parsed.ruleset.iter_rules() {
            let Some(words) = dispatch_shape_tokens(rule) else {
                continue;
            };
            let by_words = DispatchFacts::read_shaped(rule, None, Some(words));
            let by_walk = DispatchFacts::read_shaped(rule, None, None);
            assert_eq!(by_words.named, by_walk.named, "{}", rule.text());
            assert_eq!(
                format!("{:?}", by_words.address(AddressKind::ClusterIp, rule.id)),
                format!("{:?}", by_walk.address(AddressKind::ClusterIp, rule.id)),
                "{}",
                rule.text()
            );
            shaped += 1;
        }
    }
    assert!(shaped > 100, "{shaped}");
}
