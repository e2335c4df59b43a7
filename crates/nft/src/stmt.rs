//! Rules, anonymous sets and element lists: a recursive-descent reader over a slice of tokens.
//!
//! It never fails: a statement it cannot read becomes [`Stmt::Opaque`] (its tokens up to the
//! next word that starts a statement), an element it cannot read is reported (`RL160`) and
//! skipped. Every loop consumes at least one token, and nesting is bounded, so the time is
//! linear in the tokens and the stack is bounded whatever the input.

use crate::codes;
use crate::lexer::{Kind, Token};
use crate::model::{
    Binop, CtDir, Element, Expr, Fib, Nat, Numgen, Proto, Statement, Stmt, Value, Verdict,
    VerdictKind,
};
use rulelint_parser::{Diagnostic, Span};

/// How deep anonymous sets and lookups may nest before the rest is kept opaque.
const MAX_DEPTH: u32 = 16;

// The word classes are `matches!` rather than slices searched with `contains`: a match
// dispatches on length and bytes, where `contains` called memcmp per entry for every word.

/// Protocols whose fields are payload selectors (`ip daddr`, `th dport`).
fn is_payload(w: &str) -> bool {
    Proto::from_word(w).is_some()
}

/// Meta keys nft also prints without `meta`.
fn is_bare_meta(w: &str) -> bool {
    matches!(
        w,
        "mark"
            | "iif"
            | "oif"
            | "iifname"
            | "oifname"
            | "iiftype"
            | "oiftype"
            | "skuid"
            | "skgid"
            | "rtclassid"
            | "pkttype"
            | "cpu"
            | "cgroup"
            | "ibrname"
            | "obrname"
            | "ibriport"
            | "obriport"
            | "nfproto"
            | "l4proto"
    )
}

/// Words that start a statement other than a match.
fn is_stmt_keyword(w: &str) -> bool {
    matches!(
        w,
        "accept"
            | "drop"
            | "continue"
            | "return"
            | "jump"
            | "goto"
            | "reject"
            | "counter"
            | "comment"
            | "dnat"
            | "snat"
            | "masquerade"
            | "redirect"
            | "update"
            | "add"
            | "delete"
    ) || is_arg_statement(w)
}

/// Statements whose arguments are kept as words.
fn is_arg_statement(w: &str) -> bool {
    matches!(
        w,
        "log"
            | "limit"
            | "queue"
            | "notrack"
            | "quota"
            | "xt"
            | "tproxy"
            | "dup"
            | "fwd"
            | "synproxy"
            | "flow"
            | "meter"
    )
}

fn is_rel_op(w: &str) -> bool {
    matches!(
        w,
        "==" | "!=" | "<" | ">" | "<=" | ">=" | "eq" | "ne" | "lt" | "gt" | "le" | "ge"
    )
}

fn is_bin_op(w: &str) -> bool {
    matches!(
        w,
        "&" | "|" | "^" | "<<" | ">>" | "and" | "or" | "xor" | "lshift" | "rshift"
    )
}

fn is_nat_flag(w: &str) -> bool {
    matches!(w, "random" | "fully-random" | "persistent" | "netmap")
}

/// The symbol of an operator nft also accepts as a word (`and`, `eq`): the model holds one
/// spelling, the one `nft list` prints, so the transaction form kube-proxy writes
/// (`mark and 0x4000 == 0`) reads like the listing (`meta mark & 0x00004000 == 0x00000000`).
pub(crate) fn operator_symbol(op: &str) -> &str {
    match op {
        "and" => "&",
        "or" => "|",
        "xor" => "^",
        "lshift" => "<<",
        "rshift" => ">>",
        "eq" => "==",
        "ne" => "!=",
        "lt" => "<",
        "gt" => ">",
        "le" => "<=",
        "ge" => ">=",
        other => other,
    }
}

/// Whether a word starts with an ASCII digit (lexed as a word: `KIND_OF_FIRST_BYTE`).
#[inline(always)]
fn starts_with_digit(w: &str) -> bool {
    w.as_bytes().first().is_some_and(u8::is_ascii_digit)
}

/// A word where an opaque run stops: the start of a statement nft prints.
fn is_boundary(w: &str) -> bool {
    is_stmt_keyword(w) || matches!(w, "meta" | "ct" | "fib" | "numgen") || is_payload(w)
}

