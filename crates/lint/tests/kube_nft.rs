//! The Kubernetes model of nftables listings (`corpus/nft/ok/`, `corpus/kube-pairs/`):
//! `rulelint services` names every Service port and endpoint kube-proxy's own tests program,
//! leftovers of a deleted Service are stale chains rather than Services, an iptables-mode node
//! listed through iptables-nft is not read as nftables mode, and the catalogue of a node in
//! iptables mode agrees with the one of the same cluster in nftables mode.

use rulelint_lint::kube::AddressKind;
use rulelint_lint::kube::KubeModel;
use rulelint_lint::kube::catalog::{Catalog, CatalogService, NodePortAddresses};
use rulelint_lint::kube::doc::{human, services_file, with_services_file};
use rulelint_lint::nft::kube::{NftGeneration, NftKubeModel, NftMode};
use rulelint_parser::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).expect(path)
}

/// Parses an nft listing and hands its model to `with`.
fn nft_model<R>(text: &str, with: impl FnOnce(&NftKubeModel<'_>) -> R) -> R {
    let parsed = rulelint_nft::parse(text);
    let graph = rulelint_nft::ChainGraph::build(&parsed.ruleset);
    with(&NftKubeModel::build(&parsed.ruleset, &graph))
}

/// Service port name -> its balanced endpoint destinations, sorted.
fn endpoints_by_service(services: &[CatalogService<'_>]) -> BTreeMap<String, Vec<String>> {
    services
        .iter()
        .map(|s| {
            let mut destinations: Vec<String> = s
                .endpoints
                .iter()
                .chain(&s.local_endpoints)
                .filter(|e| !e.affinity_check)
                .map(|e| e.destination.as_deref().unwrap_or("(none)").to_string())
                .collect();
            destinations.sort();
            (
                s.name.as_deref().unwrap_or("(unnamed)").to_string(),
                destinations,
            )
        })
        .collect()
}

fn service<'c, 'a>(services: &'c [CatalogService<'a>], name: &str) -> &'c CatalogService<'a> {
    services
        .iter()
        .find(|s| s.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no Service port {name}"))
}

/// `TestOverallNFTablesRules` (kubernetes `pkg/proxy/nftables/proxier_test.go`): six Services,
/// their endpoints as the test's EndpointSlices give them.
#[test]
fn overall_rules_name_every_service_and_endpoint() {
    for file in [
        "corpus/nft/ok/01-overall-rules.txt",
        "corpus/nft/ok/01-overall-rules-handles.txt",
    ] {
        nft_model(&read(file), |model| {
            assert_eq!(model.mode, NftMode::Nftables, "{file}");
            assert_eq!(model.generation, NftGeneration::PreDnatFilter, "{file}");
            let expected: BTreeMap<String, Vec<String>> = [
                ("ns1/svc1:p80", vec!["10.180.0.1:80"]),
                ("ns2/svc2:p80", vec!["10.180.0.2:80"]),
                ("ns3/svc3:p80", vec!["10.180.0.3:80"]),
                ("ns4/svc4:p80", vec!["10.180.0.4:80", "10.180.0.5:80"]),
                ("ns5/svc5:p80", vec!["10.180.0.3:80"]),
                ("ns6/svc6:p80", vec![]),
            ]
            .into_iter()
            .map(|(n, e)| (n.to_string(), e.into_iter().map(String::from).collect()))
            .collect();
            assert_eq!(endpoints_by_service(&model.services), expected, "{file}");
            assert!(model.stale_chains.is_empty(), "{:?}", model.stale_chains);
            assert!(model.unused_endpoint_chains.is_empty());

            let svc2 = service(&model.services, "ns2/svc2:p80");
            assert!(svc2.external_local && !svc2.internal_local);
            assert_eq!(
                svc2.drops_without_local_endpoints.len(),
                3,
                "LB IP, external IP, node port"
            );
            let svc4 = service(&model.services, "ns4/svc4:p80");
            let shares: Vec<_> = svc4.endpoints.iter().map(|e| e.share).collect();
            assert_eq!(shares, [Some(0.5), Some(0.5)]);
            assert!(svc4.endpoints.iter().all(|e| e.hairpin_masquerade));
            let svc5 = service(&model.services, "ns5/svc5:p80");
            assert_eq!(svc5.affinity.and_then(|a| a.timeout_seconds), Some(10_800));
            let ranges: Vec<String> = svc5
                .source_ranges
                .iter()
                .map(|r| r.network.to_string())
                .collect();
            assert_eq!(ranges, ["203.0.113.0/25"]);
            let kinds: Vec<AddressKind> = svc5.addresses.iter().map(|a| a.kind).collect();
            assert!(kinds.contains(&AddressKind::LoadBalancerIp), "{kinds:?}");
            assert!(kinds.contains(&AddressKind::NodePort), "{kinds:?}");
            assert!(svc5.endpoints.iter().any(|e| e.affinity_check));
            let svc6 = service(&model.services, "ns6/svc6:p80");
            assert_eq!(svc6.rejects_without_endpoints.len(), 1);
            assert_eq!(svc6.addresses[0].kind, AddressKind::ClusterIp);
            assert_eq!(model.masquerade_mark.map(|m| m.value), Some(0x4000));
            assert_eq!(
                model.node_port_addresses,
                NodePortAddresses::Listed(vec!["192.168.0.2/32".parse().unwrap()])
            );
        });
    }
}

/// `TestSyncProxyRulesRepeated` right after `svc2` was deleted: its flushed chains stay a second.
#[test]
fn a_deleted_services_chains_are_stale_not_a_service() {
    nft_model(
        &read("corpus/nft/ok/02-stale-chains-after-service-delete.txt"),
        |model| {
            let names: Vec<_> = model
                .services
                .iter()
                .map(|s| s.name.as_deref().unwrap())
                .collect();
            assert_eq!(names, ["ns1/svc1:p80", "ns3/svc3:p80"]);
            assert_eq!(
                model.stale_chains,
                [
                    "service-MHHHYRWA-ns2/svc2/tcp/p8080",
                    "endpoint-7RVP4LUQ-ns2/svc2/tcp/p8080__10.0.2.1/8080"
                ]
            );
        },
    );
}

#[test]
fn iptables_mode_seen_through_nft_is_not_nftables_mode() {
    nft_model(
        &read("corpus/nft/ok/03-iptables-nft-seen-through-nft.txt"),
        |model| {
            assert_eq!(model.mode, NftMode::IptablesNft);
            assert!(model.services.is_empty());
            assert!(model.stale_chains.is_empty());
        },
    );
    let text = with_services_file(
        "x",
        &read("corpus/nft/ok/03-iptables-nft-seen-through-nft.txt"),
        |d, _| human(d),
    );
    assert!(text.contains("not nftables mode"), "{text}");
    assert!(text.contains("0 service ports"), "{text}");
}

/// `rulelint services` of every listing in `corpus/nft/ok/` and of the pair, text and JSON.
#[test]
fn snapshots_of_services_on_nft_listings() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("corpus/nft/ok"))
        .expect("corpus/nft/ok")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.push(repo().join("corpus/kube-pairs/small-cluster/nft.txt"));
    files.sort();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(repo().join("corpus/nft/services"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for path in files {
            let text = std::fs::read_to_string(&path).expect("listing");
            let name = path
                .strip_prefix(repo())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let out = with_services_file(&name, &text, |doc, has_content| {
                assert!(has_content, "{name}");
                let mut out = human(doc);
                out.push_str("--- json ---\n");
                out.push_str(
                    &serde_json::to_string_pretty(&json::Document::new(vec![doc])).expect("JSON"),
                );
                out
            });
            let stem = name
                .trim_start_matches("corpus/")
                .trim_end_matches(".txt")
                .replace('/', "-");
            insta::assert_snapshot!(stem, out);
        }
    });
}

