//! Reading kube-proxy's rule comments: which Service port a comment names, and what it says of
//! it.

use rulelint_parser::RuleRef;
use rulelint_parser::views::{Negatable, unquote};
use std::borrow::Cow;

/// What a kube-proxy comment says about the Service port it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommentRole {
    /// `ns/svc:port cluster IP`: dispatch to the service chain.
    ClusterIp,
    /// `ns/svc:port external IP`.
    ExternalIp,
    /// `ns/svc:port loadbalancer IP`.
    LoadBalancerIp,
    /// `ns/svc:port has no endpoints`: the filter REJECT of a Service without endpoints.
    NoEndpoints,
    /// `ns/svc:port has no local endpoints`: the DROP of a Local-policy Service.
    NoLocalEndpoints,
    /// `ns/svc:port traffic not accepted by KUBE-FW-...`: loadBalancerSourceRanges' drop.
    NotAccepted,
    /// `ns/svc:port -> 10.244.1.5:8080`: a jump to one endpoint.
    Endpoint,
    /// `masquerade traffic for ns/svc:port external destinations` and the other KUBE-EXT rules.
    External,
    /// Just `ns/svc:port` (node ports, endpoint chains, older layouts).
    Plain,
}

/// The fixed phrases kube-proxy writes after a Service port's name and a space, and what each
/// says of the port.
const PHRASES: &[(&str, CommentRole)] = &[
    ("cluster IP", CommentRole::ClusterIp),
    ("external IP", CommentRole::ExternalIp),
    ("loadbalancer IP", CommentRole::LoadBalancerIp),
    ("has no endpoints", CommentRole::NoEndpoints),
    ("has no local endpoints", CommentRole::NoLocalEndpoints),
];

/// What a comment `NAME PHRASE` says of its Service port, from the phrase after the name's
/// space ([`service_comment`] gives this role when the name is a Service port name).
pub(crate) fn phrase_role(phrase: &str) -> Option<CommentRole> {
    PHRASES
        .iter()
        .find(|&&(p, _)| p == phrase)
        .map(|&(_, role)| role)
}

/// The Service port a kube-proxy comment names (`default/kubernetes:https`, or `ns/svc` for an
/// unnamed port) and what the comment says of it; `None` for comments kube-proxy does not write
/// about one Service port.
///
/// A Service port name has no spaces, so it is the comment's first word, and the rest is one
/// of a few fixed phrases; only the `KUBE-EXT` comments put a phrase first. This is read for
/// every kube-proxy chain of a 250k-rule node, so it looks at the words once rather than trying
/// each phrase as a suffix.
pub fn service_comment(comment: &str) -> Option<(&str, CommentRole)> {
    const SUFFIXES: &[(&str, CommentRole)] = PHRASES;
    const EXTERNAL: &[&str] = &[
        "masquerade traffic for ",
        "pod traffic for ",
        "route LOCAL traffic for ",
        "masquerade LOCAL traffic for ",
    ];
    const NOT_ACCEPTED: &str = " traffic not accepted by ";
    // The first space, found by `memchr` (`split_once` looks for a `char`).
    let Some((first, rest)) =
        memchr::memchr(b' ', comment.as_bytes()).map(|i| (&comment[..i], &comment[i + 1..]))
    else {
        return is_service_port_name(comment).then_some((comment, CommentRole::Plain));
    };
    if let Some(&(_, role)) = SUFFIXES.iter().find(|(s, _)| *s == rest) {
        return is_service_port_name(first).then_some((first, role));
    }
    // A comment that ends in a fixed phrase but whose name has spaces is nobody's.
    if SUFFIXES.iter().any(|(s, _)| {
        comment.len() > s.len()
            && comment.ends_with(s)
            && comment.as_bytes()[comment.len() - s.len() - 1] == b' '
    }) {
        return None;
    }
    if let Some(name) = EXTERNAL.iter().find_map(|p| {
        comment
            .strip_prefix(p)?
            .strip_suffix(" external destinations")
    }) {
        return is_service_port_name(name).then_some((name, CommentRole::External));
    }
    if let Some((name, _)) = comment.split_once(NOT_ACCEPTED) {
        return is_service_port_name(name).then_some((name, CommentRole::NotAccepted));
    }
    if rest.starts_with("-> ") {
        return is_service_port_name(first).then_some((first, CommentRole::Endpoint));
    }
    None
}

