//! One file per IPVS-mode lint: its declaration with docs, its check, and its pass/fail cases.
//! Codes `RL471`..`RL479`: the IPVS part of layer `RL4xx` (Kubernetes), as `RL171`..`RL174`
//! are the IPVS readers' part of `RL1xx`.

pub mod ipset_entry_without_virtual_server;
pub mod ipvs_checks_skipped;
pub mod ipvs_iptables_rules_altered;
pub mod ipvs_state_beside_iptables_mode;
pub mod missing_loopback_entry;
pub mod stale_ipvs_address;
pub mod unbound_service_address;
pub mod virtual_server_without_ipset_entry;
pub mod virtual_server_without_real_servers;

#[cfg(test)]
pub(crate) mod testing {
    use crate::ipvs::IpvsLint;
    use crate::ipvs::check::read_ipvs;
    use crate::ipvs::context::IpvsContext;
    use crate::source::{SectionKind, parse_iptables_sections, sections};
    use rulelint_parser::Diagnostic;

    /// A node in IPVS mode with no problem: iptables-save, ipset save and ip addr made by the
    /// real tools in a network namespace, ipvsadm -Ln in its own format
    /// (`corpus/ipvs/README.md`).
    pub const HEALTHY: &str = include_str!("../../../../../corpus/ipvs/healthy-node.txt");

    /// The findings of one lint alone on a file's text.
    pub fn run(lint: &'static IpvsLint, text: &str) -> Vec<Diagnostic> {
        let parts = sections(text);
        let Some((ipvs, _)) = read_ipvs(text, &parts) else {
            return Vec::new();
        };
        let has_iptables = parts
            .iter()
            .any(|s| s.kind == SectionKind::Iptables && !text[s.range.clone()].trim().is_empty());
        let iptables = has_iptables.then(|| parse_iptables_sections(text, &parts));
        let cx = IpvsContext::new(text, &ipvs, iptables.as_ref());
        let mut out = Vec::new();
        (lint.check)(&cx, &mut out);
        out
    }

    /// Every `pass` text yields no finding of the lint; every `fail` text the given number.
    pub fn assert_cases(lint: &'static IpvsLint, pass: &[&str], fail: &[(&str, usize)]) {
        for (i, text) in pass.iter().enumerate() {
            let found = run(lint, text);
            assert!(
                found.is_empty(),
                "{} pass case {i}: {found:#?}",
                lint.info.code
            );
        }
        for (i, (text, n)) in fail.iter().enumerate() {
            let found = run(lint, text);
            assert_eq!(
                found.len(),
                *n,
                "{} fail case {i}: {found:#?}",
                lint.info.code
            );
            for d in &found {
                assert_eq!(d.code, lint.info.code);
            }
        }
    }

    /// `HEALTHY` with one line (exactly, with its newline) removed.
    pub fn without(line: &str) -> String {
        let needle = format!("{line}\n");
        assert!(HEALTHY.contains(&needle), "not in HEALTHY: {line}");
        HEALTHY.replacen(&needle, "", 1)
    }

    /// The part of `HEALTHY` that one tool printed.
    pub fn part(first_line_prefix: &str, next_part_prefix: Option<&str>) -> String {
        let start = HEALTHY.find(first_line_prefix).expect("part start");
        let end = next_part_prefix
            .and_then(|p| HEALTHY[start..].find(p).map(|i| start + i))
            .unwrap_or(HEALTHY.len());
        HEALTHY[start..end].to_string()
    }
}
