//! `generate_ipvs`: the four outputs of a node in IPVS mode, in the formats of the healthy node
//! of `corpus/ipvs/` (made with the real tools), consistent with each other and with the
//! iptables-mode node of the same shape.

use std::collections::BTreeSet;
use std::path::Path;

use rulelint_dumpgen::{Shape, generate, generate_ipvs, ipvs_virtual_server_count};

fn healthy() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/ipvs/healthy-node.txt");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn busy(services: usize, seed: u64) -> Shape {
    Shape {
        services,
        nodeport_share: 0.2,
        loadbalancer_share: 0.2,
        local_policy_share: 0.5,
        affinity_share: 0.15,
        empty_share: 0.05,
        seed,
        nodes: 4,
        node: 1,
        ..Shape::default()
    }
}

/// The line kinds of an IPVS node: what each line starts with, with numbers and names
/// blanked, so that the generated node and the healthy corpus node can be compared by shape.
fn line_kind(line: &str) -> String {
    // A hash set's random seed is hex.
    let line = match line.split_once(" initval 0x") {
        Some((head, _)) => head,
        None => line,
    };
    let mut out = String::new();
    let mut last_digit = false;
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('9');
            }
            last_digit = true;
        } else {
            out.push(c);
            last_digit = false;
        }
    }
    out
}

#[test]
fn deterministic_and_distinct_per_node() {
    let shape = busy(300, 2);
    assert_eq!(generate_ipvs(&shape), generate_ipvs(&shape));
    let other = Shape { node: 2, ..shape };
    assert_ne!(generate_ipvs(&shape), generate_ipvs(&other));
}

#[test]
fn ipvsadm_and_ip_addr_lines_have_the_real_tools_shapes() {
    let healthy = healthy();
    let known: BTreeSet<String> = healthy.lines().map(line_kind).collect();
    let node = generate_ipvs(&busy(300, 3));
    // Real-server lines: ipvsadm's "  -> %-28s %-7s %-6d %-10u %-10u", exactly as wide.
    let width = healthy
        .lines()
        .find(|l| l.starts_with("  -> 1"))
        .map(str::len)
        .expect("a real server in the corpus node");
    let mut reals = 0;
    for line in node.lines().filter(|l| l.starts_with("  -> 1")) {
        assert_eq!(line.len(), width, "{line:?}");
        assert!(
            line.ends_with(" Masq    1      0          0         "),
            "{line:?}"
        );
        reals += 1;
    }
    assert!(reals > 300);
    for prefix in [
        "IP Virtual Server",
        "Prot ",
        "  -> RemoteAddress",
        "TCP  ",
        "    inet ",
        "       valid_lft",
        "add KUBE-NODE-PORT-TCP ",
        "add KUBE-CLUSTER-IP ",
        "add KUBE-LOOP-BACK ",
        "create KUBE-",
    ] {
        let mut seen = false;
        for line in node.lines().filter(|l| l.starts_with(prefix)) {
            seen = true;
            let kind = line_kind(line);
            let close = known.iter().any(|k| {
                k == &kind
                    || (prefix == "TCP  " && kind.starts_with("TCP  9.9.9.9:9 rr"))
                    || (prefix == "    inet " && k.starts_with("    inet 9.9.9.9/9"))
            });
            assert!(close, "{line:?} has no counterpart in corpus/ipvs");
        }
        assert!(seen, "no {prefix:?} line");
    }
}

#[test]
fn the_parts_agree_with_each_other() {
    let shape = busy(500, 4);
    let node = generate_ipvs(&shape);
    let lines: Vec<&str> = node.lines().collect();
    let bound: BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| l.strip_suffix("/32 scope global kube-ipvs0"))
        .filter_map(|l| l.strip_prefix("    inet "))
        .collect();
    let ipvs_ips: BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("add KUBE-IPVS-IPS "))
        .collect();
    assert_eq!(bound, ipvs_ips);
    // Every virtual server's address is bound, except node-port ones on the node's address.
    let mut servers = 0;
    for l in lines
        .iter()
        .filter(|l| l.starts_with("TCP  ") || l.starts_with("UDP  "))
    {
        servers += 1;
        let addr = l[5..].split(':').next().expect("address");
        assert!(bound.contains(addr) || addr == "192.168.0.11", "{l}");
    }
    assert_eq!(servers, ipvs_virtual_server_count(&shape));
    // One KUBE-CLUSTER-IP entry per Service port.
    let cluster = lines
        .iter()
        .filter(|l| l.starts_with("add KUBE-CLUSTER-IP "))
        .count();
    assert_eq!(cluster, shape.services);
    // Node ports: the same ones the iptables node handles.
    let mut ipvs_ports: Vec<&str> = lines
        .iter()
        .filter_map(|l| {
            l.strip_prefix("add KUBE-NODE-PORT-TCP ")
                .or(l.strip_prefix("add KUBE-NODE-PORT-UDP "))
        })
        .collect();
    ipvs_ports.sort_unstable();
    let iptables = generate(&shape);
    let mut ipt_ports: Vec<&str> = iptables
        .lines()
        .filter(|l| {
            // Node ports with endpoints, and those rejected or dropped without them.
            (l.starts_with("-A KUBE-NODEPORTS ") && l.contains("-j KUBE-EXT-"))
                || (l.starts_with("-A KUBE-EXTERNAL-SERVICES ") && l.contains("--dst-type LOCAL"))
        })
        .filter_map(|l| l.split(" --dport ").nth(1))
        .filter_map(|r| r.split(' ').next())
        .collect();
    ipt_ports.sort_unstable();
    ipt_ports.dedup();
    assert!(!ipvs_ports.is_empty());
    assert_eq!(ipvs_ports, ipt_ports);
}

#[test]
fn other_modes_are_untouched() {
    // The iptables dump still starts with mangle and has no IPVS part.
    let dump = generate(&Shape::default());
    assert!(dump.starts_with("# Generated by iptables-save"));
    assert!(!dump.contains("create KUBE-"));
    assert!(!dump.contains("IP Virtual Server"));
}
