//! Regressions found by checking `rulelint trace` against the kernel
//! (`scripts/check-trace-kernel.sh`, iptables 1.8.9 nf_tables, nft 1.0.6, Linux 6.18): on both
//! backends,
//! - a raw-table notrack (`-j CT --notrack`, `notrack`) takes the packet out of conntrack: the
//!   nat tables do not run (no DNAT) and its conntrack state is UNTRACKED, not NEW;
//! - the host's packet to one of its own addresses goes out through `lo` and comes back in
//!   through PREROUTING (whose mangle rules run again) before INPUT; the nat tables do not run
//!   on the way in (its connection's NAT was set up on the way out);
//! - an nft rule that matches and has no verdict or other statement (`tcp dport 80 counter`)
//!   is on the path, as `nft monitor trace` lists it.
//!
//! The dumps are `corpus/trace/kernel-notrack-loopback/`.

use rulelint_lint::trace::nft::{NftTraceNode, trace_nft};
use rulelint_lint::trace::report::TracedDump;
use rulelint_lint::trace::{NodeTrace, Origin, PacketSpec, Verdict};
use rulelint_lint::trace::{TraceNode, trace};

const IPTABLES: &str =
    include_str!("../../../corpus/trace/kernel-notrack-loopback/node-iptables.txt");
const NFT: &str = include_str!("../../../corpus/trace/kernel-notrack-loopback/node-nft.txt");

fn udp_notrack() -> PacketSpec {
    let mut spec = PacketSpec::to("192.168.7.1:5353".parse().unwrap());
    spec.protocol = Some(PacketSpec::parse_protocol("udp").unwrap());
    spec.from = Some(Origin::Outside);
    spec.src = Some("192.0.2.7".parse().unwrap());
    spec.in_interface = Some("eth0".into());
    spec.node_ips.push("192.168.7.1".parse().unwrap());
    spec
}

fn host_to_itself() -> PacketSpec {
    let mut spec = PacketSpec::to("192.168.7.1:80".parse().unwrap());
    spec.from = Some(Origin::Host);
    spec.node_ips.push("192.168.7.1".parse().unwrap());
    spec
}

/// The one outcome's verdict, destination and steps as `table chain line effect`.
fn path(node: &dyn TracedDump, t: &NodeTrace) -> (Verdict, String, Vec<String>) {
    assert_eq!(t.outcomes.len(), 1, "{:?}", t.outcomes);
    let o = &t.outcomes[0];
    let steps = o
        .steps
        .iter()
        .map(|s| {
            let d = node.step_doc(s.at, &s.effect);
            format!("{} {} {:?} {}", d.table, d.chain, d.line, d.effect)
        })
        .collect();
    (o.verdict, o.destination.endpoint.to_string(), steps)
}

#[test]
fn iptables_notrack_skips_nat_and_is_untracked() {
    let parsed = rulelint_parser::parse(IPTABLES);
    let node = TraceNode::new("n", &parsed.ruleset);
    let (verdict, dst, steps) = path(&node, &trace(&node, &udp_notrack()));
    assert_eq!(
        (verdict, dst.as_str()),
        (Verdict::Accept, "192.168.7.1:5353")
    );
    assert!(!steps.iter().any(|s| s.starts_with("nat ")), "{steps:#?}");
    // The kernel: `--ctstate NEW -j DROP` does not match, `--ctstate UNTRACKED -j ACCEPT` does.
    assert!(
        steps
            .last()
            .unwrap()
            .starts_with("filter INPUT Some(27) ACCEPT"),
        "{steps:#?}"
    );
}

#[test]
fn iptables_host_to_itself_comes_back_through_prerouting() {
    let parsed = rulelint_parser::parse(IPTABLES);
    let node = TraceNode::new("n", &parsed.ruleset);
    let (verdict, _, steps) = path(&node, &trace(&node, &host_to_itself()));
    // mangle PREROUTING turns OUTPUT's mark 0x3 into 0x103: `-m mark --mark 0x3 -j DROP`
    // does not match; nat INPUT's SNAT does not run.
    assert_eq!(verdict, Verdict::Accept, "{steps:#?}");
    assert!(
        steps
            .iter()
            .any(|s| s.contains("mangle PREROUTING Some(10) MARK 0x3 -> 0x103")),
        "{steps:#?}"
    );
    assert!(
        !steps.iter().any(|s| s.starts_with("nat INPUT")),
        "{steps:#?}"
    );
}

#[test]
fn nft_notrack_skips_nat_and_is_untracked() {
    let parsed = rulelint_nft::parse(NFT);
    let node = NftTraceNode::new("n", &parsed.ruleset);
    let (verdict, dst, steps) = path(&node, &trace_nft(&node, &udp_notrack()));
    assert_eq!(
        (verdict, dst.as_str()),
        (Verdict::Accept, "192.168.7.1:5353")
    );
    assert!(!steps.iter().any(|s| s.contains(" nat-pre ")), "{steps:#?}");
    assert!(
        steps
            .last()
            .unwrap()
            .starts_with("inet t in Some(27) accept"),
        "{steps:#?}"
    );
}

#[test]
fn nft_host_to_itself_comes_back_through_prerouting() {
    let parsed = rulelint_nft::parse(NFT);
    let node = NftTraceNode::new("n", &parsed.ruleset);
    let (verdict, _, steps) = path(&node, &trace_nft(&node, &host_to_itself()));
    assert_eq!(verdict, Verdict::Accept, "{steps:#?}");
    assert!(
        steps
            .iter()
            .any(|s| s.contains("mark-in Some(15) mark 0x3 -> 0x103")),
        "{steps:#?}"
    );
    // `tcp dport 80 counter`: matched, no verdict, on the path.
    assert!(
        steps
            .iter()
            .any(|s| s.starts_with("inet t pre Some(5) matched")),
        "{steps:#?}"
    );
    assert!(!steps.iter().any(|s| s.contains(" nat-pre ")), "{steps:#?}");
}