/// One Service port's facts, with what the backends write differently left out: chain names
/// and hashes, rule lines, iptables' conditional probabilities (the shares are compared), and
/// the external-IP/load-balancer-IP distinction nftables does not write without source ranges.
fn comparable(s: &CatalogService<'_>) -> String {
    let mut addresses: Vec<String> = s
        .addresses
        .iter()
        .map(|a| {
            let kind = match a.kind {
                AddressKind::LoadBalancerIp | AddressKind::ExternalIp => "external",
                AddressKind::ClusterIp => "cluster",
                AddressKind::NodePort => "node-port",
            };
            format!("{kind} {:?} {:?} {:?}", a.address, a.protocol, a.port)
        })
        .collect();
    addresses.sort();
    let endpoints = |entries: &[rulelint_lint::kube::catalog::CatalogEndpoint<'_>]| {
        let mut out: Vec<String> = entries
            .iter()
            .map(|e| {
                format!(
                    "{:?} share={:?} affinity={} hairpin={}",
                    e.destination,
                    e.share.map(|s| (s * 1e6).round() as i64),
                    e.affinity_check,
                    e.hairpin_masquerade
                )
            })
            .collect();
        out.sort();
        out
    };
    let ranges: Vec<String> = s
        .source_ranges
        .iter()
        .map(|r| r.network.to_string())
        .collect();
    format!(
        "{:?} {:?}\n  addresses {addresses:?}\n  endpoints {:?}\n  local {:?}\n  affinity {:?} \
         ranges {ranges:?} internal-local {} external-local {} rejects {} drops {}",
        s.name,
        s.protocol,
        endpoints(&s.endpoints),
        endpoints(&s.local_endpoints),
        s.affinity.map(|a| a.timeout_seconds),
        s.internal_local,
        s.external_local,
        !s.rejects_without_endpoints.is_empty(),
        !s.drops_without_local_endpoints.is_empty(),
    )
}

