//! nftables-mode analysis (issue 18).

pub mod kube;
