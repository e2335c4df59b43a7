//! `check` on the real dumps from public sources (`../shared/corpus/real/`, beside the checkout;
//! not part of the project). Ignored by default: `.ci/run` runs it with `--ignored`.
//!
//! Every finding on these dumps was read and judged a true positive (the judgements are in the
//! lines below); this test pins them, so a new false positive or a lost finding fails it.

use rulelint_lint::{Config, check};
use rulelint_parser::parse;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn real_dir() -> PathBuf {
    std::env::var_os("RULELINT_REAL_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/real"),
        PathBuf::from,
    )
}

/// The findings of `check` per file, code -> count. Files not listed have none.
fn expected(file: &str) -> &'static [(&'static str, usize)] {
    match file {
        // Docker's chains are declared but empty and nothing jumps to them: after the
        // flush-and-restart fix Docker was not restarted, so its jumps are gone.
        "helowd-centos7-flannel-after-fix-2024.txt" => &[("RL203", 5)],
        // `-A FORWARD -j REJECT --reject-with icmp-host-prohibited` above flanneld's forward jump:
        // the very breakage of this node (RL403; RL301 leaves shadowed hook jumps to it).
        "helowd-centos7-flannel-after-reboot-broken-2024.txt" => &[("RL403", 1)],
        // Empty IPv6 helper chains (dhcpv6, icmpv6-*, ll, mc, mc-ll) in an IPv4 dump. RL303: two
        // PREROUTING DNATs with the same match (`-i eth1 -p tcp --ctstate NEW --dport 24562`), so
        // the second, to 192.168.11.64, never applies (warning); and in invalid_ext/invalid_vpn,
        // `-s`/`-d 192.0.0.0/29` DROPs below the `192.0.0.0/24` DROPs, four pairs (info).
        "netnetwork-home-user-2015.txt" => &[("RL203", 8), ("RL303", 9)],
        // Empty LOG_DROP chain nothing uses.
        "netnetwork-internal-office-fw-2016.txt" => &[("RL203", 1)],
        // Two blocks of three FORWARD rules each repeated three times. RL303 (warnings): the
        // `-o eth4 -j PPPSNAT` and `-o eth5 -j KABELSNAT` jumps come after `-o eth4`/`-o eth5`
        // SNATs in POSTROUTING, and six `-d 10.10.0.0/16 -i ... -p icmp -j ACCEPT` come after
        // `-d 10.10.0.0/16 ! -p tcp -j DROP`: that ICMP is dropped.
        "netnetwork-openlab-hackerspace-2016.txt" => &[("RL302", 2), ("RL303", 8)],
        // Prompt line; `-j ACC   EPT` (corrupted paste: RL116 for `EPT`, RL201 for `ACC`);
        // fw3 wan-zone chains with no jump (the wan zone's rules are absent from this dump);
        // a FORWARD rule repeated. The same corruption split ten more values of single-valued
        // options (`--to-destination 192.16   8.1.1:22` x6, `--limit 25/s   ec`,
        // `--ctstate DN   AT` x3): RL116 since issue 15's class 4a, each refused by
        // iptables-restore (`Bad IP address "192.16"`, `Bad argument 'ec'`).
        "netnetwork-openwrt-crlf-prompt-2014.txt" => &[
            ("RL101", 1),
            ("RL116", 11),
            ("RL201", 1),
            ("RL203", 7),
            ("RL302", 1),
        ],
        // Two prompts, two dumps back to back.
        "netnetwork-pastebin-weave-docker-double-dump-2015.txt" => &[("RL101", 2), ("RL106", 2)],
        // INPUT and OUTPUT rules written twice.
        "netnetwork-psa-lab-notrack-2016.txt" => &[("RL302", 3)],
        // Prose before, `ip addr` output after.
        "netnetwork-qubes-sys-firewall-with-prose-2016.txt" => &[("RL101", 2)],
        // Shorewall's logdrop, logreject and shorewall chains, unused in this configuration.
        "netnetwork-shorewall-home-router-2014.txt" => &[("RL203", 3)],
        // `-A FORWARD_FIREWALL -j DROP` then `-i eth0 -j DROP` and `-i eth1 -j RETURN`; same
        // in INPUT_FIREWALL: the RETURN for eth1 never runs.
        "netnetwork-synology-nas-2016.v6.txt" => &[("RL301", 2)],
        // A generated firewall with many unused per-host chains and repeated rules. RL303 (all
        // info): per-host UDP ACCEPTs below an ACCEPT of the whole subnet or of every source with
        // the same ports (`--dport 1:65535`, multiport lists); the TCP copies are not reported
        // because `--tcp-flags` is not understood.
        "netnetwork-tum-chair-fw-2016-06.txt" => &[("RL203", 26), ("RL302", 88), ("RL303", 38)],
        "netnetwork-tum-chair-fw-2016-06.v6.txt" => &[("RL203", 22), ("RL302", 141), ("RL303", 54)],
        // Three POSTROUTING rules appended 58 times each. RL303 (info): three port ACCEPTs from
        // 127.0.0.1 to 127.0.0.1 below `-s 127.0.0.1 -d 127.0.0.1 -j ACCEPT`.
        "netnetwork-ugent-iptables-1.3.5-2015.txt" => &[("RL302", 3), ("RL303", 3)],
        // INPUT rules repeated.
        "netnetwork-veroneau-trailing-spaces-2015.txt" => &[("RL302", 3)],
        // Twenty hand-wrapped rules. KUBE-SVC-TCOU7JCQXEZGVUNU (kube-system/kube-dns:dns) is
        // jumped to from KUBE-SERVICES but has no endpoint jump, and filter KUBE-SERVICES holds
        // no "has no endpoints" REJECT for it: kube-proxy of that age writes one or the other,
        // so the poster's edit ("removed grafana/heapster rules") lost a rule, and DNS over UDP
        // to the cluster IP would leave nat untranslated.
        "praqma-flannel-node1-hand-wrapped-2016.txt" => &[("RL107", 1), ("RL406", 1)],
        _ => &[],
    }
}

#[test]
#[ignore = "needs ../shared/corpus/real beside the checkout; run by .ci/run"]
fn findings_on_real_dumps_are_the_judged_ones() {
    let dir = real_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    assert!(files.len() >= 30, "only {} real dumps", files.len());
    let mut mismatches = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("dump");
        let mut found: BTreeMap<&str, usize> = BTreeMap::new();
        for d in check(&parse(&text), &Config::default()) {
            *found.entry(d.code).or_default() += 1;
        }
        let want: BTreeMap<&str, usize> = expected(&name).iter().copied().collect();
        if found != want {
            mismatches.push(format!("{name}: expected {want:?}, found {found:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
