//! RL471 virtual-server-without-real-servers: an IPVS virtual server with no real server, or
//! whose real servers all have weight 0.

use crate::ipvs::context::{IpvsContext, finding};
use crate::ipvs::{IpvsLint, Needs};
use crate::registry::Category;
use rulelint_parser::{CodeInfo, Diagnostic, Severity};

/// The declaration.
pub static LINT: IpvsLint = IpvsLint {
    info: CodeInfo {
        code: "RL471",
        name: "virtual-server-without-real-servers",
        severity: Severity::Info,
        summary: "an IPVS virtual server has no real server, or only real servers of weight 0",
        docs: "## What it flags
A virtual server of `ipvsadm -Ln` (or `ipvsadm-save -n`) with no `->` real server line, or
whose real servers all have weight 0.

## Why it matters
IPVS has nowhere to send new connections to the address: they fail. kube-proxy keeps the
virtual server of a Service without ready endpoints, so this is how such a Service looks in IPVS
mode; weight 0 is how kube-proxy drains an endpoint that is going away (graceful termination),
and a virtual server whose real servers all stay at weight 0 is stuck draining. Both can be
normal for a moment, which is why this is information, not a warning.

## Example
```text
TCP  10.96.50.5:80 rr
TCP  10.96.0.10:53 rr
  -> 10.244.1.5:53                Masq    0      0          3
```

## Instead
Check the Service's endpoints (`kubectl get endpointslices -l kubernetes.io/service-name=NAME`)
and the readiness of its pods; a real server stuck at weight 0 long after its pod is gone points
at kube-proxy's graceful-termination manager (restart kube-proxy).

## Known problems
`--stats` and `--rate` listings do not show weights: only missing real servers are reported
from them.",
    },
    category: Category::Suspicious,
    needs: Needs {
        ipvsadm: true,
        ipset: false,
        kube_ipvs0: false,
        pod_network: false,
        iptables: false,
    },
    check,
};

fn check(cx: &IpvsContext<'_, '_>, out: &mut Vec<Diagnostic>) {
    for vs in &cx.ipvs().virtual_servers {
        let target = vs.target.text;
        if vs.real_servers.is_empty() {
            out.push(finding(
                &LINT.info,
                vs.span,
                format!("virtual server {target} has no real server: new connections to it fail"),
                "virtual server without `->` lines",
                "a Service without ready endpoints looks like this; check its EndpointSlices and pods",
            ));
        } else if vs.real_servers.iter().all(|rs| rs.weight == Some(0)) {
            out.push(finding(
                &LINT.info,
                vs.span,
                format!(
                    "every real server of {target} has weight 0: new connections to it fail"
                ),
                "virtual server whose real servers all have weight 0",
                "weight 0 drains an endpoint that is going away; if it stays, check the Service's endpoints and restart kube-proxy",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::lints::testing::{HEALTHY, assert_cases};

    #[test]
    fn cases() {
        let served = HEALTHY.replace("TCP  10.96.50.5:80 rr\n", "");
        let drained = served.replace(
            "  -> 192.168.56.10:6443           Masq    1 ",
            "  -> 192.168.56.10:6443           Masq    0 ",
        );
        let half_drained = served.replace(
            "  -> 10.244.1.5:53                Masq    1 ",
            "  -> 10.244.1.5:53                Masq    0 ",
        );
        let stats = "IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes
  -> RemoteAddress:Port
TCP  10.96.0.1:443                       5       30        0     1800        0
  -> 172.16.1.3:6443                     5       30       20     1800     1200
";
        assert_cases(
            &LINT,
            &[&served, &half_drained, stats],
            &[(HEALTHY, 1), (&drained, 1)],
        );
    }
}
