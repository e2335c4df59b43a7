//! The content of a ruleset as `nft list ruleset` would list it, whatever form it was read from
//! (listing, `nft -j` JSON, `add ...` transaction), for comparing forms and nodes.
//!
//! [`Ruleset::content`] is exact: a round trip through the printer keeps it. The forms differ in
//! ways `nft` itself erases when it loads and lists a ruleset; [`content`] erases them too, and
//! only them (the normalisation is in the comparison, the model keeps what was written):
//!
//! - order: tables, chains, sets and maps by name, set elements sorted (the kernel lists
//!   elements in its own order, not the order they were added); rules keep their order;
//! - handles and spans; counter values; element `expires` (it counts down);
//! - a base chain's priority by value (`-100` on prerouting is listed `dstnat`); a missing
//!   policy is `accept`;
//! - table and chain comments (`nft` 1.0.6 leaves them out of `-j` output);
//! - set flag `dynamic` (1.0.6 `-j` leaves it out) and `size 65535` (added to dynamic sets);
//! - durations in seconds (`timeout 10800s`, `3h`, JSON `10800`);
//! - literals without quotes, numbers in decimal (`0x00004000`, `0x4000`, `16384`);
//! - `meta mark` / bare `mark`; `and`/`or`/`xor` as `&`/`|`/`^`; `==`, `eq`, `in` and no
//!   operator are one; a one-element anonymous set on a match's right side is its element
//!   (`ip daddr { 172.30.0.0/16 }`); `numgen ... offset 0` is no offset;
//! - `reject` with its family's default spelled out (`with icmp port-unreachable`, `icmpx`,
//!   `icmpv6`) is plain `reject`.

use crate::model::{Element, Expr, Nat, Ruleset, Stmt, Value};
use serde_json::{Map, Value as Json, json};

/// The listed content of `set`: equal for two rulesets `nft` would list the same.
///
/// ```
/// use rulelint_nft::{canon, parse, parse_transaction};
/// let tx = "add table ip t\nadd chain ip t c { type nat hook prerouting priority -100 ; }\n\
///           add rule ip t c mark and 0x4000 == 0 return\n";
/// let listed = "table ip t {\n\tchain c {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\
///               \t\tmeta mark & 0x00004000 == 0x00000000 return\n\t}\n}\n";
/// let (a, b) = (parse_transaction(tx), parse(listed));
/// assert!(!a.ruleset.same_content(&b.ruleset));
/// assert_eq!(canon::content(&a.ruleset), canon::content(&b.ruleset));
/// ```
pub fn content(set: &Ruleset<'_>) -> Json {
    let mut tables = Map::new();
    for t in &set.tables {
        let key = format!(
            "{} {}",
            t.family.map_or("?", |f| f.as_str()),
            t.name.unwrap_or("")
        );
        let mut chains = Map::new();
        for &cid in &t.chains {
            let c = &set.chains[cid.index()];
            let rules: Vec<Json> = set
                .rules_of(cid)
                .map(|r| set.statements_of(r).iter().map(|s| stmt(&s.kind)).collect())
                .collect();
            let base = c.base.as_ref().map(|b| {
                json!({
                    "type": b.kind,
                    "hook": b.hook,
                    "device": b.device.map(unquote),
                    "priority": b.priority.value,
                    "policy": b.policy.unwrap_or("accept"),
                })
            });
            chains.insert(c.name.to_string(), json!({"base": base, "rules": rules}));
        }
        let mut sets = Map::new();
        for s in &t.sets {
            let s = &set.sets[s.index()];
            let mut flags: Vec<&str> = s
                .flags
                .iter()
                .copied()
                .filter(|f| *f != "dynamic")
                .collect();
            flags.sort_unstable();
            let mut elements: Vec<String> = s.elements.iter().map(element).collect();
            elements.sort_unstable();
            sets.insert(
                s.name.to_string(),
                json!({
                    "map": s.is_map,
                    "type": s.key_type,
                    "flags": flags,
                    "timeout": s.timeout.map(duration),
                    "size": s.size.filter(|n| *n != "65535"),
                    "comment": s.comment,
                    "elements": elements,
                }),
            );
        }
        let mut objects: Vec<String> = t
            .objects
            .iter()
            .map(|o| format!("{} {}", o.kind, o.name))
            .collect();
        objects.sort_unstable();
        tables.insert(
            key,
            json!({"flags": t.flags, "chains": chains, "sets": sets, "objects": objects}),
        );
    }
    Json::Object(tables)
}

