//! A JSON value as one flat vector of nodes (a tape) instead of a tree of owned vectors.
//!
//! A node holds its key (in an object; `""` elsewhere) and its value; an array or object node
//! holds the index just past its last descendant, so its children follow it one after another
//! and a sibling is found by jumping over a child's subtree. One tape is reused from item to
//! item: reading the millions of small objects of a 5,000-Service node allocates nothing per
//! object, and nothing is taken apart afterwards.

use super::{KeySeed, Strings};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A value on the tape; containers hold the index past their subtree.
#[derive(Clone, Copy, Debug)]
pub(super) enum Val<'a> {
    Null,
    Bool(bool),
    /// A number, as decimal text.
    Num(&'a str),
    Str(&'a str),
    Arr(usize),
    Obj(usize),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Node<'a> {
    /// The key of the value in its object (`""` in an array or at the top).
    pub(super) key: &'a str,
    pub(super) val: Val<'a>,
}

/// Appends a container node whose end is set by [`close`]; returns its index.
pub(super) fn open<'a>(tape: &mut Vec<Node<'a>>, key: &'a str, object: bool) -> usize {
    let at = tape.len();
    let val = if object {
        Val::Obj(at + 1)
    } else {
        Val::Arr(at + 1)
    };
    tape.push(Node { key, val });
    at
}

/// Sets the end of the container at `at` to the tape's end (everything after it is inside).
pub(super) fn close(tape: &mut [Node<'_>], at: usize) {
    let end = tape.len();
    if let Some(node) = tape.get_mut(at) {
        match &mut node.val {
            Val::Arr(e) | Val::Obj(e) => *e = end,
            _ => {}
        }
    }
}

/// A value on a tape: the tape and the value's index.
#[derive(Clone, Copy)]
pub(super) struct J<'t, 'a> {
    tape: &'t [Node<'a>],
    at: usize,
}

impl<'t, 'a> J<'t, 'a> {
    pub(super) fn new(tape: &'t [Node<'a>], at: usize) -> Self {
        J { tape, at }
    }

    /// The value at `at` on the same tape.
    #[inline]
    pub(super) fn at(self, at: usize) -> J<'t, 'a> {
        J::new(self.tape, at)
    }

    /// The value (`Null` for an index off the tape, which the readers never make).
    #[inline]
    pub(super) fn val(self) -> Val<'a> {
        self.tape.get(self.at).map_or(Val::Null, |n| n.val)
    }

    #[inline]
    pub(super) fn key(self) -> &'a str {
        self.tape.get(self.at).map_or("", |n| n.key)
    }

    /// The items of an array or the fields of an object (none for anything else).
    #[inline]
    pub(super) fn children(self) -> Children<'t, 'a> {
        let end = match self.val() {
            Val::Arr(end) | Val::Obj(end) => end.min(self.tape.len()),
            _ => self.at,
        };
        Children {
            tape: self.tape,
            at: self.at + 1,
            end,
        }
    }

    #[inline]
    pub(super) fn is_obj(self) -> bool {
        matches!(self.val(), Val::Obj(_))
    }

    #[inline]
    pub(super) fn is_arr(self) -> bool {
        matches!(self.val(), Val::Arr(_))
    }

    /// The first field named `key` of an object.
    #[inline]
    pub(super) fn get(self, key: &str) -> Option<J<'t, 'a>> {
        if !self.is_obj() {
            return None;
        }
        self.children().find(|c| c.key() == key)
    }

    /// A string or number as text.
    #[inline]
    pub(super) fn text(self) -> Option<&'a str> {
        match self.val() {
            Val::Str(s) | Val::Num(s) => Some(s),
            _ => None,
        }
    }

    #[inline]
    pub(super) fn str_of(self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(J::text)
    }

    /// The one `{"key": value}` of an object of one field.
    #[inline]
    pub(super) fn single(self) -> Option<(&'a str, J<'t, 'a>)> {
        if !self.is_obj() {
            return None;
        }
        let mut fields = self.children();
        let first = fields.next()?;
        fields.next().is_none().then(|| (first.key(), first))
    }

    /// The two items of an array of two.
    #[inline]
    pub(super) fn pair(self) -> Option<(J<'t, 'a>, J<'t, 'a>)> {
        if !self.is_arr() {
            return None;
        }
        let mut items = self.children();
        let (a, b) = (items.next()?, items.next()?);
        items.next().is_none().then_some((a, b))
    }

    /// A string, or an array of strings (`"flags": "fully-random"` or `["a", "b"]`).
    pub(super) fn words(self) -> Vec<&'a str> {
        if self.is_arr() {
            self.children().filter_map(J::text).collect()
        } else {
            self.text().into_iter().collect()
        }
    }
}

