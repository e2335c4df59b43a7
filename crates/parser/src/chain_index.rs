//! Chain lookup by name within one table, built for dumps with hundreds of thousands of chains.
//!
//! Graph building looks up the target of every jump: in a large kube-proxy dump that is most
//! rules, each a random access into a table of several megabytes. A caller that knows its next
//! names can [`ChainIndex::prefetch`] them to overlap the misses.
//!
//! Open addressing with linear probing. The names stay in the source text: a slot holds where
//! the name starts and the chain's id (8 bytes), and a parallel array of 2-byte keys (0: empty,
//! else 7 bits of the hash with the high bit set, and the name's length) answers most probes
//! without touching the slots or the text, so a name that is not a chain (`-j DNAT`) costs a
//! scan of a few keys. 10 bytes a slot, 13 a chain at 3/4 load (issue 16: names copied into
//! 32-byte slots took 44 bytes a chain, more than the declaration line itself).

use crate::model::ChainId;
use rustc_hash::{FxBuildHasher, FxHashMap};
use std::hash::BuildHasher;

/// Longest name that has a slot; longer names (iptables allows 28 bytes) go to a small side map.
const INLINE: usize = u8::MAX as usize;

/// One chain: where its name starts in the source, and its id.
#[derive(Clone, Copy)]
struct Slot {
    start: u32,
    id: u32,
}

const EMPTY_SLOT: Slot = Slot { start: 0, id: 0 };

/// Chain lookup by name within one table. The names are read from the source text the chains
/// were inserted from, which every lookup passes in.
#[derive(Clone, Default)]
pub(crate) struct ChainIndex {
    /// Per slot: 0 when empty, else [`key`] of the name. Length is 0 or at least 16.
    keys: Vec<u16>,
    slots: Vec<Slot>,
    /// Names in `slots`.
    inline_count: usize,
    /// Names longer than [`INLINE`].
    long: FxHashMap<Box<str>, ChainId>,
}

impl std::fmt::Debug for ChainIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainIndex")
            .field("chains", &(self.inline_count + self.long.len()))
            .finish()
    }
}

/// The key of a name of `len` bytes (at most [`INLINE`]) whose hash is `hash`: never 0, which
/// marks an empty slot.
#[inline]
fn key(hash: u64, len: usize) -> u16 {
    (((hash >> 57) as u16 | 0x80) << 8) | len as u16
}

impl ChainIndex {
    /// The hash of a name's bytes that [`ChainIndex::get_hashed`] and [`ChainIndex::prefetch`]
    /// take.
    #[inline]
    pub(crate) fn hash(name: &[u8]) -> u64 {
        FxBuildHasher.hash_one(name)
    }

    /// The chain called `name`; `source` is the text the names were inserted from.
    #[inline]
    pub(crate) fn get(&self, source: &str, name: &str) -> Option<ChainId> {
        self.get_hashed(source, Self::hash(name.as_bytes()), name)
    }

    /// The chain called `name`, whose [`ChainIndex::hash`] is `hash`.
    #[inline]
    pub(crate) fn get_hashed(&self, source: &str, hash: u64, name: &str) -> Option<ChainId> {
        if name.len() > INLINE {
            return self.long.get(name).copied();
        }
        if self.slots.is_empty() {
            return None;
        }
        let len = self.slots.len();
        let want = key(hash, name.len());
        let text = source.as_bytes();
        let mut i = home(hash, len);
        // The table is never full (see `insert`), so the probe meets an empty slot.
        loop {
            match self.keys[i] {
                0 => return None,
                k if k == want => {
                    let slot = self.slots[i];
                    let start = slot.start as usize;
                    if text
                        .get(start..start + name.len())
                        .is_some_and(|stored| same_name(stored, name.as_bytes()))
                    {
                        return Some(ChainId(slot.id));
                    }
                }
                _ => {}
            }
            i = next(i, len);
        }
    }

