//! A first-in first-out queue with indexing, for the send WQEs a QP has between execution
//! and completion. `VecDeque` does the same, but on the data path its `push_back` is an
//! out-of-line call and every index pays for a compare-and-subtract wrap; here the
//! capacity is a power of two, the position of entry `i` is one add and one mask, and the
//! common operations inline. It grows (doubling) when full: its length is normally bounded
//! by the SQ size, but the HCA must not trust the doorbell record the application wrote.
//! The slots are `MaybeUninit` rather than `Option` so that an access tests neither an
//! `Option` nor a bound: the only invariant is that the entries, and only they, are
//! initialized.

use std::mem::MaybeUninit;

/// A FIFO queue indexed from its front.
pub struct Fifo<T> {
    /// A power of two number of slots (or none). The entries are the `len` slots from
    /// `head` on, wrapping around: exactly those are initialized. (`len <= slots.len()`.)
    slots: Box<[MaybeUninit<T>]>,
    /// Below `slots.len()`, or 0 without slots.
    head: usize,
    len: usize,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo { slots: Box::new([]), head: 0, len: 0 }
    }
}

impl<T> Fifo<T> {
    /// The capacity the first push allocates.
    const INITIAL_SLOTS: usize = 8;

    /// The slot of entry `i`. For `i < len` the slots are not empty and, their number
    /// being a power of two, the mask keeps the result below it.
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        (self.head + i) & self.slots.len().wrapping_sub(1)
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entry `i` counted from the front.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        let at = self.slot(i);
        // SAFETY: `i < len`: `at` is in bounds (see `slot`) and holds an entry, initialized.
        Some(unsafe { self.slots.get_unchecked(at).assume_init_ref() })
    }

    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            return None;
        }
        let at = self.slot(i);
        // SAFETY: as in `get`.
        Some(unsafe { self.slots.get_unchecked_mut(at).assume_init_mut() })
    }

    #[inline(always)]
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    #[inline(always)]
    pub fn back(&self) -> Option<&T> {
        self.get(self.len.wrapping_sub(1))
    }

    #[inline(always)]
    pub fn push_back(&mut self, value: T) {
        if self.len == self.slots.len() {
            self.grow();
        }
        // `len < slots.len()`: a free slot, in bounds (see `slot`).
        let at = self.slot(self.len);
        self.slots[at].write(value);
        self.len += 1;
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let at = self.head;
        self.head = self.slot(1);
        self.len -= 1;
        // SAFETY: `len` was not 0, so `at` (`head`) is in bounds and held the first entry,
        // initialized; it is no longer an entry, so the value is not read or dropped again.
        Some(unsafe { self.slots.get_unchecked(at).assume_init_read() })
    }

    /// Removes every entry (keeping the slots).
    pub fn clear(&mut self) {
        while self.pop_front().is_some() {}
        self.head = 0;
    }

    /// The entries from the front.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len).map(|i| self.get(i).expect("an entry"))
    }

    /// The entries from the front, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        // The entries are the end of the slots from `head` on, then their beginning.
        let (wrapped, from_head) = self.slots.split_at_mut(self.head);
        let tail_len = from_head.len().min(self.len);
        let wrapped_len = self.len - tail_len;
        from_head[..tail_len].iter_mut().chain(wrapped[..wrapped_len].iter_mut()).map(|slot| {
            // SAFETY: the two ranges are exactly the entries' slots, initialized.
            unsafe { slot.assume_init_mut() }
        })
    }

    /// Doubles the slots (out of line: once per QP in the common case), the entries moved
    /// to the front of the new ones.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(Self::INITIAL_SLOTS);
        let mut slots: Box<[MaybeUninit<T>]> = Box::new_uninit_slice(capacity);
        let moved = self.len;
        for (i, slot) in slots.iter_mut().take(moved).enumerate() {
            let at = self.slot(i);
            // SAFETY: `i < len`: `at` holds an entry, read out once (the old slots are
            // freed below without dropping anything: `MaybeUninit` never drops).
            slot.write(unsafe { self.slots[at].assume_init_read() });
        }
        self.slots = slots;
        self.head = 0;
        self.len = moved;
    }
}