fn iptables_facts(text: &str) -> (Vec<String>, Option<u32>) {
    let parsed = rulelint_parser::parse(text);
    let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
    let model = KubeModel::build(&parsed.ruleset, &graph);
    let catalog = Catalog::from_iptables(&parsed.ruleset, &graph, &model);
    assert_eq!(catalog.node.proxy_mode, "iptables");
    assert_eq!(
        catalog.node.node_port_addresses,
        NodePortAddresses::AllLocal
    );
    let mut facts: Vec<String> = catalog.services.iter().map(comparable).collect();
    facts.sort();
    (facts, catalog.node.masquerade_mark.map(|m| m.value))
}

fn nft_facts(text: &str) -> (Vec<String>, Option<u32>) {
    nft_model(text, |model| {
        let catalog = Catalog::from_nft(model);
        assert_eq!(catalog.node.proxy_mode, "nftables");
        let mut facts: Vec<String> = catalog.services.iter().map(comparable).collect();
        facts.sort();
        (facts, catalog.node.masquerade_mark.map(|m| m.value))
    })
}

#[test]
fn iptables_and_nftables_catalogues_of_one_cluster_agree() {
    let iptables = iptables_facts(&read("corpus/kube-pairs/small-cluster/iptables.txt"));
    let nft = nft_facts(&read("corpus/kube-pairs/small-cluster/nft.txt"));
    assert_eq!(iptables.0.len(), 6, "{:#?}", iptables.0);
    assert_eq!(iptables, nft);
}

#[test]
fn a_missing_endpoint_on_the_nftables_node_breaks_the_agreement() {
    let text = read("corpus/kube-pairs/small-cluster/nft.txt");
    let cut = text.replace(
        "numgen random mod 2 vmap { 0 : goto endpoint-WEBEPAAA-default/web/tcp/http__10.244.1.5/8080, 1 : goto endpoint-WEBEPBBB-default/web/tcp/http__10.244.2.7/8080 }",
        "numgen random mod 1 vmap { 0 : goto endpoint-WEBEPAAA-default/web/tcp/http__10.244.1.5/8080 }",
    );
    assert_ne!(
        cut, text,
        "the pair's numgen rule changed: update this test"
    );
    let iptables = iptables_facts(&read("corpus/kube-pairs/small-cluster/iptables.txt"));
    let nft = nft_facts(&cut);
    let differing: Vec<_> = iptables.0.iter().filter(|f| !nft.0.contains(f)).collect();
    assert_eq!(differing.len(), 1, "{differing:#?}");
    assert!(differing[0].contains("default/web:http"));
}

