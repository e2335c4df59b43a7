//! Chain lookup by name within one table, built for dumps with hundreds of thousands of chains.
//!
//! Graph building looks up the target of every jump: in a large kube-proxy dump that is most
//! rules, each a random access into a table of several megabytes. So the table keeps the name
//! inline in its slot (one cache line to read, not a slot and then a name elsewhere), and a
//! caller that knows its next names can [`ChainIndex::prefetch`] them to overlap the misses.
//!
//! Open addressing with linear probing. A byte array of tags (0: empty, else 7 bits of the hash
//! with the high bit set) answers most probes without touching the slots, so a name that is not
//! a chain (`-j DNAT`) costs a scan of a few tag bytes.

use crate::model::ChainId;
use rustc_hash::{FxBuildHasher, FxHashMap};
use std::hash::BuildHasher;

/// Longest name kept in a slot. iptables allows 28 bytes; kube-proxy's names have at most 25
/// (`KUBE-SEP-` and 16 characters), Calico's 23. Longer names go to a small side map.
const INLINE: usize = 27;

/// One chain: id, name length and name bytes. 32 bytes, two to a cache line.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Slot {
    id: u32,
    len: u8,
    name: [u8; INLINE],
}

const EMPTY_SLOT: Slot = Slot {
    id: 0,
    len: 0,
    name: [0; INLINE],
};

/// Chain lookup by name within one table.
#[derive(Clone, Default)]
pub(crate) struct ChainIndex {
    /// Per slot: 0 when empty, else [`tag`] of the name's hash. Length is 0 or at least 16.
    tags: Vec<u8>,
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

/// The tag byte of a hash: never 0, which marks an empty slot.
#[inline]
fn tag(hash: u64) -> u8 {
    (hash >> 57) as u8 | 0x80
}

impl ChainIndex {
    /// The hash of a name's bytes that [`ChainIndex::get_hashed`] and [`ChainIndex::prefetch`]
    /// take.
    #[inline]
    pub(crate) fn hash(name: &[u8]) -> u64 {
        FxBuildHasher.hash_one(name)
    }

    /// The chain called `name`.
    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<ChainId> {
        self.get_hashed(Self::hash(name.as_bytes()), name)
    }

