//! User indexes: the number a QP or SRQ gives CREATE (CQE version 1), which the device
//! writes into each of its CQEs and the CQs look completions up by. Each context hands out
//! the lowest free one and takes it back when the queue is destroyed, so an index is never
//! held by two live queues (a plain counter would wrap after 2^24 - 1 creations and reuse a
//! live one's) and the CQs' tables, indexed by it, stay as small as the number of queues.

use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

/// The largest user index mlx5_ib accepts (`MLX5_IB_DEFAULT_UIDX`, 0xffffff, means none).
pub(crate) const MAX_USER_INDEX: u32 = 0x00ff_fffe;

/// A context's user indexes.
#[derive(Debug)]
pub(crate) struct UserIndexPool {
    state: Mutex<PoolState>,
}

#[derive(Debug)]
struct PoolState {
    /// Never handed out yet: this and above (up to the maximum).
    next: u32,
    /// Given back, lowest first.
    free: BinaryHeap<Reverse<u32>>,
    max: u32,
}

impl UserIndexPool {
    /// Indexes 1 to `max`.
    pub(crate) fn new(max: u32) -> Arc<UserIndexPool> {
        Arc::new(UserIndexPool {
            state: Mutex::new(PoolState { next: 1, free: BinaryHeap::new(), max }),
        })
    }

    /// The lowest free index, held until the returned guard drops.
    pub(crate) fn take(self: &Arc<Self>, op: &'static str) -> Result<UserIndex> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let value = match s.free.pop() {
            Some(Reverse(v)) => v,
            None if s.next <= s.max => {
                s.next += 1;
                s.next - 1
            }
            None => {
                return Err(Error::invalid(
                    op,
                    format!("all {} user indexes are held by live QPs and SRQs", s.max),
                )
                .with_hint("destroy queues that are no longer used"));
            }
        };
        Ok(UserIndex { value, pool: self.clone() })
    }
}

/// One user index, given back to its pool on drop (after the queue's DESTROY).
#[derive(Debug)]
pub(crate) struct UserIndex {
    value: u32,
    pool: Arc<UserIndexPool>,
}

impl UserIndex {
    /// The index.
    pub(crate) fn get(&self) -> u32 {
        self.value
    }
}

impl Drop for UserIndex {
    fn drop(&mut self) {
        let mut s = self.pool.state.lock().unwrap_or_else(|e| e.into_inner());
        s.free.push(Reverse(self.value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_free_index_is_handed_out_and_none_twice() {
        let pool = UserIndexPool::new(4);
        let take = || pool.take("CREATE_QP").unwrap();
        let (a, b, c) = (take(), take(), take());
        assert_eq!((a.get(), b.get(), c.get()), (1, 2, 3));
        drop(c);
        drop(a);
        let (one, three, four) = (take(), take(), take());
        assert_eq!((one.get(), three.get(), four.get()), (1, 3, 4), "the lowest free first");
        let e = pool.take("CREATE_QP").unwrap_err().to_string();
        assert!(e.contains("CREATE_QP") && e.contains("all 4 user indexes"), "{e}");
        drop(b);
        assert_eq!(take().get(), 2, "free again once given back");
    }
}