/// The layout generations, each from a small listing the real `nft` accepts.
#[test]
fn layout_generations_are_told_apart() {
    let table = |chains: &str| format!("table ip kube-proxy {{\n{chains}}}\n");
    let cases = [
        (
            "\tchain filter-input {\n\t\ttype filter hook input priority -101; policy accept;\n\t}\n\tchain endpoints-check {\n\t}\n",
            NftGeneration::Alpha,
        ),
        (
            "\tchain filter-input {\n\t\ttype filter hook input priority -110; policy accept;\n\t}\n\tchain filter-output-post-dnat {\n\t\ttype filter hook output priority -90; policy accept;\n\t}\n",
            NftGeneration::PostDnatFilter,
        ),
        (
            "\tchain filter-prerouting-pre-dnat {\n\t\ttype filter hook prerouting priority dstnat - 10; policy accept;\n\t}\n\tchain mark-for-masquerade {\n\t\tmeta mark set meta mark | 0x00004000\n\t}\n",
            NftGeneration::PreDnatFilter,
        ),
        (
            "\tchain filter-prerouting-pre-dnat {\n\t\ttype filter hook prerouting priority dstnat - 10; policy accept;\n\t}\n",
            NftGeneration::InlineMasquerade,
        ),
        (
            "\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\t\telements = { 172.30.0.50 . tcp . 80 : goto service-ABCDEFGH-ns/web/tcp/http }\n\t}\n\tchain filter-prerouting-pre-dnat {\n\t\ttype filter hook prerouting priority dstnat - 10; policy accept;\n\t}\n\tchain service-ABCDEFGH-ns/web/tcp/http {\n\t\tmeta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.1.0.1 . 80, 1 : 10.1.0.2 . 80 }\n\t}\n",
            NftGeneration::DirectDnat,
        ),
        (
            "\tchain filter-input {\n\t\ttype filter hook input priority 5; policy accept;\n\t}\n",
            NftGeneration::Unrecognised,
        ),
    ];
    for (chains, expected) in cases {
        let text = table(chains);
        nft_model(&text, |model| {
            assert_eq!(model.generation, expected, "{text}")
        });
    }
    // The direct-dnat Service's endpoints come from its DNAT map.
    let text = table(cases[4].0);
    nft_model(&text, |model| {
        assert_eq!(
            endpoints_by_service(&model.services).get("ns/web:http"),
            Some(&vec!["10.1.0.1:80".to_string(), "10.1.0.2:80".to_string()])
        );
    });
    nft_model("table inet filter {\n}\n", |model| {
        assert_eq!(
            (model.mode, model.generation),
            (NftMode::None, NftGeneration::None)
        );
    });
}

/// Every cut of a listing (a paste that stops anywhere) gives a model, never a panic, and no
/// Service port it did not name.
#[test]
fn cut_listings_never_panic_nor_invent_services() {
    let text = read("corpus/nft/ok/01-overall-rules.txt");
    let full: Vec<String> = nft_model(&text, |m| {
        m.services
            .iter()
            .map(|s| s.name.as_deref().unwrap().to_string())
            .collect()
    });
    for cut in (0..text.len())
        .step_by(7)
        .filter(|&i| text.is_char_boundary(i))
    {
        nft_model(&text[..cut], |model| {
            for s in &model.services {
                let name = s.name.as_deref().unwrap_or("(unnamed)");
                assert!(full.iter().any(|f| f == name), "cut at {cut}: {name}");
            }
        });
    }
}

/// The iptables document did not change shape: no nftables-only field appears in it.
#[test]
fn iptables_documents_have_no_nftables_fields() {
    let text = read("corpus/kube-pairs/small-cluster/iptables.txt");
    let parsed = rulelint_parser::parse(&text);
    let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
    let model = KubeModel::build(&parsed.ruleset, &graph);
    let catalog = Catalog::from_iptables(&parsed.ruleset, &graph, &model);
    let json = serde_json::to_string(&services_file("x", &catalog)).expect("JSON");
    for field in [
        "policy",
        "hairpin_masquerade",
        "node_port_addresses",
        "stale_chains",
    ] {
        assert!(!json.contains(field), "{field} in {json}");
    }
}

/// An IPv6 node (`table ip6 kube-proxy`, as nft 1.0.6 lists it): `ip6` selectors, endpoint
/// chain names with `.` for `:`, bracketed DNAT destinations.
#[test]
fn ipv6_listing() {
    let listing = r#"table ip6 kube-proxy {
	comment "rules for kube-proxy"
	map service-ips {
		type ipv6_addr . inet_proto . inet_service : verdict
		elements = { fd00:10:96::a . tcp . 80 : goto service-V6WEBAAA-default/web/tcp/http }
	}

	chain nat-prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip6 daddr . meta l4proto . th dport vmap @service-ips
	}

	chain filter-prerouting-pre-dnat {
		type filter hook prerouting priority dstnat - 10; policy accept;
	}

	chain mark-for-masquerade {
		meta mark set meta mark | 0x00004000
	}

	chain service-V6WEBAAA-default/web/tcp/http {
		ip6 daddr fd00:10:96::a ip6 saddr != fd00:10:244::/64 jump mark-for-masquerade
		numgen random mod 1 vmap { 0 : goto endpoint-V6EPAAAA-default/web/tcp/http__fd00.10.244..5/8080 }
	}

	chain endpoint-V6EPAAAA-default/web/tcp/http__fd00.10.244..5/8080 {
		ip6 saddr fd00:10:244::5 jump mark-for-masquerade
		meta l4proto tcp dnat to [fd00:10:244::5]:8080
	}
}
"#;
    nft_model(listing, |model| {
        assert_eq!(model.mode, NftMode::Nftables);
        let web = service(&model.services, "default/web:http");
        assert_eq!(
            web.addresses[0].address,
            Some("fd00:10:96::a/128".parse().unwrap())
        );
        assert_eq!(
            web.endpoints[0].destination.as_deref(),
            Some("[fd00:10:244::5]:8080")
        );
        assert!(web.endpoints[0].hairpin_masquerade);
        assert_eq!(model.masquerade_mark.map(|m| m.value), Some(0x4000));
    });
}