/// The first place where two contents differ, as a path and both values (`None`: equal).
pub fn first_difference(a: &Json, b: &Json) -> Option<String> {
    fn walk(a: &Json, b: &Json, path: &mut String) -> Option<String> {
        match (a, b) {
            (Json::Object(x), Json::Object(y)) => {
                for (k, v) in x {
                    let len = path.len();
                    path.push('/');
                    path.push_str(k);
                    let d = match y.get(k) {
                        Some(w) => walk(v, w, path),
                        None => Some(format!("{path}: only in the first")),
                    };
                    if d.is_some() {
                        return d;
                    }
                    path.truncate(len);
                }
                y.keys()
                    .find(|k| !x.contains_key(*k))
                    .map(|k| format!("{path}/{k}: only in the second"))
            }
            (Json::Array(x), Json::Array(y)) => {
                for (i, (v, w)) in x.iter().zip(y).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    if let Some(d) = walk(v, w, path) {
                        return Some(d);
                    }
                    path.truncate(len);
                }
                (x.len() != y.len()).then(|| format!("{path}: {} vs {} items", x.len(), y.len()))
            }
            _ => (a != b).then(|| format!("{path}: {a} vs {b}")),
        }
    }
    walk(a, b, &mut String::new())
}

fn unquote(s: &str) -> &str {
    let s = s.strip_prefix('"').unwrap_or(s);
    s.strip_suffix('"').unwrap_or(s)
}

/// A number in decimal (`0x00004000` and `16384` alike); other literals unquoted.
fn literal(s: &str) -> String {
    let s = unquote(s);
    let number = match s.strip_prefix("0x") {
        Some(hex) if !hex.is_empty() => u128::from_str_radix(hex, 16).ok(),
        _ if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s.parse::<u128>().ok(),
        _ => None,
    };
    number.map_or_else(|| s.to_string(), |n| n.to_string())
}

/// `3h`, `1d2h`, `10800s`, `10800`, `500ms` in milliseconds (the text when it is no duration).
fn duration(s: &str) -> String {
    let mut total: u128 = 0;
    let mut num: Option<u128> = None;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            num = Some(
                num.unwrap_or(0)
                    .saturating_mul(10)
                    .saturating_add(u128::from(c - b'0')),
            );
            i += 1;
            continue;
        }
        let (unit, len) = match (c, b.get(i + 1)) {
            (b'm', Some(b's')) => (1, 2),
            (b'd', _) => (86_400_000, 1),
            (b'h', _) => (3_600_000, 1),
            (b'm', _) => (60_000, 1),
            (b's', _) => (1000, 1),
            _ => return s.to_string(),
        };
        let Some(n) = num.take() else {
            return s.to_string();
        };
        total = total.saturating_add(n.saturating_mul(unit));
        i += len;
    }
    if let Some(n) = num {
        total = total.saturating_add(n.saturating_mul(1000));
    }
    format!("{total}ms")
}

fn binop(op: &str) -> &str {
    match op {
        "and" => "&",
        "or" => "|",
        "xor" => "^",
        "lshift" => "<<",
        "rshift" => ">>",
        other => other,
    }
}

fn expr(e: &Expr<'_>) -> String {
    match e {
        Expr::Literal(s) => literal(s),
        Expr::List(words) => {
            let mut w: Vec<String> = words.iter().map(|w| literal(w)).collect();
            w.sort_unstable();
            w.join(",")
        }
        Expr::SetRef(name) => format!("@{}", unquote(name)),
        Expr::Set(elements) => {
            let mut items: Vec<String> = elements.iter().map(element).collect();
            items.sort_unstable();
            format!("{{ {} }}", items.join(", "))
        }
        Expr::Payload { proto, field } => format!("{proto} {field}"),
        Expr::Meta { key, .. } => format!("meta {key}"),
        Expr::Ct { dir, key } => match dir {
            Some(d) => format!("ct {d} {key}"),
            None => format!("ct {key}"),
        },
        Expr::Fib(fib) => format!("fib {} {}", fib.flags.join(" . "), fib.result),
        Expr::Numgen(numgen) => format!(
            "numgen {} mod {} offset {}",
            numgen.mode,
            literal(numgen.modulus),
            literal(numgen.offset.unwrap_or("0"))
        ),
        Expr::Binop(b) => {
            format!("({} {} {})", expr(&b.left), binop(b.op), expr(&b.right))
        }
        Expr::Concat(items) => items.iter().map(expr).collect::<Vec<_>>().join(" . "),
        Expr::Map { key, map } => format!("{} map {}", expr(key), expr(map)),
    }
}