/// [`service_comment`] of a quoted comment in kube-proxy's usual form, `"NAME PHRASE"` (a name
/// of Service port name bytes, a space, one of its fixed phrases), read in one pass over the
/// name: `Some(answer)` when `raw` has that form (its text then holds no quote or escape, so
/// this is `service_comment` of the text between the quotes), `None` for any other form, left
/// to the general reading. A search for quotes and escapes, then for the space, cost more on
/// these short texts than the name's own pass (this runs for every Service's first comment).
pub(crate) fn quoted_phrase_comment(raw: &str) -> Option<Option<(&str, CommentRole)>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let (mut slashes, mut slash, mut colon) = (0, 0, None);
    let mut space = None;
    for (i, &b) in bytes.iter().enumerate() {
        match NAME_BYTES[usize::from(b)] {
            NAME_BYTE => {}
            NAME_SLASH => {
                if slashes == 0 {
                    slash = i;
                }
                slashes += 1;
            }
            NAME_COLON => {
                if slashes > 0 && colon.is_none() {
                    colon = Some(i);
                }
            }
            _ => {
                space = Some(i);
                break;
            }
        }
    }
    let space = space.filter(|&i| bytes[i] == b' ')?;
    let role = phrase_role(&inner[space + 1..])?;
    // As `is_service_port_name` of the name: one slash, namespace and name not empty (a
    // second slash would have made it false at once).
    let name_end = colon.unwrap_or(space);
    let is_name = slashes == 1 && slash > 0 && name_end > slash + 1;
    Some(is_name.then_some((&inner[..space], role)))
}

/// Every `-m comment --comment` text of a rule, in order, without its quotes. Borrowed unless
/// the text holds a `\` escape, so that reading the comments of every rule allocates nothing.
/// (Calico writes two comments per rule: its `cali:` rule ID, then the rule's description.)
pub fn comments<'r, 'a>(rule: RuleRef<'r, 'a>) -> impl Iterator<Item = Cow<'a, str>> + 'r {
    rule.matches()
        .filter(|m| m.module() == Some("comment"))
        .flat_map(|m| m.options())
        .filter(|o| o.name() == "--comment")
        .filter_map(|o| o.args().next())
        .map(|text| {
            match text
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .filter(|t| !t.contains(['"', '\\']))
            {
                Some(inner) => Cow::Borrowed(inner),
                None => unquote(text),
            }
        })
}

/// The first argument of an option of any match, with its negation. Unlike
/// `RuleRef::module_option`, this also finds `--dport` in kube-proxy's own restore input, which
/// writes `-m tcp -p tcp -d IP --dport N`: there the basic options end the `tcp` match before
/// its `--dport`.
pub fn option_anywhere<'a>(rule: RuleRef<'_, 'a>, names: &[&str]) -> Option<Negatable<&'a str>> {
    rule.matches()
        .flat_map(|m| m.options())
        .find(|o| names.contains(&o.name()))
        .map(|o| Negatable {
            negated: o.negated(),
            value: o.args().next().unwrap_or(""),
        })
}

/// `namespace/name` or `namespace/name:port`, as Kubernetes names allow them: no spaces, one
/// slash, non-empty namespace and name. One pass over the bytes.
pub fn is_service_port_name(text: &str) -> bool {
    let mut slash = None;
    let mut colon = None;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        match NAME_BYTES[usize::from(b)] {
            NAME_BYTE => {}
            NAME_SLASH if slash.is_none() => slash = Some(i),
            NAME_COLON => {
                if slash.is_some() && colon.is_none() {
                    colon = Some(i);
                }
            }
            _ => return false,
        }
    }
    let Some(slash) = slash else {
        return false;
    };
    let name_end = colon.unwrap_or(text.len());
    slash > 0 && name_end > slash + 1
}

