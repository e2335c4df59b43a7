//! kube-proxy's IPVS mode: the context over what `rulelint-ipvs` read from a file (`ipvsadm`,
//! `ipset`, `ip addr`) beside the file's iptables part, the lints over it (`RL471`..), and the
//! pipeline that runs them. Findings flow through the same configuration, sorting and output
//! formats as the other lints.

pub mod check;
pub mod context;
pub mod lints;
pub mod sets;

use crate::registry::Category;
use context::IpvsContext;
use rulelint_parser::{CodeInfo, Diagnostic};

/// The outputs a check needs; without one of them it stays silent, and `RL478` says so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// `ipvsadm -Ln` with numeric addresses.
    pub ipvsadm: bool,
    /// `ipset save` or `ipset list`.
    pub ipset: bool,
    /// `ip addr show kube-ipvs0`.
    pub kube_ipvs0: bool,
    /// `ip addr` of the pod bridge (`cni0`, `cbr0`): which endpoints are on this node.
    pub pod_network: bool,
    /// `iptables-save` (its `nat` table).
    pub iptables: bool,
}

/// An IPVS-mode lint: its catalogue entry, what it needs, and the function that runs it.
pub struct IpvsLint {
    /// Code, name, default severity, summary and docs.
    pub info: CodeInfo,
    /// What kind of problem it reports.
    pub category: Category,
    /// The outputs it needs.
    pub needs: Needs,
    /// Reads the context and pushes findings. Never mutates anything else.
    pub(crate) check: fn(&IpvsContext<'_, '_>, &mut Vec<Diagnostic>),
}

impl std::fmt::Debug for IpvsLint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpvsLint")
            .field("code", &self.info.code)
            .field("name", &self.info.name)
            .finish()
    }
}
