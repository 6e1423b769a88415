//! Decoding receive WQEs: the scatter lists of the receive queue and of SRQs.
//!
//! A receive queue entry is `1 << wqe_shift` bytes of data segments; fewer segments than
//! fit are ended by one whose lkey is `MLX5_INVALID_LKEY`. An SRQ entry starts with a
//! 16-byte next segment that links the free list the driver maintains; the HCA follows it.
//! A QP created with `MLX5_QP_FLAG_SIGNATURE` also starts its RQ entries with a 16-byte
//! signature segment, which the HCA skips here.

use super::send_wqe::Sge;
use ferrodat_abi::mlx5::{INVALID_LKEY, SEND_WQE_DS, WqeDataSeg, WqeSrqNextSeg};
use zerocopy::FromBytes;

/// The scatter list of one receive entry (`bytes` = the whole stride), after any leading
/// segment of `skip` bytes.
pub fn scatter_list(bytes: &[u8], skip: usize) -> impl Iterator<Item = Sge> + '_ {
    bytes
        .get(skip..)
        .unwrap_or(&[])
        .chunks_exact(SEND_WQE_DS)
        .map(|seg| WqeDataSeg::read_from_bytes(seg).expect("chunks are 16 bytes"))
        .take_while(|seg| seg.lkey.get() != INVALID_LKEY)
        .map(|seg| Sge { addr: seg.addr.get(), length: seg.byte_count.get(), lkey: seg.lkey.get() })
}

/// The free-list link of an SRQ entry: the index of the entry after it.
pub fn srq_next_index(bytes: &[u8]) -> Option<u16> {
    let seg = WqeSrqNextSeg::read_from_bytes(bytes.get(..SEND_WQE_DS)?).ok()?;
    Some(seg.next_wqe_index.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;
    use zerocopy::byteorder::big_endian::{U16, U32, U64};

    fn seg(len: u32, lkey: u32, addr: u64) -> WqeDataSeg {
        WqeDataSeg { byte_count: U32::new(len), lkey: U32::new(lkey), addr: U64::new(addr) }
    }

    #[test]
    fn stops_at_the_terminator_or_the_stride_end() {
        let mut b = Vec::new();
        b.extend_from_slice(seg(100, 7, 0x1000).as_bytes());
        b.extend_from_slice(seg(0, INVALID_LKEY, 0).as_bytes());
        b.extend_from_slice(seg(5, 7, 0x2000).as_bytes());
        b.extend_from_slice(seg(5, 7, 0x3000).as_bytes());
        let s: Vec<_> = scatter_list(&b, 0).collect();
        assert_eq!(s, vec![Sge { addr: 0x1000, length: 100, lkey: 7 }]);
        let full: Vec<_> = scatter_list(&b[32..], 0).collect();
        assert_eq!(full.len(), 2, "a full stride needs no terminator");
        assert_eq!(scatter_list(&b, 16).count(), 0, "skipping lands on the terminator");
    }

    #[test]
    fn srq_link() {
        let next = WqeSrqNextSeg { next_wqe_index: U16::new(5), ..Default::default() };
        assert_eq!(srq_next_index(next.as_bytes()), Some(5));
        assert_eq!(srq_next_index(&[0u8; 4]), None);
    }
}