fn element(e: &Element<'_>) -> String {
    let mut out = expr(&e.key);
    let mut words = e.options.iter();
    while let Some(w) = words.next() {
        match *w {
            "timeout" => {
                if let Some(v) = words.next() {
                    out.push_str(&format!(" timeout {}", duration(v)));
                }
            }
            "expires" => {
                words.next();
            }
            "packets" | "bytes" => {
                words.next();
            }
            other => {
                out.push(' ');
                out.push_str(other);
            }
        }
    }
    if let Some(c) = e.comment {
        out.push_str(&format!(" comment {c:?}"));
    }
    match &e.value {
        Some(Value::Verdict(v)) => {
            out.push_str(" : ");
            out.push_str(v.kind.as_str());
            if let Some(t) = v.target {
                out.push(' ');
                out.push_str(unquote(t));
            }
        }
        Some(Value::Data(d)) => {
            out.push_str(" : ");
            out.push_str(&expr(d));
        }
        None => {}
    }
    out
}

fn rel_op(op: Option<&str>) -> &str {
    match op {
        None | Some("==" | "eq" | "in") => "==",
        Some("ne") => "!=",
        Some("lt") => "<",
        Some("gt") => ">",
        Some("le") => "<=",
        Some("ge") => ">=",
        Some(other) => other,
    }
}

fn stmt(s: &Stmt<'_>) -> String {
    match s {
        Stmt::Match { left, op, right } => {
            let right = match right {
                Expr::Set(items)
                    if items.len() == 1
                        && items[0].value.is_none()
                        && items[0].options.is_empty()
                        && items[0].comment.is_none() =>
                {
                    expr(&items[0].key)
                }
                other => expr(other),
            };
            format!("{} {} {right}", expr(left), rel_op(*op))
        }
        Stmt::Vmap { key, map } => format!("{} vmap {}", expr(key), expr(map)),
        Stmt::Assign { left, value } => format!("{} set {}", expr(left), expr(value)),
        Stmt::Verdict(v) => match v.target {
            Some(t) => format!("{} {}", v.kind.as_str(), unquote(t)),
            None => v.kind.as_str().to_string(),
        },
        Stmt::Reject { with } => {
            let with: Vec<&str> = with.iter().copied().filter(|w| *w != "type").collect();
            match with.as_slice() {
                [] | ["icmp" | "icmpx" | "icmpv6", "port-unreachable"] => "reject".to_string(),
                other => format!("reject with {}", other.join(" ")),
            }
        }
        Stmt::Counter { args } => match args.first() {
            Some(&"name") => format!("counter name {}", args.get(1).map_or("", |n| unquote(n))),
            _ => "counter".to_string(),
        },
        Stmt::Comment(c) => format!("comment {c:?}"),
        Stmt::Nat(nat) => {
            let Nat { kind, to, .. } = nat;
            let family = nat.family();
            let spec = nat.spec();
            let mut flags: Vec<&str> = nat.flags().to_vec();
            flags.sort_unstable();
            format!(
                "{kind} {} {} to {} {}",
                family.unwrap_or(""),
                spec.join(" "),
                to.as_ref().map(expr).unwrap_or_default(),
                flags.join(",")
            )
        }
        Stmt::SetUpdate { op, set, elements } => {
            let mut items: Vec<String> = elements.iter().map(element).collect();
            items.sort_unstable();
            format!("{op} @{} {{ {} }}", unquote(set), items.join(", "))
        }
        Stmt::Keyword { keyword, args } => {
            let args: Vec<&str> = args.iter().map(|a| unquote(a)).collect();
            format!("{keyword} {}", args.join(" "))
        }
        Stmt::Opaque { words } => format!("opaque {}", words.join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_numbers_normalise() {
        assert_eq!(duration("3h"), duration("10800s"));
        assert_eq!(duration("10800"), duration("3h"));
        assert_eq!(duration("1d2h3m4s500ms"), "93784500ms");
        assert_eq!(duration("soon"), "soon");
        assert_eq!(literal("0x00004000"), "16384");
        assert_eq!(literal("\"eth0\""), "eth0");
        assert_eq!(literal("10.0.0.0/8"), "10.0.0.0/8");
        assert_eq!(literal("0xzz"), "0xzz");
    }
}