/// What a byte is in a Service port name (`ns/svc:port`): [`NAME_BYTE`] (a letter, a digit,
/// `-`, `.`, `_`), [`NAME_SLASH`], [`NAME_COLON`], or 0, none of them. One table lookup a byte
/// where the tests of each byte cost several (every kube-proxy comment's name is checked).
const NAME_BYTES: [u8; 256] = {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_') {
            NAME_BYTE
        } else if byte == b'/' {
            NAME_SLASH
        } else if byte == b':' {
            NAME_COLON
        } else {
            0
        };
        b += 1;
    }
    table
};
const NAME_BYTE: u8 = 1;
const NAME_SLASH: u8 = 2;
const NAME_COLON: u8 = 3;

/// The 16-character hash kube-proxy gives every chain of one Service port (`KUBE-SVC-`,
/// `KUBE-SVL-`, `KUBE-EXT-`, `KUBE-FW-`, `KUBE-XLB-` share it), with the chain's kind.
pub fn service_chain(chain: &str) -> Option<(ServiceChainKind, &str)> {
    // `KUBE-` once, then the kind's bytes: this runs for every chain of nat and every dispatch
    // rule's target, where trying each whole prefix in turn cost several comparisons a name.
    let rest = chain.strip_prefix("KUBE-")?;
    let (kind, hash_at) = match rest.as_bytes() {
        [b'S', b'V', b'C', b'-', ..] => (ServiceChainKind::Cluster, 4),
        [b'S', b'V', b'L', b'-', ..] => (ServiceChainKind::Local, 4),
        [b'E', b'X', b'T', b'-', ..] => (ServiceChainKind::External, 4),
        [b'F', b'W', b'-', ..] => (ServiceChainKind::Firewall, 3),
        [b'X', b'L', b'B', b'-', ..] => (ServiceChainKind::Local, 4),
        _ => return None,
    };
    // The matched bytes are ASCII: `hash_at` is a character boundary.
    let hash = &rest[hash_at..];
    (!hash.is_empty()).then_some((kind, hash))
}

/// The kinds of per-Service-port chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceChainKind {
    /// `KUBE-SVC-*`: all endpoints (cluster traffic policy).
    Cluster,
    /// `KUBE-SVL-*` (older: `KUBE-XLB-*`): local endpoints only (Local traffic policy).
    Local,
    /// `KUBE-EXT-*`: external traffic (node ports, external and load-balancer IPs).
    External,
    /// `KUBE-FW-*`: load-balancer traffic filtered by `loadBalancerSourceRanges`.
    Firewall,
}

