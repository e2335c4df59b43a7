//! Readers for the state of a kube-proxy node in IPVS mode, as users paste it: `ipvsadm -Ln`
//! (and `--stats`, `--rate`, `--thresholds`, `--persistent-conn`, `ipvsadm-save -n`, and
//! `ipvsadm -L` with resolved names), `ipset save` / `ipset list`, and `ip addr` / `ip -o addr`.
//!
//! **Invariant:** reading never fails as a whole and never panics: [`parse`] returns the model
//! *and* diagnostics with byte spans; a line it does not know becomes a diagnostic and reading
//! goes on at the next line. Linear in the text; no recursion.
//!
//! Formats, from the tools' sources: `ipvsadm.c` (`print_title`, `print_service_entry`,
//! `list_all`, `addrport_to_anyname`), ipset's `save`/`list` output (made with ipset 7.x in a
//! network namespace), iproute2's `ip addr`. See `corpus/ipvs/README.md`.

pub mod codes;
pub mod model;
mod parse;

pub use model::{
    Forward, HostPort, Interface, IpSet, Ipvs, Outputs, Protocol, RealServer, SetFamily, SetMember,
    VirtualServer,
};
pub use parse::{Parsed, parse};
pub use rulelint_parser::{Diagnostic, Severity, Span};

/// Whether a line (trimmed) opens `ipvsadm`, `ipset` or `ip addr` output: the lines a text can
/// be split on. `next` is the line after it (an `ipset list` block opens with `Name:` then
/// `Type:`).
pub fn opens_output(line: &str, next: Option<&str>) -> bool {
    if line.starts_with("IP Virtual Server version") || line.starts_with("Prot LocalAddress:Port") {
        return true;
    }
    let mut words = line.split_ascii_whitespace();
    let first = words.next().unwrap_or("");
    match first {
        "-A" => matches!(
            words.next(),
            Some("-t" | "-u" | "-f" | "--sctp-service" | "--tcp-service" | "--udp-service")
        ),
        "create" => words.nth(1).is_some_and(|kind| {
            ["hash:", "bitmap:", "list:"]
                .iter()
                .any(|p| kind.starts_with(p))
        }),
        "Name:" => next.is_some_and(|n| n.trim_start().starts_with("Type:")),
        _ => {
            // `5: kube-ipvs0: <BROADCAST,NOARP> ...` and `5: kube-ipvs0    inet 10.96.0.1/32 ...`
            let Some(index) = first.strip_suffix(':') else {
                return false;
            };
            let name = words.next().unwrap_or("");
            let third = words.next().unwrap_or("");
            !index.is_empty()
                && index.bytes().all(|b| b.is_ascii_digit())
                && !name.is_empty()
                && ((name.ends_with(':') && third.starts_with('<'))
                    || matches!(third, "inet" | "inet6"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openings() {
        for yes in [
            "IP Virtual Server version 1.2.1 (size=4096)",
            "Prot LocalAddress:Port Scheduler Flags",
            "-A -t 10.96.0.1:443 -s rr",
            "create KUBE-CLUSTER-IP hash:ip,port family inet",
            "5: kube-ipvs0: <BROADCAST,NOARP> mtu 1500",
            "5: kube-ipvs0    inet 10.96.0.1/32 scope global kube-ipvs0",
        ] {
            assert!(opens_output(yes, None), "{yes}");
        }
        assert!(opens_output(
            "Name: KUBE-CLUSTER-IP",
            Some("Type: hash:ip,port")
        ));
        for no in [
            "-A KUBE-SERVICES -j RETURN",
            "create table ip x",
            "Name: someone",
            "1: hello",
            "add KUBE-CLUSTER-IP 10.0.0.1,tcp:80",
            "",
        ] {
            assert!(!opens_output(no, Some("x")), "{no}");
        }
    }
}
