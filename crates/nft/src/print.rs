//! The printer: a ruleset back to `nft list ruleset` text (tabs, one rule per line, elements on
//! one line, handles as `# handle N`). Reading the output gives a ruleset with the same
//! content ([`Ruleset::same_content`]); a headerless fragment prints as top-level blocks.

use crate::model::{
    Chain, Element, Expr, Nat, Ruleset, Set, Statement, Stmt, Table, Value, Verdict,
};
use std::fmt::Write;

/// Prints `set` as `nft list ruleset` text.
pub fn print(set: &Ruleset<'_>) -> String {
    let mut out = String::with_capacity(set.text.len() + 64);
    for table in &set.tables {
        print_table(&mut out, set, table);
    }
    out
}

/// A name as nft accepts it back: quoted when it is empty, holds a blank or punctuation the
/// tokenizer splits on, or is a word with a meaning of its own.
fn name(n: &str) -> std::borrow::Cow<'_, str> {
    let plain = !n.is_empty()
        && n.bytes().all(|b| {
            !matches!(
                b,
                b' ' | b'\t'
                    | b'\r'
                    | b'\n'
                    | b'{'
                    | b'}'
                    | b';'
                    | b','
                    | b'"'
                    | b'#'
                    | 0x0b
                    | 0x0c
            )
        })
        && crate::model::VerdictKind::from_word(n).is_none();
    if plain {
        n.into()
    } else {
        format!("\"{n}\"").into()
    }
}

fn handle(out: &mut String, h: Option<u64>) {
    if let Some(h) = h {
        let _ = write!(out, " # handle {h}");
    }
}

fn print_table(out: &mut String, set: &Ruleset<'_>, table: &Table<'_>) {
    let headerless = table.is_headerless();
    let indent = if headerless { "" } else { "\t" };
    if !headerless {
        let family = table
            .family
            .map(|f| f.as_str())
            .or(table.family_word)
            .unwrap_or("ip");
        let _ = write!(out, "table {family} {} {{", name(table.name.unwrap_or("")));
        handle(out, table.handle);
        out.push('\n');
        if let Some(c) = table.comment {
            let _ = writeln!(out, "\tcomment \"{c}\"");
        }
        if !table.flags.is_empty() {
            let _ = writeln!(out, "\tflags {}", table.flags.join(","));
        }
    }
    for obj in &table.objects {
        let _ = writeln!(out, "{indent}{}", obj.text);
    }
    let mut first = true;
    for s in &table.sets {
        if !first {
            out.push('\n');
        }
        first = false;
        print_set(out, indent, &set.sets[s.index()]);
    }
    for c in &table.chains {
        if !first {
            out.push('\n');
        }
        first = false;
        print_chain(out, indent, set, &set.chains[c.index()]);
    }
    if !headerless {
        out.push_str("}\n");
    }
}

fn print_set(out: &mut String, indent: &str, s: &Set<'_>) {
    let kw = if s.is_map { "map" } else { "set" };
    let _ = write!(out, "{indent}{kw} {} {{", name(s.name));
    handle(out, s.handle);
    out.push('\n');
    if let Some(t) = &s.key_type {
        let _ = write!(
            out,
            "{indent}\t{} {}",
            if t.typeof_ { "typeof" } else { "type" },
            t.key.join(" . ")
        );
        if let Some(d) = &t.data {
            let _ = write!(out, " : {}", d.join(" . "));
        }
        out.push('\n');
    }
    if let Some(v) = s.size {
        let _ = writeln!(out, "{indent}\tsize {v}");
    }
    if !s.flags.is_empty() {
        let _ = writeln!(out, "{indent}\tflags {}", s.flags.join(","));
    }
    if let Some(v) = s.timeout {
        let _ = writeln!(out, "{indent}\ttimeout {v}");
    }
    for p in &s.properties {
        let _ = writeln!(out, "{indent}\t{}", p.join(" "));
    }
    if let Some(c) = s.comment {
        let _ = writeln!(out, "{indent}\tcomment \"{c}\"");
    }
    if !s.elements.is_empty() {
        let _ = write!(out, "{indent}\telements = {{ ");
        elements(out, &s.elements);
        out.push_str(" }\n");
    }
    let _ = writeln!(out, "{indent}}}");
}

fn print_chain(out: &mut String, indent: &str, set: &Ruleset<'_>, c: &Chain<'_>) {
    let _ = write!(out, "{indent}chain {} {{", name(c.name));
    handle(out, c.handle);
    out.push('\n');
    if let Some(c) = c.comment {
        let _ = writeln!(out, "{indent}\tcomment \"{c}\"");
    }
    if let Some(b) = &c.base {
        // Parts a cut-off declaration lacks are left out, so the text reads back the same.
        let _ = write!(out, "{indent}\ttype");
        if !b.kind.is_empty() {
            let _ = write!(out, " {}", b.kind);
        }
        if !b.hook.is_empty() {
            let _ = write!(out, " hook {}", b.hook);
        }
        if let Some(d) = b.device {
            if d.starts_with("devices") {
                let _ = write!(out, " {d}");
            } else {
                let _ = write!(out, " device {d}");
            }
        }
        if !b.priority.text.is_empty() {
            let _ = write!(out, " priority {};", b.priority.text);
        }
        if let Some(p) = b.policy {
            let _ = write!(out, " policy {p};");
        }
        out.push('\n');
    }
    for r in set.rules_of_chain(c) {
        let _ = write!(out, "{indent}\t");
        statements(out, set.statements_of(r));
        handle(out, r.handle);
        out.push('\n');
    }
    let _ = writeln!(out, "{indent}}}");
}

