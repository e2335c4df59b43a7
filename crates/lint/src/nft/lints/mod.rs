//! One file per nftables-mode lint: its declaration with docs, its check, and its pass/fail
//! cases. Codes `RL451`..`RL469`: the nftables half of layer `RL4xx` (Kubernetes), as
//! `RL151`..`RL169` are the nftables half of `RL1xx`.

pub mod dangling_verdict_target;
pub mod endpoint_address_mismatch;
pub mod foreign_drop_base_chain;
pub mod kube_proxy_in_both_backends;
pub mod masquerade_chain_altered;
pub mod missing_endpoint_hairpin;
pub mod nft_ruleset_scale;
pub mod numgen_index_gap;
pub mod rejected_service_key;
pub mod stale_service_chain;
pub mod unserved_cluster_ip;
pub mod unsynced_kube_proxy_table;

#[cfg(test)]
pub(crate) mod testing {
    use crate::nft::NftLint;
    use crate::nft::context::{IptablesFacts, NftContext, NftFindings};
    use rulelint_nft::{ChainGraph, Diagnostic, parse};

    /// The findings of one lint alone on an nft text.
    pub fn run(lint: &'static NftLint, text: &str) -> Vec<Diagnostic> {
        run_with(lint, text, &IptablesFacts::default())
    }

    /// [`run`] with the facts of an iptables part of the same file.
    pub fn run_with(lint: &'static NftLint, text: &str, facts: &IptablesFacts) -> Vec<Diagnostic> {
        let parsed = parse(text);
        let graph = ChainGraph::build(&parsed.ruleset);
        let cx = NftContext::new(&parsed.ruleset, &graph, facts);
        let mut out = Vec::new();
        (lint.check)(&cx, &mut NftFindings::new(lint, &mut out));
        out.into_iter().map(|(d, _)| d).collect()
    }

    /// Every `pass` text yields no finding of the lint; every `fail` text the given number.
    pub fn assert_cases(lint: &'static NftLint, pass: &[&str], fail: &[(&str, usize)]) {
        for text in pass {
            let found = run(lint, text);
            assert!(
                found.is_empty(),
                "expected no {}: {found:#?}\n{text}",
                lint.info.code
            );
        }
        for (text, n) in fail {
            let found = run(lint, text);
            assert_eq!(found.len(), *n, "{}: {found:#?}\n{text}", lint.info.code);
        }
    }

    /// A small healthy kube-proxy table (layout of kube-proxy 1.34): one Service with two
    /// endpoints, one without endpoints. Tests edit it with `str::replace`.
    pub const HEALTHY: &str = r#"table ip kube-proxy {
	comment "rules for kube-proxy"
	set cluster-ips {
		type ipv4_addr
		elements = { 172.30.0.41, 172.30.0.46 }
	}

	map no-endpoint-services {
		type ipv4_addr . inet_proto . inet_service : verdict
		elements = { 172.30.0.46 . tcp . 80 comment "ns6/svc6:p80" : goto reject-chain }
	}

	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		elements = { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
	}

	chain filter-forward {
		type filter hook forward priority filter; policy accept;
		ct state new jump service-endpoints-check
	}

	chain mark-for-masquerade {
		meta mark set meta mark | 0x00004000
	}

	chain masquerading {
		meta mark & 0x00004000 == 0x00000000 return
		meta mark set meta mark ^ 0x00004000
		masquerade fully-random
	}

	chain nat-postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		jump masquerading
	}

	chain nat-prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		jump services
	}

	chain reject-chain {
		reject
	}

	chain services {
		ip daddr . meta l4proto . th dport vmap @service-ips
	}

	chain service-endpoints-check {
		ip daddr . meta l4proto . th dport vmap @no-endpoint-services
	}

	chain service-ULMVA6XW-ns1/svc1/tcp/p80 {
		ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
		numgen random mod 2 vmap { 0 : goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80, 1 : goto endpoint-AAAAAAAA-ns1/svc1/tcp/p80__10.180.0.2/80 }
	}

	chain endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 {
		ip saddr 10.180.0.1 jump mark-for-masquerade
		meta l4proto tcp dnat to 10.180.0.1:80
	}

	chain endpoint-AAAAAAAA-ns1/svc1/tcp/p80__10.180.0.2/80 {
		ip saddr 10.180.0.2 jump mark-for-masquerade
		meta l4proto tcp dnat to 10.180.0.2:80
	}
}
"#;
}