/// The text of a `"..."` string without its quotes (an unterminated one: without the opening).
pub(crate) fn unquote(s: &str) -> &str {
    let s = s.strip_prefix('"').unwrap_or(s);
    s.strip_suffix('"').unwrap_or(s)
}

pub(crate) struct Cur<'t, 'a> {
    text: &'a str,
    toks: &'t [Token],
    pos: usize,
    /// The furthest token a failed attempt reached: an opaque run covers at least that far,
    /// so a long statement that fails late is not re-read from each of its words.
    far: usize,
    depth: u32,
    /// No newline among the tokens (a rule's line): the `n`th token from `pos` is at `pos + n`.
    flat: bool,
    diags: &'t mut Vec<Diagnostic>,
}

impl<'t, 'a> Cur<'t, 'a> {
    pub fn new(text: &'a str, toks: &'t [Token], diags: &'t mut Vec<Diagnostic>) -> Self {
        let wrapped = toks.iter().any(|t| t.kind(text) == Kind::Newline);
        Self::on_lines(text, toks, diags, wrapped)
    }

    /// [`Cur::new`] when the caller knows whether a newline may be among the tokens
    /// (`wrapped`; false only when none is): the rule reader saw each of them already, and
    /// this saves a pass per rule. A `wrapped` cursor without a newline reads the same, slower.
    pub fn on_lines(
        text: &'a str,
        toks: &'t [Token],
        diags: &'t mut Vec<Diagnostic>,
        wrapped: bool,
    ) -> Self {
        debug_assert!(wrapped || !toks.iter().any(|t| t.kind(text) == Kind::Newline));
        Cur {
            text,
            toks,
            pos: 0,
            far: 0,
            depth: 0,
            flat: !wrapped,
            diags,
        }
    }

    // ---- cursor ----

    /// Index of the `n`th token from `pos` that is not a newline. Inlined into every look at
    /// the tokens (there are six per statement): the flat case is an addition and a compare.
    #[inline(always)]
    fn index(&self, n: usize) -> Option<usize> {
        if self.flat {
            // Most cursors read one rule's line: no newline to skip.
            let i = self.pos.saturating_add(n);
            return (i < self.toks.len()).then_some(i);
        }
        self.index_past_newlines(n)
    }

    /// [`Cur::index`] of a cursor whose tokens may hold newlines.
    fn index_past_newlines(&self, n: usize) -> Option<usize> {
        let mut seen = 0;
        let mut i = self.pos;
        while i < self.toks.len() {
            if self.toks[i].kind(self.text) != Kind::Newline {
                if seen == n {
                    return Some(i);
                }
                seen += 1;
            }
            i += 1;
        }
        None
    }

    #[inline(always)]
    fn nth(&self, n: usize) -> Option<Token> {
        self.index(n).map(|i| self.toks[i])
    }

    #[inline(always)]
    fn peek(&self) -> Option<Token> {
        self.nth(0)
    }

    fn bump(&mut self) {
        if let Some(i) = self.index(0) {
            self.pos = i + 1;
        } else {
            self.pos = self.toks.len();
        }
        self.far = self.far.max(self.pos);
    }