mod properties {
    use super::nft_model;
    use proptest::prelude::*;

    /// Words of kube-proxy listings, shuffled into any order: the model must never panic.
    const WORDS: &[&str] = &[
        "table",
        "ip",
        "ip6",
        "kube-proxy",
        "{",
        "}",
        "\n",
        ";",
        ",",
        ":",
        ".",
        "chain",
        "map",
        "set",
        "service-ips",
        "service-nodeports",
        "no-endpoint-services",
        "firewall-ips",
        "elements",
        "=",
        "type",
        "ipv4_addr",
        "inet_proto",
        "inet_service",
        "verdict",
        "goto",
        "jump",
        "drop",
        "comment",
        "\"ns/a:p\"",
        "service-AAAAAAAA-ns/a/tcp/p",
        "external-AAAAAAAA-ns/a/tcp/p",
        "local-AAAAAAAA-ns/a/tcp/p",
        "firewall-AAAAAAAA-ns/a/tcp/p",
        "endpoint-BBBBBBBB-ns/a/tcp/p__10.0.0.1/80",
        "affinity-BBBBBBBB-ns/a/tcp/p__10.0.0.1/80",
        "numgen",
        "random",
        "mod",
        "0",
        "1",
        "2",
        "vmap",
        "dnat",
        "to",
        "10.0.0.1:80",
        "10.0.0.1",
        "tcp",
        "80",
        "ip saddr",
        "!=",
        "10.0.0.0/8",
        "@affinity-BBBBBBBB-ns/a/tcp/p__10.0.0.1/80",
        "update",
        "timeout",
        "3h",
        "meta mark set meta mark | 0x4000",
        "mark-for-masquerade",
        "hook",
        "prerouting",
        "priority",
        "dstnat",
        "-",
        "10",
        "policy",
        "accept",
        "filter",
        "nat",
        "map",
        "#",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
        #[test]
        fn any_arrangement_of_kube_words_gives_a_model(
            words in proptest::collection::vec(proptest::sample::select(WORDS), 0..120)
        ) {
            let text = format!("table ip kube-proxy {{\n{}\n", words.join(" "));
            nft_model(&text, |model| {
                for s in &model.services {
                    for e in s.endpoints.iter().chain(&s.local_endpoints) {
                        if let Some(share) = e.share {
                            prop_assert!((0.0..=1.0).contains(&share));
                        }
                    }
                }
                Ok(())
            })?;
        }
    }
}

/// What users paste: one map or one chain of kube-proxy's table, without the `table` line.
#[test]
fn pasted_fragments_of_the_kube_proxy_table() {
    use rulelint_lint::kube::doc::is_nft_listing;
    let fragment = "# from the node\n        map no-endpoint-services {\n                \
                    type ipv4_addr . inet_proto . inet_service : verdict\n                \
                    elements = { 10.0.5.9 . tcp . 443 comment \"web/front:https\" : drop,\n";
    assert!(is_nft_listing(fragment));
    nft_model(fragment, |model| {
        assert_eq!(model.mode, NftMode::Nftables);
        let front = service(&model.services, "web/front:https");
        assert_eq!(front.drops_without_local_endpoints.len(), 1);
        assert!(front.external_local);
    });
    let chain = "chain filter-input {\n\ttype filter hook input priority -110; policy accept;\n\
                 \tct state new jump nodeport-endpoints-check\n}\n";
    assert!(is_nft_listing(chain));
    nft_model(chain, |model| {
        assert_eq!(model.generation, NftGeneration::PostDnatFilter);
        assert!(model.services.is_empty());
    });
    // A fragment of another program's table is not kube-proxy's.
    nft_model(
        "chain input {\n\ttype filter hook input priority 0; policy drop;\n}\n",
        |model| {
            assert_eq!(model.mode, NftMode::None);
        },
    );
    for iptables in [
        "*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n",
        "# Generated by iptables-save v1.8.9\n*nat\n",
        "-A KUBE-SERVICES -j KUBE-NODEPORTS\n",
        ":chain {\n",
    ] {
        assert!(!is_nft_listing(iptables), "{iptables}");
    }
}
