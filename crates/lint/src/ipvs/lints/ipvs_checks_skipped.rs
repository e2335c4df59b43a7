//! RL478 ipvs-checks-skipped: once per file with IPVS-mode output, which outputs were missing
//! for which checks.

use crate::ipvs::context::{IpvsContext, finding};
use crate::ipvs::{IpvsLint, Needs};
use crate::registry::{Category, IPVS_LINTS};
use rulelint_parser::{CodeInfo, Diagnostic, Severity};

/// The declaration.
pub static LINT: IpvsLint = IpvsLint {
    info: CodeInfo {
        code: "RL478",
        name: "ipvs-checks-skipped",
        severity: Severity::Info,
        summary: "some IPVS-mode checks were skipped because the file lacks the outputs they compare",
        docs: "## What it flags
A file with `ipvsadm`, `ipset` or `ip addr` output that lacks another output some IPVS-mode
check needs: one finding per file, at its first IPVS-mode line, naming each missing output and
the checks it would have enabled.

## Why it matters
The IPVS-mode checks compare outputs (virtual servers with ipset entries, `kube-ipvs0`
addresses, the pod network, the nat rules); with one of them missing they stay silent rather
than guess. A clean result then means less than it seems.

## Example
```text
IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.1:443 rr
  -> 172.16.1.3:6443              Masq    1      0          0
```
(no `ipset save`, no `ip addr`, no `iptables-save`)

## Instead
Collect all four from the node, into one file:
`iptables-save; ipset save; ipvsadm -Ln; ip addr` (for example through
`kubectl debug node/NODE -it --profile=sysadmin --image=...` with the tools installed), then
check that file.",
    },
    category: Category::Suspicious,
    needs: Needs {
        ipvsadm: false,
        ipset: false,
        kube_ipvs0: false,
        pod_network: false,
        iptables: false,
    },
    check,
};

fn check(cx: &IpvsContext<'_, '_>, out: &mut Vec<Diagnostic>) {
    // (missing output, codes that need it), in the order first met.
    let mut missing: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for lint in IPVS_LINTS {
        for output in cx.missing(lint.needs) {
            match missing.iter_mut().find(|(o, _)| *o == output) {
                Some((_, codes)) => codes.push(lint.info.code),
                None => missing.push((output, vec![lint.info.code])),
            }
        }
    }
    let o = cx.ipvs().outputs;
    let Some(first) = [o.ipvsadm, o.ipset, o.ip_addr]
        .into_iter()
        .flatten()
        .min_by_key(|s| s.start)
    else {
        return;
    };
    if missing.is_empty() {
        return;
    }
    let list: Vec<String> = missing
        .iter()
        .map(|(output, codes)| format!("`{output}` ({})", codes.join(", ")))
        .collect();
    out.push(finding(
        &LINT.info,
        first,
        format!("IPVS-mode checks skipped for want of {}", list.join(", ")),
        "first IPVS-mode output of the file",
        "collect `iptables-save; ipset save; ipvsadm -Ln; ip addr` from the node into one file and check it; outputs saved apart are one node with `rulelint check --node NAME FILE...`",
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::lints::testing::{HEALTHY, assert_cases, part};

    #[test]
    fn cases() {
        let ipvsadm = part("IP Virtual Server", Some("1: lo:"));
        let found = crate::ipvs::lints::testing::run(&LINT, &ipvsadm);
        assert_eq!(
            found[0].message,
            "IPVS-mode checks skipped for want of `ipset save` (RL472, RL473, RL475, RL476), `ip addr show kube-ipvs0` (RL474, RL475), `ip addr (the pod bridge cni0 or cbr0)` (RL476), `iptables-save (the nat table)` (RL477, RL479)"
        );
        let no_pod_bridge = HEALTHY.replace("cni0", "eth1");
        assert_cases(
            &LINT,
            &[HEALTHY, "just text\n"],
            &[(&ipvsadm, 1), (&no_pod_bridge, 1)],
        );
    }
}