/// Whether a chain is an endpoint chain, `KUBE-SEP-*`.
pub fn is_endpoint_chain(chain: &str) -> bool {
    chain.len() > "KUBE-SEP-".len() && chain.starts_with("KUBE-SEP-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments() {
        assert_eq!(
            service_comment("default/kubernetes:https cluster IP"),
            Some(("default/kubernetes:https", CommentRole::ClusterIp))
        );
        assert_eq!(
            service_comment("kube-system/kube-dns:dns has no endpoints"),
            Some(("kube-system/kube-dns:dns", CommentRole::NoEndpoints))
        );
        assert_eq!(
            service_comment("default/web:http -> 10.244.1.5:8080"),
            Some(("default/web:http", CommentRole::Endpoint))
        );
        assert_eq!(
            service_comment("masquerade traffic for default/web:http external destinations"),
            Some(("default/web:http", CommentRole::External))
        );
        assert_eq!(
            service_comment("default/web:http traffic not accepted by KUBE-FW-ABCDEFGHIJKLMNOP"),
            Some(("default/web:http", CommentRole::NotAccepted))
        );
        assert_eq!(
            service_comment("default/web"),
            Some(("default/web", CommentRole::Plain))
        );
        assert_eq!(service_comment("kubernetes service portals"), None);
        assert_eq!(service_comment("flanneld masq"), None);
        assert_eq!(service_comment("cali:abcd"), None);
        assert_eq!(service_comment("a/b/c"), None);
    }

    /// The first version of [`service_comment`] (each phrase tried as a suffix, then a split),
    /// kept as the oracle of the one-pass version.
    fn service_comment_by_suffix(comment: &str) -> Option<(&str, CommentRole)> {
        const SUFFIXES: &[(&str, CommentRole)] = &[
            (" cluster IP", CommentRole::ClusterIp),
            (" external IP", CommentRole::ExternalIp),
            (" loadbalancer IP", CommentRole::LoadBalancerIp),
            (" has no endpoints", CommentRole::NoEndpoints),
            (" has no local endpoints", CommentRole::NoLocalEndpoints),
        ];
        const EXTERNAL: &[&str] = &[
            "masquerade traffic for ",
            "pod traffic for ",
            "route LOCAL traffic for ",
            "masquerade LOCAL traffic for ",
        ];
        let (name, role) = if let Some((name, role)) = SUFFIXES
            .iter()
            .find_map(|&(s, role)| comment.strip_suffix(s).map(|n| (n, role)))
        {
            (name, role)
        } else if let Some(name) = EXTERNAL.iter().find_map(|p| {
            comment
                .strip_prefix(p)?
                .strip_suffix(" external destinations")
        }) {
            (name, CommentRole::External)
        } else if let Some((name, _)) = comment.split_once(" traffic not accepted by ") {
            (name, CommentRole::NotAccepted)
        } else if let Some((name, _)) = comment.split_once(" -> ") {
            (name, CommentRole::Endpoint)
        } else {
            (comment, CommentRole::Plain)
        };
        is_service_port_name_by_split(name).then_some((name, role))
    }

    fn is_service_port_name_by_split(text: &str) -> bool {
        let Some((namespace, rest)) = text.split_once('/') else {
            return false;
        };
        let name = rest.split_once(':').map_or(rest, |(n, _)| n);
        !namespace.is_empty()
            && !name.is_empty()
            && !rest.contains('/')
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'/' | b':' | b'_'))
    }

    #[test]
    fn one_pass_reading_agrees_with_the_suffix_reading() {
        let names = [
            "default/web:http",
            "ns/svc",
            "a/b:c:d",
            "/x",
            "x/",
            "a/b/c",
            "a b/c",
            "a:b/c",
            "x",
            "",
            "ns/:p",
            "a/b:",
        ];
        let shapes = [
            "{}",
            "{} cluster IP",
            "{} external IP",
            "{} loadbalancer IP",
            "{} has no endpoints",
            "{} has no local endpoints",
            "{} -> 10.244.1.5:8080",
            "{} traffic not accepted by KUBE-FW-X",
            "masquerade traffic for {} external destinations",
            "pod traffic for {} external destinations",
            "route LOCAL traffic for {} external destinations",
            "masquerade LOCAL traffic for {} external destinations",
            "{} -> x cluster IP",
            "{} cluster IP -> x",
            "{} foo",
            "{}  cluster IP",
            "{} -> y traffic not accepted by X",
            "{} traffic not accepted by X -> y",
            "x {} cluster IP",
            "{} external destinations",
            "{}cluster IP",
            " {}",
        ];
        for name in names {
            for shape in shapes {
                let comment = shape.replace("{}", name);
                assert_eq!(
                    service_comment(&comment),
                    service_comment_by_suffix(&comment),
                    "{comment:?}"
                );
            }
        }
    }

    /// The table of name bytes reads every character as the split reading does, in each part
    /// of a name.
    #[test]
    fn name_bytes_read_as_the_split_reading() {
        let odd = ["é", "ß", "\u{7f}", "\u{0}", "€"];
        let characters = (0u8..128)
            .map(|b| char::from(b).to_string())
            .chain(odd.map(String::from));
        for c in characters {
            for name in [
                format!("{c}/b:c"),
                format!("a{c}/b:c"),
                format!("a/{c}:c"),
                format!("a/b{c}:c"),
                format!("a/b:{c}"),
                format!("a/b{c}"),
                c.to_string(),
                format!("a{c}b"),
            ] {
                assert_eq!(
                    is_service_port_name(&name),
                    is_service_port_name_by_split(&name),
                    "{name:?}"
                );
            }
        }
    }

    #[test]
    fn comment_texts() {
        let parsed = rulelint_parser::parse(
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m comment --comment \"cali:abc\" -m comment --comment \"Drop \\\"x\\\"\" -m comment --comment plain -j DROP\nCOMMIT\n",
        );
        let rule = parsed.ruleset.rule(rulelint_parser::RuleId(0));
        let all: Vec<_> = super::comments(rule).collect();
        assert_eq!(all, ["cali:abc", "Drop \"x\"", "plain"]);
        assert!(matches!(all[0], Cow::Borrowed(_)));
    }

    #[test]
    fn options_after_basic_options() {
        let parsed = rulelint_parser::parse(
            "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -m comment --comment x -m tcp -p tcp -d 10.96.0.1 --dport 443 -j ACCEPT\nCOMMIT\n",
        );
        let rule = parsed.ruleset.rule(rulelint_parser::RuleId(0));
        assert_eq!(
            super::option_anywhere(rule, &["--dport"]).map(|o| o.value),
            Some("443")
        );
    }

    /// The byte-wise reading of a service chain's name gives what trying each prefix gave.
    #[test]
    fn service_chain_equals_the_prefix_reading() {
        fn by_prefixes(chain: &str) -> Option<(ServiceChainKind, &str)> {
            const PREFIXES: &[(&str, ServiceChainKind)] = &[
                ("KUBE-SVC-", ServiceChainKind::Cluster),
                ("KUBE-SVL-", ServiceChainKind::Local),
                ("KUBE-EXT-", ServiceChainKind::External),
                ("KUBE-FW-", ServiceChainKind::Firewall),
                ("KUBE-XLB-", ServiceChainKind::Local),
            ];
            PREFIXES.iter().find_map(|&(p, kind)| {
                chain
                    .strip_prefix(p)
                    .filter(|h| !h.is_empty())
                    .map(|h| (kind, h))
            })
        }
        for prefix in [
            "",
            "K",
            "KUBE",
            "KUBE-",
            "KUBE-S",
            "KUBE-SVC",
            "KUBE-SVC-",
            "KUBE-SVL-",
            "KUBE-EXT-",
            "KUBE-FW",
            "KUBE-FW-",
            "KUBE-XLB-",
            "KUBE-SEP-",
            "KUBE-SVCX",
            "kube-svc-",
            "KUBE-FWX-",
        ] {
            for hash in ["", "A", "NPX46M4PTMTKRN6Y", "é", "-"] {
                let chain = format!("{prefix}{hash}");
                assert_eq!(service_chain(&chain), by_prefixes(&chain), "{chain:?}");
            }
        }
    }

    #[test]
    fn chains() {
        assert_eq!(
            service_chain("KUBE-SVC-NPX46M4PTMTKRN6Y"),
            Some((ServiceChainKind::Cluster, "NPX46M4PTMTKRN6Y"))
        );
        assert_eq!(
            service_chain("KUBE-FW-ABC"),
            Some((ServiceChainKind::Firewall, "ABC"))
        );
        assert_eq!(service_chain("KUBE-SERVICES"), None);
        assert_eq!(service_chain("KUBE-SVC-"), None);
        assert!(is_endpoint_chain("KUBE-SEP-54IUPJM2TTG4TKF2"));
        assert!(!is_endpoint_chain("KUBE-SEP-"));
    }
}