/// The children of a container, each found past the subtree of the one before.
pub(super) struct Children<'t, 'a> {
    tape: &'t [Node<'a>],
    at: usize,
    end: usize,
}

impl<'t, 'a> Iterator for Children<'t, 'a> {
    type Item = J<'t, 'a>;

    #[inline]
    fn next(&mut self) -> Option<J<'t, 'a>> {
        if self.at >= self.end {
            return None;
        }
        let child = J::new(self.tape, self.at);
        // A container's end is past itself (`open` sets at least that): the walk moves on.
        self.at = match child.val() {
            Val::Arr(end) | Val::Obj(end) => end.max(self.at + 1),
            _ => self.at + 1,
        };
        Some(child)
    }
}

/// Reads one value onto a tape with serde_json (the path for what the plain reader declines).
pub(super) struct TreeSeed<'t, 'a> {
    pub(super) strings: &'a Strings,
    pub(super) tape: &'t mut Vec<Node<'a>>,
    pub(super) key: &'a str,
}

impl<'t, 'a> TreeSeed<'t, 'a> {
    fn push(self, val: Val<'a>) {
        self.tape.push(Node { key: self.key, val });
    }
}

impl<'a> DeserializeSeed<'a> for TreeSeed<'_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'a> Visitor<'a> for TreeSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.push(Val::Null);
        Ok(())
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.push(Val::Bool(v));
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        let s = self.strings.alloc(&v.to_string());
        self.push(Val::Num(s));
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        let s = self.strings.alloc(&v.to_string());
        self.push(Val::Num(s));
        Ok(())
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        let s = self.strings.alloc(&v.to_string());
        self.push(Val::Num(s));
        Ok(())
    }
    fn visit_borrowed_str<E>(self, v: &'a str) -> Result<(), E> {
        self.push(Val::Str(v));
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        let s = self.strings.alloc(v);
        self.push(Val::Str(s));
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'a>>(self, mut seq: A) -> Result<(), A::Error> {
        let (strings, tape) = (self.strings, self.tape);
        let at = open(tape, self.key, false);
        while seq
            .next_element_seed(TreeSeed {
                strings,
                tape: &mut *tape,
                key: "",
            })?
            .is_some()
        {}
        close(tape, at);
        Ok(())
    }
    fn visit_map<M: MapAccess<'a>>(self, mut map: M) -> Result<(), M::Error> {
        let (strings, tape) = (self.strings, self.tape);
        let at = open(tape, self.key, true);
        while let Some(key) = map.next_key_seed(KeySeed(strings))? {
            map.next_value_seed(TreeSeed {
                strings,
                tape: &mut *tape,
                key,
            })?;
        }
        close(tape, at);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Children, fields and pairs are found past nested subtrees; scalars have no children.
    #[test]
    fn children_skip_nested_subtrees() {
        let strings = Strings::new();
        let text = r#"{"a": [1, {"b": [2, 3]}, []], "c": "x", "a": null, "d": {}}"#;
        let mut tape = vec![Node {
            key: "",
            val: Val::Null,
        }];
        let mut de = serde_json::Deserializer::from_str(text);
        TreeSeed {
            strings: &strings,
            tape: &mut tape,
            key: "",
        }
        .deserialize(&mut de)
        .unwrap();
        let root = J::new(&tape, 1);
        let keys: Vec<_> = root.children().map(J::key).collect();
        assert_eq!(keys, ["a", "c", "a", "d"]);
        let a = root.get("a").unwrap();
        assert_eq!(a.children().count(), 3);
        assert_eq!(
            a.children().nth(1).unwrap().get("b").unwrap().words(),
            ["2", "3"]
        );
        assert!(a.pair().is_none());
        assert_eq!(root.str_of("c"), Some("x"));
        assert!(root.single().is_none());
        assert!(root.get("d").unwrap().children().next().is_none());
        assert_eq!(root.get("c").unwrap().children().count(), 0);
        assert!(matches!(J::new(&tape, 0).val(), Val::Null));
        assert!(matches!(J::new(&tape, 99).val(), Val::Null));
        assert_eq!(J::new(&tape, 99).children().count(), 0);
    }
}
