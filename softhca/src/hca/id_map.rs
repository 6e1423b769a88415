//! Maps keyed by object numbers (QPN, CQN, key index, pending slot). These are small
//! integers the HCA hands out itself, mostly consecutive, so the table is indexed by the
//! number's low bits directly (open addressing with linear probing, at most half full):
//! a lookup on the data path is one index and one compare, no hash.

/// An object number usable as a key: its value is its hash.
pub trait Id: Copy + Eq + std::fmt::Debug {
    /// The number, as a table index before masking.
    fn index(self) -> usize;
}

impl Id for u32 {
    fn index(self) -> usize {
        self as usize
    }
}

impl Id for u16 {
    fn index(self) -> usize {
        usize::from(self)
    }
}

/// A map from an object number to its object.
#[derive(Clone, Debug)]
pub struct IdMap<K: Id, V> {
    /// A power of two number of slots (or none), at most half of them used.
    slots: Vec<Option<(K, V)>>,
    len: usize,
}

impl<K: Id, V> Default for IdMap<K, V> {
    fn default() -> Self {
        IdMap { slots: Vec::new(), len: 0 }
    }
}

impl<K: Id, V> IdMap<K, V> {
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// The slot holding `key`, if any. (An empty table has no slots: `get` says None.)
    #[inline(always)]
    fn find(&self, key: K) -> Option<usize> {
        let mask = self.mask();
        let mut at = key.index() & mask;
        loop {
            match self.slots.get(at)? {
                Some((k, _)) if *k == key => return Some(at),
                Some(_) => at = (at + 1) & mask,
                None => return None,
            }
        }
    }

    /// The object numbered `key`.
    #[inline(always)]
    pub fn get(&self, key: &K) -> Option<&V> {
        let at = self.find(*key)?;
        self.slots.get(at)?.as_ref().map(|(_, v)| v)
    }

    /// The object numbered `key`, mutably.
    #[inline(always)]
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let at = self.find(*key)?;
        self.slots.get_mut(at)?.as_mut().map(|(_, v)| v)
    }

    /// True if `key` is in the map.
    pub fn contains_key(&self, key: &K) -> bool {
        self.find(*key).is_some()
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True without entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Inserts `value` under `key`; returns the value it replaces.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(at) = self.find(key) {
            return self.slots[at].replace((key, value)).map(|(_, v)| v);
        }
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.mask();
        let mut at = key.index() & mask;
        while self.slots[at].is_some() {
            at = (at + 1) & mask;
        }
        self.slots[at] = Some((key, value));
        self.len += 1;
        None
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, (0..size).map(|_| None).collect());
        self.len = 0;
        for (k, v) in old.into_iter().flatten() {
            self.insert(k, v);
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let mut hole = self.find(*key)?;
        let removed = self.slots[hole].take().map(|(_, v)| v);
        self.len -= 1;
        // Backward-shift deletion: move up each later entry of the probe run whose home
        // slot is not between the hole and itself, so every lookup still finds its key.
        let mask = self.mask();
        let mut at = hole;
        loop {
            at = (at + 1) & mask;
            let Some((k, _)) = &self.slots[at] else { break };
            let home = k.index() & mask;
            let stays =
                if hole <= at { hole < home && home <= at } else { hole < home || home <= at };
            if !stays {
                self.slots[hole] = self.slots[at].take();
                hole = at;
            }
        }
        removed
    }

    /// Keeps the entries for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        let doomed: Vec<K> = self
            .slots
            .iter_mut()
            .filter_map(|slot| slot.as_mut())
            .filter_map(|(k, v)| (!keep(k, v)).then_some(*k))
            .collect();
        for k in doomed {
            self.remove(&k);
        }
    }

    /// The entries, in no particular order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter { slots: self.slots.iter() }
    }

    /// The values, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }
}

/// The entries of an [`IdMap`].
pub struct Iter<'a, K, V> {
    slots: std::slice::Iter<'a, Option<(K, V)>>,
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.slots.find_map(|slot| slot.as_ref().map(|(k, v)| (k, v)))
    }
}

impl<'a, K: Id, V> IntoIterator for &'a IdMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn behaves_like_a_hash_map_under_collisions_and_removals() {
        let mut ours: IdMap<u32, u64> = IdMap::default();
        let mut reference = HashMap::new();
        let mut x = 0x1234_5678u64;
        for step in 0..20_000u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            // Keys that collide a lot: few distinct low bits, some far apart.
            let key = ((x >> 33) as u32 % 48) * if x & 1 == 0 { 1 } else { 4096 };
            match (x >> 20) % 4 {
                0 | 1 => assert_eq!(ours.insert(key, step), reference.insert(key, step)),
                2 => assert_eq!(ours.remove(&key), reference.remove(&key)),
                _ => ours.retain(|k, v| {
                    *v += 1;
                    k % 7 != (step % 7) as u32
                }),
            }
            if (x >> 20) % 4 == 3 {
                reference.retain(|k, v| {
                    *v += 1;
                    k % 7 != (step % 7) as u32
                });
            }
            assert_eq!(ours.len(), reference.len());
            for k in [key, key ^ 1, key.wrapping_add(4096)] {
                assert_eq!(ours.get(&k), reference.get(&k), "step {step} key {k}");
            }
        }
        let mut all: Vec<_> = ours.iter().map(|(k, v)| (*k, *v)).collect();
        all.sort_unstable();
        let mut expected: Vec<_> = reference.into_iter().collect();
        expected.sort_unstable();
        assert_eq!(all, expected);
    }
}
