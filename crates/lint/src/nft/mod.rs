//! nftables mode: the Kubernetes model of an nftables node (`kube`), the lints over `nft list ruleset` text (the syntax model and chain graph of
//! `rulelint-nft`), their context and the pipeline that runs them. Findings flow through the
//! same configuration, sorting and output formats as the iptables lints.

pub mod check;
pub mod context;
pub mod kube;
pub mod lints;

use crate::registry::Category;
use context::{NftContext, NftFindings};
use rulelint_parser::CodeInfo;

/// An nftables-mode lint: its catalogue entry and the function that runs it.
pub struct NftLint {
    /// Code, name, default severity, summary and docs.
    pub info: CodeInfo,
    /// What kind of problem it reports.
    pub category: Category,
    /// Reads the context and pushes findings. Never mutates anything else.
    pub(crate) check: fn(&NftContext<'_, '_>, &mut NftFindings<'_>),
}

impl std::fmt::Debug for NftLint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NftLint")
            .field("code", &self.info.code)
            .field("name", &self.info.name)
            .finish()
    }
}