    /// Asks the CPU to start loading what a lookup of `hash` will read first. Only a hint: it
    /// changes no result.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        if self.slots.is_empty() {
            return;
        }
        let i = home(hash, self.slots.len());
        crate::prefetch::line(&self.keys[i]);
        crate::prefetch::line(&self.slots[i]);
    }

    /// Once [`ChainIndex::prefetch`] has brought the slots of `hash` in: asks the CPU to load
    /// the name in `source` that a lookup of a name of `len` bytes will compare. Only a hint.
    #[inline]
    pub(crate) fn prefetch_name(&self, source: &str, hash: u64, len: usize) {
        if len > INLINE || self.slots.is_empty() {
            return;
        }
        let want = key(hash, len);
        let mut i = home(hash, self.slots.len());
        // A few probes: past them the lookup is rare enough to pay its misses.
        for _ in 0..4 {
            match self.keys[i] {
                0 => return,
                k if k == want => {
                    if let Some(byte) = source.as_bytes().get(self.slots[i].start as usize) {
                        crate::prefetch::line(byte);
                    }
                    return;
                }
                _ => i = next(i, self.slots.len()),
            }
        }
    }

    /// Makes room for `chains` more names.
    pub(crate) fn reserve(&mut self, source: &str, chains: usize) {
        let needed = self.inline_count.saturating_add(chains);
        if needed > self.max_load() {
            self.resize(source, capacity_for(needed));
        }
    }

    /// Records `name`, the text at `start` in `source`, -> `id`; the caller checks that `name`
    /// is new.
    pub(crate) fn insert(&mut self, source: &str, start: u32, name: &str, id: ChainId) {
        debug_assert_eq!(
            source
                .as_bytes()
                .get(start as usize..start as usize + name.len()),
            Some(name.as_bytes())
        );
        if name.len() > INLINE {
            self.long.insert(name.into(), id);
            return;
        }
        if self.inline_count + 1 > self.max_load() {
            // Grow geometrically: names inserted one by one cost amortised constant time.
            self.resize(
                source,
                capacity_for((self.inline_count + 1).max(self.inline_count * 2)),
            );
        }
        let hash = Self::hash(name.as_bytes());
        self.place(key(hash, name.len()), hash, Slot { start, id: id.0 });
        self.inline_count += 1;
    }

    /// Most names the slots may hold: 3/4 of them, so probes stay short and always end.
    fn max_load(&self) -> usize {
        self.slots.len() / 4 * 3
    }

    /// Puts `slot` in the first free place from its hash's home.
    fn place(&mut self, key: u16, hash: u64, slot: Slot) {
        let len = self.slots.len();
        let mut i = home(hash, len);
        while self.keys[i] != 0 {
            i = next(i, len);
        }
        self.keys[i] = key;
        self.slots[i] = slot;
    }

    fn resize(&mut self, source: &str, capacity: usize) {
        let old_keys = std::mem::replace(&mut self.keys, vec![0; capacity]);
        let mut slots = Vec::with_capacity(capacity);
        // Lookups land anywhere in the slots: huge pages also spare TLB misses.
        crate::huge_pages::advise(&slots);
        slots.resize(capacity, EMPTY_SLOT);
        let old_slots = std::mem::replace(&mut self.slots, slots);
        let text = source.as_bytes();
        for (k, slot) in old_keys.into_iter().zip(old_slots) {
            if k != 0 {
                let start = slot.start as usize;
                // The source holds every name inserted; an empty name if a caller broke that
                // only hides the chain, it does not panic.
                let name = text
                    .get(start..start + (k & 0xff) as usize)
                    .unwrap_or_default();
                self.place(k, Self::hash(name), slot);
            }
        }
    }
}

/// Slots for `names` names under the 3/4 load limit, at least 16. Not rounded to a power of
/// two: that doubled the index of a dump with just over a power of two chains (issue 16: the
/// 1M-chain dump took 2M slots, 64 MiB; now 1.33M, 13 MB).
fn capacity_for(names: usize) -> usize {
    (names.saturating_mul(4) / 3 + 4)
        .next_multiple_of(4)
        .max(16)
}

/// Where a probe for `hash` starts among `len` slots: the low 32 bits of the hash scaled to
/// `len` (a multiply and a shift, not a division).
#[inline]
fn home(hash: u64, len: usize) -> usize {
    ((hash as u32 as u64 * len as u64) >> 32) as usize
}

/// The slot after `i` among `len`, wrapping around.
#[inline]
fn next(i: usize, len: usize) -> usize {
    if i + 1 == len { 0 } else { i + 1 }
}

