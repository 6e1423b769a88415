//! Static blue-flame register bookkeeping of a context (`struct mlx5_bfreg_info` and
//! `alloc_bfreg` / `adjust_bfregn` in hw/mlx5/qp.c).
//!
//! The kernel numbers a context's user bfregs 2 per UAR (`MLX5_NON_FP_BFREGS_PER_UAR`);
//! bfreg 0 is shared and doorbell-only, the last `num_low_latency` are dedicated
//! ("high class", one QP each), the rest are shared least-used-first ("medium class"). The
//! CREATE_QP response uses the 4-per-UAR numbering rdma-core indexes its array with.

use super::caps::{BF_REG_SIZE, NON_FP_BFREGS_PER_UAR};
use crate::objects::Bfreg;
use ferrodat_abi::mlx5::{BF_OFFSET, BFREGS_PER_UAR};

#[derive(Debug)]
pub(crate) struct BfregInfo {
    /// Request version: 0 for the old 8-byte GET_CONTEXT request (every QP gets bfreg 0),
    /// 2 otherwise.
    pub ver: u8,
    /// Static bfregs (a multiple of 2).
    pub total: u32,
    /// How many of them are dedicated low-latency bfregs.
    pub num_low_latency: u32,
    /// QPs using each bfreg.
    count: Vec<u32>,
}

impl BfregInfo {
    pub fn new(ver: u8, total: u32, num_low_latency: u32) -> BfregInfo {
        BfregInfo { ver, total, num_low_latency, count: vec![0; total as usize] }
    }

    /// Static UAR pages (one UAR per 4 KiB system page).
    pub fn static_pages(&self) -> u32 {
        self.total / NON_FP_BFREGS_PER_UAR
    }

    /// `alloc_bfreg` for a QP created without a bfreg or UAR index.
    pub fn alloc(&mut self) -> Bfreg {
        let n =
            if self.ver >= 2 { self.alloc_high().or_else(|| self.alloc_medium()) } else { None };
        let n = n.unwrap_or(0);
        self.count[n as usize] += 1;
        describe(n)
    }

    /// `mlx5_ib_free_bfreg`.
    pub fn free(&mut self, kernel_index: u32) {
        if let Some(c) = self.count.get_mut(kernel_index as usize) {
            *c = c.saturating_sub(1);
        }
    }

    fn num_medium(&self) -> u32 {
        // max_bfregs - low latency - the doorbell-only bfreg 0
        self.total.saturating_sub(self.num_low_latency).saturating_sub(1)
    }

    fn alloc_high(&self) -> Option<u32> {
        (self.num_medium() + 1..self.total).find(|&i| self.count[i as usize] == 0)
    }

    fn alloc_medium(&self) -> Option<u32> {
        if self.num_medium() == 0 {
            return None;
        }
        let mut min = 1;
        for i in 1..=self.num_medium() {
            if self.count[i as usize] < self.count[min as usize] {
                min = i;
            }
            if self.count[min as usize] == 0 {
                break;
            }
        }
        Some(min)
    }
}

/// Where kernel bfreg `n` is: `adjust_bfregn` for the user numbering, its UAR page and the
/// register's offset in it.
fn describe(n: u32) -> Bfreg {
    let k = n % NON_FP_BFREGS_PER_UAR;
    Bfreg {
        kernel_index: n,
        user_index: n / NON_FP_BFREGS_PER_UAR * BFREGS_PER_UAR + k,
        uar_page: n / NON_FP_BFREGS_PER_UAR,
        offset: BF_OFFSET as u32 + k * BF_REG_SIZE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdma_core_defaults_give_dedicated_then_shared_bfregs() {
        // total 16, 4 low-latency: high class 12..16, medium 1..12.
        let mut b = BfregInfo::new(2, 16, 4);
        let first = b.alloc();
        assert_eq!(
            (first.kernel_index, first.user_index, first.uar_page, first.offset),
            (12, 24, 6, 0x800)
        );
        assert_eq!(b.alloc().user_index, 25);
        assert_eq!(b.alloc().user_index, 28);
        assert_eq!(b.alloc().user_index, 29);
        let med = b.alloc();
        assert_eq!((med.kernel_index, med.user_index, med.offset), (1, 1, 0xa00));
        assert_eq!(b.alloc().kernel_index, 2);
        b.free(12);
        assert_eq!(b.alloc().kernel_index, 12);
    }

    #[test]
    fn version_0_shares_bfreg_0() {
        let mut b = BfregInfo::new(0, 16, 4);
        assert_eq!(b.alloc().user_index, 0);
        assert_eq!(b.alloc().user_index, 0);
    }
}