    /// The chain called `name`, whose [`ChainIndex::hash`] is `hash`.
    #[inline]
    pub(crate) fn get_hashed(&self, hash: u64, name: &str) -> Option<ChainId> {
        if name.len() > INLINE {
            return self.long.get(name).copied();
        }
        if self.slots.is_empty() {
            return None;
        }
        let len = self.slots.len();
        let want = tag(hash);
        let mut i = home(hash, len);
        // The table is never full (see `insert`), so the probe meets an empty slot.
        loop {
            match self.tags[i] {
                0 => return None,
                t if t == want => {
                    let slot = &self.slots[i];
                    if same_name(&slot.name[..slot.len as usize], name.as_bytes()) {
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
        prefetch_line(&self.tags[i]);
        prefetch_line(&self.slots[i]);
    }

    /// Makes room for `chains` more names.
    pub(crate) fn reserve(&mut self, chains: usize) {
        let needed = self.inline_count.saturating_add(chains);
        if needed > self.max_load() {
            self.resize(capacity_for(needed));
        }
    }

    /// Records `name` -> `id`; the caller checks that `name` is new.
    pub(crate) fn insert(&mut self, name: &str, id: ChainId) {
        if name.len() > INLINE {
            self.long.insert(name.into(), id);
            return;
        }
        if self.inline_count + 1 > self.max_load() {
            // Grow geometrically: names inserted one by one cost amortised constant time.
            self.resize(capacity_for(
                (self.inline_count + 1).max(self.inline_count * 2),
            ));
        }
        let mut slot = EMPTY_SLOT;
        slot.id = id.0;
        slot.len = name.len() as u8;
        slot.name[..name.len()].copy_from_slice(name.as_bytes());
        self.place(Self::hash(name.as_bytes()), slot);
        self.inline_count += 1;
    }

    /// Most names the slots may hold: 3/4 of them, so probes stay short and always end.
    fn max_load(&self) -> usize {
        self.slots.len() / 4 * 3
    }

    /// Puts `slot` in the first free place from its hash's home.
    fn place(&mut self, hash: u64, slot: Slot) {
        let len = self.slots.len();
        let mut i = home(hash, len);
        while self.tags[i] != 0 {
            i = next(i, len);
        }
        self.tags[i] = tag(hash);
        self.slots[i] = slot;
    }

    fn resize(&mut self, capacity: usize) {
        let old_tags = std::mem::replace(&mut self.tags, vec![0; capacity]);
        let mut slots = Vec::with_capacity(capacity);
        // Lookups land anywhere in the slots: huge pages also spare TLB misses.
        crate::huge_pages::advise(&slots);
        slots.resize(capacity, EMPTY_SLOT);
        let old_slots = std::mem::replace(&mut self.slots, slots);
        for (t, slot) in old_tags.into_iter().zip(old_slots) {
            if t != 0 {
                let hash = Self::hash(&slot.name[..slot.len as usize]);
                self.place(hash, slot);
            }
        }
    }
}

/// Slots for `names` names under the 3/4 load limit, at least 16. Not rounded to a power of
/// two: that doubled the index of a dump with just over a power of two chains (issue 16: the
/// 1M-chain dump took 2M slots, 64 MiB; now 1.33M, 41 MiB).
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

/// A prefetch hint for the cache line holding `value`.
#[inline]
fn prefetch_line<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults; `value` is a valid reference anyway. The
    // `sse` feature it needs is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_inserted_and_nothing_else() {
        let mut index = ChainIndex::default();
        assert_eq!(index.get("INPUT"), None);
        let names: Vec<String> = (0..5000).map(|i| format!("KUBE-SEP-{i:016X}")).collect();
        for (i, name) in names.iter().enumerate() {
            index.insert(name, ChainId(i as u32));
        }
        for (i, name) in names.iter().enumerate() {
            assert_eq!(index.get(name), Some(ChainId(i as u32)), "{name}");
            index.prefetch(ChainIndex::hash(name.as_bytes()));
        }
        assert_eq!(index.get("KUBE-SEP-"), None);
        assert_eq!(index.get("DNAT"), None);
        assert_eq!(index.get(""), None);
    }

    #[test]
    fn long_names_and_names_at_the_inline_limit() {
        let mut index = ChainIndex::default();
        let at_limit = "A".repeat(INLINE);
        let longer = "A".repeat(INLINE + 1);
        let much_longer = "cali-".repeat(40);
        index.insert(&at_limit, ChainId(1));
        index.insert(&longer, ChainId(2));
        index.insert(&much_longer, ChainId(3));
        assert_eq!(index.get(&at_limit), Some(ChainId(1)));
        assert_eq!(index.get(&longer), Some(ChainId(2)));
        assert_eq!(index.get(&much_longer), Some(ChainId(3)));
        assert_eq!(index.get(&"A".repeat(INLINE - 1)), None);
        assert_eq!(index.get(&"A".repeat(INLINE + 2)), None);
    }

    #[test]
    fn reserve_keeps_entries_and_room() {
        let mut index = ChainIndex::default();
        index.insert("KUBE-SERVICES", ChainId(0));
        index.reserve(1000);
        let capacity = index.slots.len();
        assert!(capacity / 4 * 3 >= 1001);
        assert!(
            capacity < 1500,
            "{capacity} slots: sized to the names, not a power of two"
        );
        for i in 1..=1000 {
            index.insert(&format!("c{i}"), ChainId(i));
        }
        assert_eq!(index.slots.len(), capacity, "reserve made room for all");
        assert_eq!(index.get("KUBE-SERVICES"), Some(ChainId(0)));
        assert_eq!(index.get("c1000"), Some(ChainId(1000)));
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
        let mut index = ChainIndex::default();
        for i in 0..100u32 {
            index.insert(&format!("ç-{i}"), ChainId(i));
        }
        assert_eq!(index.get("ç-99"), Some(ChainId(99)));
    }
}