/// `a == b`, inline for the short names of chains: they are compared on every rule, and for 5 to
/// 30 bytes a call to `memcmp` costs more than the compare. Reads 8 (or 4) bytes at a time, the
/// last read overlapping the one before it.
#[inline]
pub(crate) fn same_name(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let word =
            |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or_default());
        let mut i = 0;
        while i + 8 < n {
            if word(a, i) != word(b, i) {
                return false;
            }
            i += 8;
        }
        word(a, n - 8) == word(b, n - 8)
    } else if n >= 4 {
        let word =
            |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap_or_default());
        word(a, 0) == word(b, 0) && word(a, n - 4) == word(b, n - 4)
    } else {
        a.iter().zip(b).all(|(x, y)| x == y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names one per line, as a source text, and where each starts.
    fn source_of(names: &[String]) -> (String, Vec<u32>) {
        let mut text = String::new();
        let mut starts = Vec::new();
        for name in names {
            starts.push(text.len() as u32);
            text.push_str(name);
            text.push('\n');
        }
        (text, starts)
    }

    fn index_of(names: &[String]) -> (String, ChainIndex) {
        let (text, starts) = source_of(names);
        let mut index = ChainIndex::default();
        for (i, name) in names.iter().enumerate() {
            index.insert(&text, starts[i], name, ChainId(i as u32));
        }
        (text, index)
    }

    #[test]
    fn finds_what_was_inserted_and_nothing_else() {
        assert_eq!(ChainIndex::default().get("", "INPUT"), None);
        let names: Vec<String> = (0..5000).map(|i| format!("KUBE-SEP-{i:016X}")).collect();
        let (text, index) = index_of(&names);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(index.get(&text, name), Some(ChainId(i as u32)), "{name}");
            index.prefetch(ChainIndex::hash(name.as_bytes()));
            index.prefetch_name(&text, ChainIndex::hash(name.as_bytes()), name.len());
        }
        assert_eq!(index.get(&text, "KUBE-SEP-"), None);
        assert_eq!(index.get(&text, "DNAT"), None);
        assert_eq!(index.get(&text, ""), None);
        // A name that is a prefix of a stored one, or runs past its end into the next line.
        assert_eq!(index.get(&text, &names[7][..names[7].len() - 1]), None);
        assert_eq!(index.get(&text, &format!("{}\n", names[7])), None);
    }

    #[test]
    fn long_names_and_names_at_the_inline_limit() {
        let names = vec![
            "A".repeat(INLINE),
            "A".repeat(INLINE + 1),
            "cali-".repeat(60),
            "A".repeat(27),
        ];
        let (text, index) = index_of(&names);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(index.get(&text, name), Some(ChainId(i as u32)), "{i}");
        }
        assert_eq!(index.get(&text, &"A".repeat(INLINE - 1)), None);
        assert_eq!(index.get(&text, &"A".repeat(INLINE + 2)), None);
    }

    #[test]
    fn reserve_keeps_entries_and_room() {
        let names: Vec<String> = std::iter::once("KUBE-SERVICES".to_string())
            .chain((1..=1000).map(|i| format!("c{i}")))
            .collect();
        let (text, starts) = source_of(&names);
        let mut index = ChainIndex::default();
        index.insert(&text, starts[0], &names[0], ChainId(0));
        index.reserve(&text, 1000);
        let capacity = index.slots.len();
        assert!(capacity / 4 * 3 >= 1001);
        assert!(
            capacity < 1500,
            "{capacity} slots: sized to the names, not a power of two"
        );
        for i in 1..=1000 {
            index.insert(&text, starts[i], &names[i], ChainId(i as u32));
        }
        assert_eq!(index.slots.len(), capacity, "reserve made room for all");
        assert_eq!(index.get(&text, "KUBE-SERVICES"), Some(ChainId(0)));
        assert_eq!(index.get(&text, "c1000"), Some(ChainId(1000)));
    }

    #[test]
    fn a_declared_chain_costs_about_thirteen_bytes() {
        // The parser reserves room for a table's block of declarations before inserting them.
        let names: Vec<String> = (0..100_000).map(|i| format!("C{i}")).collect();
        let (text, starts) = source_of(&names);
        let mut index = ChainIndex::default();
        index.reserve(&text, names.len());
        for (i, name) in names.iter().enumerate() {
            index.insert(&text, starts[i], name, ChainId(i as u32));
        }
        let bytes = index.slots.capacity() * size_of::<Slot>() + index.keys.capacity() * 2;
        assert!(bytes <= names.len() * 14, "{bytes} bytes");
    }

    proptest::proptest! {
        /// The inline compare agrees with `==` on names of any length, equal or nearly so.
        #[test]
        fn same_name_is_equality(
            a in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            flip in proptest::prelude::any::<proptest::sample::Index>(),
            bit in 0u8..8,
            longer in proptest::prelude::any::<bool>(),
        ) {
            proptest::prop_assert!(same_name(&a, &a));
            let mut b = a.clone();
            if longer {
                b.push(0);
            } else if !b.is_empty() {
                let i = flip.index(b.len());
                b[i] ^= 1 << bit;
            }
            proptest::prop_assert_eq!(same_name(&a, &b), a == b);
        }
    }

    #[test]
    fn non_ascii_names_round_trip_through_resizing() {
        let names: Vec<String> = (0..100).map(|i| format!("ç-{i}")).collect();
        let (text, index) = index_of(&names);
        assert_eq!(index.get(&text, "ç-99"), Some(ChainId(99)));
    }
}