impl<T> Drop for Fifo<T> {
    fn drop(&mut self) {
        self.clear();
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Fifo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T> std::ops::Index<usize> for Fifo<T> {
    type Output = T;

    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        self.get(i).expect("Fifo index out of range")
    }
}

impl<T> std::ops::IndexMut<usize> for Fifo<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.get_mut(i).expect("Fifo index out of range")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn assert_same(ours: &mut Fifo<u64>, reference: &VecDeque<u64>, step: u64) {
        assert_eq!(ours.len(), reference.len(), "step {step}");
        assert_eq!(ours.front(), reference.front(), "step {step}");
        assert_eq!(ours.back(), reference.back(), "step {step}");
        for i in 0..reference.len() + 2 {
            assert_eq!(ours.get(i), reference.get(i), "step {step} index {i}");
        }
        assert!(ours.iter().eq(reference.iter()), "step {step}");
        assert!(ours.iter_mut().map(|v| *v).eq(reference.iter().copied()), "step {step}");
    }

    #[test]
    fn behaves_like_a_vec_deque_across_wraps_and_growth() {
        let mut ours = Fifo::default();
        let mut reference = VecDeque::new();
        let mut x = 0x9e37_79b9u64;
        let mut next = 0u64;
        for step in 0..20_000u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            // Pushes slightly more often than pops, in bursts, so the queue wanders around
            // its slots, empties now and then and grows to a few hundred entries.
            let burst = (x >> 40) % 5;
            for _ in 0..burst {
                if (x >> 20) % 9 < 5 {
                    ours.push_back(next);
                    reference.push_back(next);
                    next += 1;
                } else {
                    assert_eq!(ours.pop_front(), reference.pop_front(), "step {step}");
                }
                x = x.rotate_left(7);
            }
            if step % 97 == 0 && !reference.is_empty() {
                let i = (x as usize) % reference.len();
                ours[i] += 1000;
                reference[i] += 1000;
                for v in ours.iter_mut() {
                    *v += 1;
                }
                for v in reference.iter_mut() {
                    *v += 1;
                }
            }
            if step % 5000 == 4999 {
                ours.clear();
                reference.clear();
            }
            assert_same(&mut ours, &reference, step);
        }
    }

    #[test]
    fn indexes_across_the_wrap_point() {
        let mut q = Fifo::default();
        for v in 0..8u32 {
            q.push_back(v);
        }
        // Head in the middle: entries 0..=2 sit at the end of the slots, 3.. at the start.
        for v in 0..5 {
            assert_eq!(q.pop_front(), Some(v));
        }
        for v in 8..13 {
            q.push_back(v);
        }
        assert_eq!(q.len(), 8);
        assert_eq!((0..8).map(|i| q[i]).collect::<Vec<_>>(), (5..13).collect::<Vec<_>>());
        // Full and wrapped: growing keeps the order.
        q.push_back(13);
        assert_eq!(q.iter().copied().collect::<Vec<_>>(), (5..14).collect::<Vec<_>>());
        assert_eq!(q.get(9), None);
        assert_eq!(q.back(), Some(&13));
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn indexing_past_the_end_panics() {
        let mut q = Fifo::default();
        q.push_back(1u8);
        q.pop_front();
        q.push_back(2u8);
        let _ = q[1];
    }

    #[test]
    fn drops_what_it_holds_exactly_once() {
        let counted = std::rc::Rc::new(());
        let mut q = Fifo::default();
        // Wrapped when it grows: entries moved from both ends of the old slots.
        for _ in 0..8 {
            q.push_back(counted.clone());
        }
        for _ in 0..5 {
            q.pop_front();
        }
        for _ in 0..14 {
            q.push_back(counted.clone());
        }
        assert_eq!(std::rc::Rc::strong_count(&counted), 18);
        q.pop_front();
        assert_eq!(std::rc::Rc::strong_count(&counted), 17);
        q.clear();
        assert_eq!(std::rc::Rc::strong_count(&counted), 1);
        q.push_back(counted.clone());
        q.push_back(counted.clone());
        drop(q);
        assert_eq!(std::rc::Rc::strong_count(&counted), 1);
    }
}