impl Ruleset<'_> {
    fn rules_of_chain<'s>(
        &'s self,
        c: &'s Chain<'_>,
    ) -> impl Iterator<Item = &'s crate::Rule<'s>> + 's {
        c.rules.iter().map(|r| &self.rules[r.index()])
    }
}

fn statements(out: &mut String, stmts: &[Statement<'_>]) {
    for (i, s) in stmts.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        stmt(out, &s.kind);
    }
}

fn words(out: &mut String, w: &[&str]) {
    for (i, x) in w.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(x);
    }
}

fn verdict(out: &mut String, v: &Verdict<'_>) {
    out.push_str(v.kind.as_str());
    if let Some(t) = v.target {
        out.push(' ');
        out.push_str(&name(t));
    }
}

fn stmt(out: &mut String, s: &Stmt<'_>) {
    match s {
        Stmt::Match { left, op, right } => {
            expr(out, left);
            if let Some(op) = op {
                out.push(' ');
                out.push_str(op);
            }
            out.push(' ');
            expr(out, right);
        }
        Stmt::Vmap { key, map } => {
            expr(out, key);
            out.push_str(" vmap ");
            expr(out, map);
        }
        Stmt::Assign { left, value } => {
            expr(out, left);
            out.push_str(" set ");
            expr(out, value);
        }
        Stmt::Verdict(v) => verdict(out, v),
        Stmt::Reject { with } => {
            out.push_str("reject");
            if !with.is_empty() {
                out.push_str(" with ");
                words(out, with);
            }
        }
        Stmt::Counter { args } => {
            out.push_str("counter");
            for a in args {
                out.push(' ');
                out.push_str(a);
            }
        }
        Stmt::Comment(c) => {
            let _ = write!(out, "comment \"{c}\"");
        }
        Stmt::Nat(nat) => {
            let Nat { kind, to, .. } = nat;
            let family = nat.family();
            let (spec, flags) = (nat.spec(), nat.flags());
            out.push_str(kind);
            if let Some(f) = family {
                out.push(' ');
                out.push_str(f);
            }
            for w in spec {
                out.push(' ');
                out.push_str(w);
            }
            if let Some(to) = to {
                out.push_str(" to ");
                expr(out, to);
            }
            if !flags.is_empty() {
                out.push(' ');
                out.push_str(&flags.join(","));
            }
        }
        Stmt::SetUpdate {
            op,
            set,
            elements: e,
        } => {
            let _ = write!(out, "{op} @{set} {{ ");
            elements(out, e);
            out.push_str(" }");
        }
        Stmt::Keyword { keyword, args } => {
            out.push_str(keyword);
            for a in args {
                out.push(' ');
                out.push_str(a);
            }
        }
        Stmt::Opaque { words: w } => words(out, w),
    }
}

fn elements(out: &mut String, els: &[Element<'_>]) {
    for (i, e) in els.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        expr(out, &e.key);
        for o in &e.options {
            out.push(' ');
            out.push_str(o);
        }
        if let Some(c) = e.comment {
            let _ = write!(out, " comment \"{c}\"");
        }
        match &e.value {
            Some(Value::Verdict(v)) => {
                out.push_str(" : ");
                verdict(out, v);
            }
            Some(Value::Data(d)) => {
                out.push_str(" : ");
                expr(out, d);
            }
            None => {}
        }
    }
}

fn expr(out: &mut String, e: &Expr<'_>) {
    match e {
        Expr::Literal(w) => out.push_str(w),
        Expr::List(w) => out.push_str(&w.join(",")),
        Expr::SetRef(n) => {
            out.push('@');
            out.push_str(n);
        }
        Expr::Set(els) => {
            out.push_str("{ ");
            elements(out, els);
            out.push_str(" }");
        }
        Expr::Payload { proto, field } => {
            let _ = write!(out, "{proto} {field}");
        }
        Expr::Meta { key, bare } => {
            if !bare {
                out.push_str("meta ");
            }
            out.push_str(key);
        }
        Expr::Ct { dir, key } => {
            out.push_str("ct ");
            if let Some(d) = dir {
                out.push_str(d.as_str());
                out.push(' ');
            }
            out.push_str(key);
        }
        Expr::Fib(fib) => {
            let _ = write!(out, "fib {} {}", fib.flags.join(" . "), fib.result);
        }
        Expr::Numgen(numgen) => {
            let _ = write!(out, "numgen {} mod {}", numgen.mode, numgen.modulus);
            if let Some(o) = numgen.offset {
                let _ = write!(out, " offset {o}");
            }
        }
        Expr::Binop(b) => {
            expr(out, &b.left);
            let _ = write!(out, " {} ", b.op);
            expr(out, &b.right);
        }
        Expr::Concat(items) => {
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(" . ");
                }
                expr(out, x);
            }
        }
        Expr::Map { key, map } => {
            expr(out, key);
            out.push_str(" map ");
            expr(out, map);
        }
    }
}