    fn s(&self, t: Token) -> &'a str {
        &self.text[t.start as usize..t.end as usize]
    }

    #[inline(always)]
    fn nth_word(&self, n: usize) -> Option<&'a str> {
        let t = self.nth(n)?;
        if t.kind(self.text) != Kind::Word {
            return None;
        }
        Some(self.s(t))
    }

    #[inline(always)]
    fn word(&self) -> Option<&'a str> {
        self.nth_word(0)
    }

    fn last_end(&self) -> u32 {
        self.toks[..self.pos]
            .iter()
            .rev()
            .find(|t| t.kind(self.text) != Kind::Newline)
            .map_or(0, |t| t.end)
    }

    /// Token `t` when it is a word that starts with a digit (an address, port, number or
    /// element key): such a word is always a literal, never a keyword, operator, selector,
    /// set reference or string, so the checks of [`Cur::literal`] are skipped (they were a
    /// tenth of a kube-proxy listing's parse).
    #[inline(always)]
    fn number_word(&self, t: Token) -> Option<&'a str> {
        let w = self.s(t);
        starts_with_digit(w).then_some(w)
    }

    /// A word that names something: starts with a letter, not a statement keyword.
    fn plain_word(&mut self) -> Option<&'a str> {
        let w = self.word()?;
        if w.as_bytes()[0].is_ascii_alphabetic() && !is_stmt_keyword(w) {
            self.bump();
            Some(w)
        } else {
            None
        }
    }

    // ---- statements ----

    /// Reads every statement of the slice onto the end of `out`.
    pub fn statements_into(&mut self, out: &mut Vec<Statement<'a>>) {
        while let Some(t) = self.peek() {
            if t.kind(self.text) == Kind::Semi {
                self.bump();
                continue;
            }
            let start = self.pos;
            self.far = start;
            let kind = match self.statement() {
                Some(k) if self.pos > start => k,
                _ => {
                    self.pos = start;
                    self.depth = 0;
                    self.opaque()
                }
            };
            out.push(Statement {
                span: Span {
                    start: t.start,
                    end: self.last_end(),
                },
                kind,
            });
        }
    }

    fn opaque(&mut self) -> Stmt<'a> {
        let mut words = Vec::new();
        let mut depth = 0u32;
        let far = self.far;
        while let Some(t) = self.peek() {
            if !words.is_empty()
                && self.pos >= far
                && depth == 0
                && t.kind(self.text) == Kind::Word
                && is_boundary(self.s(t))
            {
                break;
            }
            match t.kind(self.text) {
                Kind::LBrace => depth += 1,
                Kind::RBrace => depth = depth.saturating_sub(1),
                _ => {}
            }
            words.push(self.s(t));
            self.bump();
        }
        Stmt::Opaque { words }
    }

    fn statement(&mut self) -> Option<Stmt<'a>> {
        let t = self.peek()?;
        if t.kind(self.text) != Kind::Word {
            return None;
        }
        let w = self.s(t);
        if let Some(kind) = VerdictKind::from_word(w) {
            self.bump();
            return Some(Stmt::Verdict(self.verdict_target(kind, t)));
        }
        match w {
            "reject" => {
                self.bump();
                let mut with = Vec::new();
                if self.word() == Some("with") {
                    self.bump();
                    while let Some(a) = self.word() {
                        // `with tcp reset`, `with icmp type port-unreachable`: the first word
                        // names the protocol, later ones stop at the next statement.
                        let stop = if with.is_empty() {
                            is_stmt_keyword(a)
                        } else {
                            is_boundary(a)
                        };
                        if stop || with.len() == 3 {
                            break;
                        }
                        with.push(a);
                        self.bump();
                    }
                }
                Some(Stmt::Reject { with })
            }
            "counter" => {
                self.bump();
                let mut args = Vec::new();
                match self.word() {
                    Some("packets") => {
                        for _ in 0..4 {
                            if let Some(a) = self.word().filter(|a| !is_boundary(a)) {
                                args.push(a);
                                self.bump();
                            }
                        }
                    }
                    Some("name") => {
                        for _ in 0..2 {
                            if let Some(t) =
                                self.peek().filter(|t| t.kind(self.text) != Kind::LBrace)
                            {
                                args.push(self.s(t));
                                self.bump();
                            }
                        }
                    }
                    _ => {}
                }
                Some(Stmt::Counter { args })
            }
            "comment" => {
                self.bump();
                let s = self.peek().filter(|t| t.kind(self.text) == Kind::Str)?;
                self.bump();
                Some(Stmt::Comment(unquote(self.s(s))))
            }
            "dnat" | "snat" | "masquerade" | "redirect" => self.nat(w),
            "update" | "add" | "delete" => {
                self.bump();
                let set = self.word()?.strip_prefix('@')?;
                self.bump();
                if self.peek()?.kind(self.text) != Kind::LBrace {
                    return None;
                }
                let Expr::Set(elements) = self.anon_set(true)? else {
                    return None;
                };
                Some(Stmt::SetUpdate {
                    op: w,
                    set,
                    elements: elements.into_vec(),
                })
            }
            _ if is_arg_statement(w) => {
                self.bump();
                let mut args = Vec::new();
                if w == "xt" {
                    for _ in 0..2 {
                        if let Some(a) = self.word() {
                            args.push(a);
                            self.bump();
                        }
                    }
                } else {
                    while let Some(t) = self.peek() {
                        if matches!(t.kind(self.text), Kind::LBrace | Kind::RBrace | Kind::Semi)
                            || (t.kind(self.text) == Kind::Word && is_boundary(self.s(t)))
                        {
                            break;
                        }
                        args.push(self.s(t));
                        self.bump();
                    }
                }
                Some(Stmt::Keyword { keyword: w, args })
            }
            _ => {
                let left = self.lhs()?;
                match self.word() {
                    Some("vmap") => {
                        self.bump();
                        let map = self.map_ref()?;
                        Some(Stmt::Vmap { key: left, map })
                    }
                    Some("set") => {
                        self.bump();
                        let value = self.value_expr()?;
                        Some(Stmt::Assign { left, value })
                    }
                    op => {
                        let op = op.filter(|o| is_rel_op(o));
                        if op.is_some() {
                            self.bump();
                        }
                        let op = op.map(operator_symbol);
                        // `ct status dnat`: after `ct`, statement words are values.
                        let right = match (&left, self.word()) {
                            (Expr::Ct { .. }, Some(w @ ("dnat" | "snat"))) => {
                                self.bump();
                                Expr::Literal(w)
                            }
                            _ => self.rhs(true)?,
                        };
                        Some(Stmt::Match { left, op, right })
                    }
                }
            }
        }
    }

    fn verdict_target(&mut self, kind: VerdictKind, at: Token) -> Verdict<'a> {
        let target = if kind.takes_chain() {
            match self.peek() {
                Some(t) if t.kind(self.text) == Kind::Str => {
                    self.bump();
                    Some(unquote(self.s(t)))
                }
                Some(t)
                    if t.kind(self.text) == Kind::Word
                        && !is_stmt_keyword(self.s(t))
                        && self.s(t) != ":" =>
                {
                    self.bump();
                    Some(self.s(t))
                }
                _ => {
                    self.diags.push(
                        Diagnostic::new(
                            &codes::MISSING_JUMP_TARGET,
                            at.span(),
                            format!("`{}` names no chain", kind.as_str()),
                        )
                        .with_label("the chain name should follow this word")
                        .with_help(
                            "paste the whole rule; a jump or goto needs the chain it goes to",
                        ),
                    );
                    None
                }
            }
        } else {
            None
        };
        Verdict { kind, target }
    }

    fn nat(&mut self, kind: &'a str) -> Option<Stmt<'a>> {
        self.bump();
        let mut family = None;
        if let Some(f @ ("ip" | "ip6")) = self.word()
            && matches!(self.nth_word(1), Some("to" | "addr" | "prefix"))
        {
            family = Some(f);
            self.bump();
        }
        let mut spec = Vec::new();
        while let Some(w @ ("addr" | "port" | "." | "prefix" | "interval")) = self.word() {
            spec.push(w);
            self.bump();
        }
        let to = if self.word() == Some("to") {
            self.bump();
            Some(self.value_expr()?)
        } else {
            None
        };
        let mut flags = Vec::new();
        while let Some(f) = self.word().filter(|f| is_nat_flag(f)) {
            flags.push(f);
            self.bump();
            match self.peek() {
                Some(t) if t.kind(self.text) == Kind::Comma => self.bump(),
                _ => {}
            }
        }
        Some(Stmt::Nat(Nat::new(kind, family, spec, to, flags)))
    }

    // ---- expressions ----

    /// A selector: `ip daddr`, `meta l4proto`, `ct state`, `fib daddr type`, `numgen ...`.
    fn selector(&mut self) -> Option<Expr<'a>> {
        let save = self.pos;
        let r = self.selector_inner();
        if r.is_none() {
            self.pos = save;
        }
        r
    }

    fn selector_inner(&mut self) -> Option<Expr<'a>> {
        let w = self.word()?;
        if starts_with_digit(w) {
            // `dnat to 10.0.0.1:80`, `mark set 0x4000`: every selector starts with a letter.
            return None;
        }
        match w {
            "meta" => {
                self.bump();
                let key = self.plain_word()?;
                Some(Expr::Meta { key, bare: false })
            }
            _ if is_bare_meta(w) => {
                self.bump();
                Some(Expr::Meta { key: w, bare: true })
            }
            "ct" => {
                self.bump();
                let mut key = self.plain_word()?;
                let dir = CtDir::from_word(key);
                if dir.is_some() {
                    key = self.plain_word()?;
                }
                // `ct original ip saddr`: the key is two words, as `nft -j` names it.
                if matches!(key, "ip" | "ip6")
                    && let Some(t) = self.peek()
                    && matches!(self.s(t), "saddr" | "daddr")
                {
                    let start = key.as_ptr() as usize - self.text.as_ptr() as usize;
                    self.bump();
                    key = &self.text[start..t.end as usize];
                }
                Some(Expr::Ct { dir, key })
            }
            "fib" => {
                self.bump();
                let mut flags = vec![self.plain_word()?];
                while self.word() == Some(".") {
                    self.bump();
                    flags.push(self.plain_word()?);
                }
                let result = self.plain_word()?;
                Some(Expr::Fib(Box::new(Fib { flags, result })))
            }
            "numgen" => {
                self.bump();
                let mode = self.plain_word()?;
                if self.word() != Some("mod") {
                    return None;
                }
                self.bump();
                let modulus = self.word()?;
                self.bump();
                let offset = if self.word() == Some("offset") {
                    self.bump();
                    let o = self.word()?;
                    self.bump();
                    Some(o)
                } else {
                    None
                };
                Some(Expr::Numgen(Box::new(Numgen {
                    mode,
                    modulus,
                    offset,
                })))
            }
            _ if is_payload(w) => {
                let proto = Proto::from_word(w)?;
                self.bump();
                let field = self.plain_word()?;
                if matches!(field, "vmap" | "map" | "set") {
                    return None;
                }
                Some(Expr::Payload { proto, field })
            }
            _ => None,
        }
    }

    /// A selector followed by `& x`, `| x`, ...
    fn selector_binop(&mut self) -> Option<Expr<'a>> {
        let mut e = self.selector()?;
        self.binops(&mut e)?;
        Some(e)
    }

    fn binops(&mut self, e: &mut Expr<'a>) -> Option<()> {
        while let Some(op) = self.word().filter(|o| is_bin_op(o)) {
            self.bump();
            let right = match self.selector() {
                Some(s) => s,
                None => self.literal()?,
            };
            let left = std::mem::replace(e, Expr::Literal(""));
            *e = Expr::Binop(Box::new(Binop {
                op: operator_symbol(op),
                left,
                right,
            }));
        }
        Some(())
    }

    /// The left side of a match: selectors joined by `.`.
    fn lhs(&mut self) -> Option<Expr<'a>> {
        let first = self.selector_binop()?;
        if self.word() != Some(".") {
            return Some(first);
        }
        // Concatenations have two or three parts: one allocation, not one plus a regrowth or
        // a shrink into the boxed slice.
        let mut items = Vec::with_capacity(3);
        items.push(first);
        while self.word() == Some(".") {
            self.bump();
            items.push(self.selector_binop()?);
        }
        Some(Expr::Concat(items.into_boxed_slice()))
    }

    /// A constant word or string.
    fn literal(&mut self) -> Option<Expr<'a>> {
        let t = self.peek()?;
        if let Some(w) = self.number_word(t) {
            self.bump();
            return Some(Expr::Literal(w));
        }
        match t.kind(self.text) {
            Kind::Str => {
                self.bump();
                Some(Expr::Literal(self.s(t)))
            }
            Kind::Word => {
                let w = self.s(t);
                if is_stmt_keyword(w)
                    || matches!(w, "." | ":" | "vmap" | "map" | "set")
                    || is_rel_op(w)
                {
                    return None;
                }
                self.bump();
                Some(Expr::Literal(w))
            }
            _ => None,
        }
    }

    fn rhs_primary(&mut self) -> Option<Expr<'a>> {
        let t = self.peek()?;
        if let Some(w) = self.number_word(t) {
            self.bump();
            return Some(Expr::Literal(w));
        }
        match t.kind(self.text) {
            Kind::LBrace => self.anon_set(false),
            Kind::Word if self.s(t).len() > 1 && self.s(t).starts_with('@') => {
                self.bump();
                Some(Expr::SetRef(&self.s(t)[1..]))
            }
            _ => self.literal(),
        }
    }

    fn map_ref(&mut self) -> Option<Expr<'a>> {
        match self.peek()?.kind(self.text) {
            Kind::LBrace => self.anon_set(false),
            _ => match self.rhs_primary()? {
                e @ Expr::SetRef(_) => Some(e),
                _ => None,
            },
        }
    }

    /// A match's right side (`lists`: `a,b` written without blanks is one flag list).
    fn rhs(&mut self, lists: bool) -> Option<Expr<'a>> {
        let first = self.rhs_primary()?;
        if self.word() == Some(".") {
            let mut items = Vec::with_capacity(3);
            items.push(first);
            while self.word() == Some(".") {
                self.bump();
                items.push(self.rhs_primary()?);
            }
            return Some(Expr::Concat(items.into_boxed_slice()));
        }
        // The vector only once a `,` follows: most right sides are one literal.
        if lists
            && let Expr::Literal(w) = first
            && self.list_continues()
        {
            let mut words = vec![w];
            while self.list_continues()
                && let Some(n) = self.nth(1)
            {
                words.push(self.s(n));
                self.bump();
                self.bump();
            }
            return Some(Expr::List(words.into_boxed_slice()));
        }
        Some(first)
    }

    /// Whether `,WORD` written without blanks follows the cursor (a flag list goes on).
    fn list_continues(&self) -> bool {
        matches!((self.nth(0), self.nth(1)), (Some(c), Some(n))
            if c.kind(self.text) == Kind::Comma
                && c.start == self.last_end()
                && n.kind(self.text) == Kind::Word
                && n.start == c.end)
    }

    /// An expression that may be a selector or a constant, with an optional `map` lookup:
    /// the value of `set`, the address of `dnat to`.
    fn value_expr(&mut self) -> Option<Expr<'a>> {
        let e = match self.lhs() {
            Some(e) => e,
            None => {
                let mut e = self.rhs(true)?;
                self.binops(&mut e)?;
                e
            }
        };
        if self.word() == Some("map") {
            self.bump();
            let map = self.map_ref()?;
            return Some(Expr::Map {
                key: Box::new(e),
                map: Box::new(map),
            });
        }
        Some(e)
    }

    /// `{ ... }` at the cursor.
    fn anon_set(&mut self, selectors: bool) -> Option<Expr<'a>> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.bump();
        self.depth += 1;
        let elements = self.elements(selectors);
        self.depth -= 1;
        match self.peek() {
            Some(t) if t.kind(self.text) == Kind::RBrace => self.bump(),
            _ => return None,
        }
        Some(Expr::Set(elements.into_boxed_slice()))
    }

    // ---- elements ----

    /// Elements up to a `}` (not consumed) or the end of the slice. `selectors`: keys may be
    /// expressions (`update @s { ip saddr }`).
    pub fn elements(&mut self, selectors: bool) -> Vec<Element<'a>> {
        let mut out = Vec::with_capacity(self.elements_ahead());
        loop {
            while self
                .peek()
                .is_some_and(|t| t.kind(self.text) == Kind::Comma)
            {
                self.bump();
            }
            let Some(t) = self.peek() else { break };
            if t.kind(self.text) == Kind::RBrace {
                break;
            }
            let start = self.pos;
            match self.element(selectors) {
                Some(e) => {
                    out.push(e);
                    match self.peek() {
                        None => {}
                        Some(n) if matches!(n.kind(self.text), Kind::Comma | Kind::RBrace) => {}
                        Some(n) => {
                            let from = n.start;
                            self.skip_element();
                            self.invalid_element(from, "expected `,` or `}` after this element");
                        }
                    }
                }
                None => {
                    self.pos = start;
                    self.skip_element();
                    self.invalid_element(t.start, "this element cannot be read");
                }
            }
        }
        // Anonymous maps of one or two 160-byte elements are common (numgen, one endpoint).
        out.shrink_to_fit();
        out
    }

    /// How many elements the list at the cursor holds at most (tokens after a `,` at its
    /// level, and the first), so that a 5,000-element list is sized once rather than copied
    /// at each doubling; runs of `,` count once, so the size stays within what the tokens
    /// could fill. One pass over the list; nested sets are passed again per level, at most
    /// [`MAX_DEPTH`] times.
    fn elements_ahead(&self) -> usize {
        let mut depth = 0u32;
        let mut starts = 0;
        let mut at_start = true;
        for t in &self.toks[self.pos..] {
            match t.kind(self.text) {
                Kind::Newline => continue,
                Kind::Comma if depth == 0 => {
                    at_start = true;
                    continue;
                }
                Kind::RBrace if depth == 0 => break,
                Kind::RBrace => depth -= 1,
                Kind::LBrace => depth += 1,
                _ => {}
            }
            if at_start && depth <= 1 {
                starts += 1;
            }
            at_start = false;
        }
        starts
    }

    fn invalid_element(&mut self, from: u32, label: &str) {
        let end = self.last_end().max(from);
        self.diags.push(
            Diagnostic::new(
                &codes::INVALID_ELEMENT,
                Span { start: from, end },
                "set element cannot be read",
            )
            .with_label(label)
            .with_help("write elements as `key`, `key comment \"...\"` or, in a map, `key : value`, separated by `,`"),
        );
    }

    /// Skips to the next `,` or `}` of this level (at least one token).
    fn skip_element(&mut self) {
        let mut depth = 0u32;
        let mut first = true;
        while let Some(t) = self.peek() {
            match t.kind(self.text) {
                Kind::Comma | Kind::RBrace if depth == 0 && !first => break,
                Kind::LBrace => depth += 1,
                Kind::RBrace => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            first = false;
            self.bump();
        }
    }

    fn element(&mut self, selectors: bool) -> Option<Element<'a>> {
        let start = self.peek()?.start;
        let key = if selectors {
            self.value_expr()?
        } else {
            self.rhs(false)?
        };
        let mut options = Vec::new();
        let mut comment = None;
        loop {
            match self.word() {
                Some(w @ ("timeout" | "expires")) => {
                    options.push(w);
                    self.bump();
                    options.push(self.word()?);
                    self.bump();
                }
                Some("counter") => {
                    options.push("counter");
                    self.bump();
                    while let Some(w @ ("packets" | "bytes")) = self.word() {
                        options.push(w);
                        self.bump();
                        options.push(self.word()?);
                        self.bump();
                    }
                }
                Some("comment") => {
                    self.bump();
                    let s = self.peek().filter(|t| t.kind(self.text) == Kind::Str)?;
                    self.bump();
                    comment = Some(unquote(self.s(s)));
                }
                // State kept per element, by a set declared with it (`elements = { 10.0.0.1
                // limit rate 10/second }`) or by a rule that updates the set (`add @s { ip
                // saddr limit rate over 10/second }`, `ct count over 20`, `quota over 25
                // mbytes`, `last`): kept as words, up to the element's end or its `:`.
                Some(w @ ("limit" | "quota" | "ct" | "last")) => {
                    options.push(w);
                    self.bump();
                    while let Some(w) = self.word().filter(|&w| w != ":") {
                        options.push(w);
                        self.bump();
                    }
                }
                _ => break,
            }
        }
        let value = if self.word() == Some(":") {
            let colon = self.peek()?;
            self.bump();
            match self.word().and_then(VerdictKind::from_word) {
                Some(kind) => {
                    self.bump();
                    Some(Value::Verdict(self.verdict_target(kind, colon)))
                }
                None => Some(Value::Data(Box::new(self.rhs(false)?))),
            }
        } else {
            None
        };
        Some(Element {
            key,
            options: options.into_boxed_slice(),
            comment,
            value,
            span: Span {
                start,
                end: self.last_end(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::tokenize;

    #[test]
    fn elements_ahead_counts_elements_not_commas() {
        let text = "a, b,\n { c, d } : x, , ,\ne }, f";
        let mut diags = Vec::new();
        let toks = tokenize(text, &mut diags);
        let cur = Cur::new(text, &toks, &mut diags);
        // a, b, `{ c, d } : x`, e; the list ends at its `}`.
        assert_eq!(cur.elements_ahead(), 4);
        let mut diags = Vec::new();
        let mut cur = Cur::new(text, &toks, &mut diags);
        assert_eq!(cur.elements(false).len(), 4);
    }
}
