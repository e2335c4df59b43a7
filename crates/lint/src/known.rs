//! What rulelint knows about names: iptables' extension targets, and who owns a chain.

/// Targets that are not chains: built-in verdicts and the extension targets of iptables and
/// xtables-addons. A `-j NAME` that is neither one of these nor a chain of its table is an error.
const EXTENSION_TARGETS: &[&str] = &[
    // Verdicts.
    "ACCEPT",
    "DROP",
    "RETURN",
    "QUEUE", //
    // iptables extensions (iptables-extensions(8)).
    "AUDIT",
    "CHECKSUM",
    "CLASSIFY",
    "CLUSTERIP",
    "CONNMARK",
    "CONNSECMARK",
    "CT",
    "DNAT",
    "DNPT",
    "DSCP",
    "ECN",
    "HL",
    "HMARK",
    "IDLETIMER",
    "LED",
    "LOG",
    "MARK",
    "MASQUERADE",
    "MIRROR",
    "NETMAP",
    "NFLOG",
    "NFQUEUE",
    "NOTRACK",
    "RATEEST",
    "REDIRECT",
    "REJECT",
    "SAME",
    "SECMARK",
    "SET",
    "SNAT",
    "SNPT",
    "SYNPROXY",
    "TCPMSS",
    "TCPOPTSTRIP",
    "TEE",
    "TOS",
    "TPROXY",
    "TRACE",
    "TTL",
    "ULOG", //
    // xtables-addons and other out-of-tree targets seen in the field.
    "ACCOUNT",
    "CHAOS",
    "DELUDE",
    "DHCPMAC",
    "DNETMAP",
    "ECHO",
    "IPMARK",
    "LOGMARK",
    "PROTO",
    "RAWDNAT",
    "RAWSNAT",
    "STEAL",
    "SYSRQ",
    "TARPIT",
    "ROUTE",
    "IMQ",
    "IPV4OPTSSTRIP",
    "JOOL",
    "JOOL_SIIT",
];

/// Whether `name` is a built-in verdict or a known extension target.
pub fn is_extension_target(name: &str) -> bool {
    EXTENSION_TARGETS.contains(&name)
}

/// Verdicts that end a packet's walk through the chain for good.
pub fn is_drop_or_reject(name: &str) -> bool {
    matches!(name, "DROP" | "REJECT")
}

/// The software that writes a chain, judged by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// kube-proxy, kubelet, kube-router: the `KUBE-*` chains listed in
    /// [`crate::kube::owners::KNOWN_CHAINS`], not every name with the prefix.
    Kubernetes,
    /// Docker: `DOCKER`, `DOCKER-*`.
    Docker,
    /// Flannel: `FLANNEL-*`.
    Flannel,
}

impl Owner {
    /// The owner's name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Owner::Kubernetes => "kube-proxy/kubelet",
            Owner::Docker => "Docker",
            Owner::Flannel => "Flannel",
        }
    }
}

/// Who writes a chain of this name, for the owners rulelint knows the rules of.
pub fn owner(chain: &str) -> Option<Owner> {
    if crate::kube::owners::known_chain(chain).is_some() {
        Some(Owner::Kubernetes)
    } else if chain == "DOCKER" || chain.starts_with("DOCKER-") {
        Some(Owner::Docker)
    } else if chain.starts_with("FLANNEL-") {
        Some(Owner::Flannel)
    } else {
        None
    }
}

/// kube-proxy's per-service and per-endpoint chains. When nothing jumps to one, the Kubernetes
/// lints report it with the Service's name; the generic unreferenced-chain lint leaves them alone.
pub fn is_kube_service_chain(chain: &str) -> bool {
    [
        "KUBE-SVC-",
        "KUBE-SVL-",
        "KUBE-EXT-",
        "KUBE-FW-",
        "KUBE-SEP-",
        "KUBE-XLB-",
    ]
    .iter()
    .any(|p| chain.starts_with(p))
}

/// Chains that nothing may jump to by design: kubelet's and kube-proxy's empty canary chains (to
/// notice when something flushes the table) and `KUBE-IPTABLES-HINT` (which tells other tools
/// the backend in use); marking chains that are installed up front and jumped to only once a
/// Service or a host port needs them; and ufw's chains, which ufw creates whether or not a
/// setting uses them.
pub fn is_unreferenced_by_design(chain: &str) -> bool {
    (chain.starts_with("KUBE-") && chain.ends_with("-CANARY"))
        || matches!(
            chain,
            "KUBE-IPTABLES-HINT" | "KUBE-MARK-DROP" | "KUBE-MARK-MASQ" | "CNI-HOSTPORT-SETMARK"
        )
        || chain.starts_with("ufw-")
        || chain.starts_with("ufw6-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_owners() {
        assert!(is_extension_target("MASQUERADE"));
        assert!(!is_extension_target("ACC"));
        assert!(!is_extension_target("accept"));
        assert_eq!(owner("KUBE-FIREWALL"), Some(Owner::Kubernetes));
        // Another add-on's chain under the same prefix.
        assert_eq!(owner("KUBE-METADATA-SERVER"), None);
        assert_eq!(owner("DOCKER"), Some(Owner::Docker));
        assert_eq!(owner("DOCKERISH"), None);
        assert_eq!(owner("cali-tw-cali1234"), None);
        assert!(is_kube_service_chain("KUBE-SEP-ABCDEFGHIJKLMNOP"));
        assert!(!is_kube_service_chain("KUBE-SERVICES"));
        assert!(is_unreferenced_by_design("KUBE-KUBELET-CANARY"));
        assert!(!is_unreferenced_by_design("KUBE-FORWARD"));
    }
}
