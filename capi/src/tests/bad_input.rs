//! Bad input found by sweeping the entry points with bad arguments (`sweep`): each test
//! pins down one call that used to accept what it must refuse, or refuse it with the wrong
//! class of error.

use super::err;
use super::wired::{connect_to, cookie, ok, side, wait};
use crate::{ep, ia, mem};
use ferrodat_abi::dat::{self as abi, close_flags, dto_status, event, ret, subtype};

/// A request segment of 2 GiB or more (DAT_LMR_TRIPLET's 32-bit length allows up to 4 GiB)
/// is refused with DAT_LENGTH_ERROR. mlx5 writes a data segment's byte count as is and
/// reads one with its top bit set as inline data, so such a segment went out as an empty
/// inline message: a SEND or RDMA WRITE of an IOV far outside its 4 KiB LMR completed
/// with DAT_DTO_SUCCESS, having sent nothing.
#[test]
fn a_request_segment_of_2_gib_or_more_is_refused_not_sent_empty() {
    // SAFETY (every call below): valid handles and output pointers; the triplets name more
    // memory than the LMR has, which the provider must refuse before anything reads it.
    unsafe {
        let server = side("unit-bad-2gib-server");
        let client = side("unit-bad-2gib-client");
        connect_to(&server, client.ep, &mut []);
        assert_eq!(wait(client.conn).event_number, event::CONNECTION_EVENT_ESTABLISHED);
        let mut t = [server.iov(0, 4096)];
        ok(ep::ep_post_recv(server.ep, 1, t.as_mut_ptr(), cookie(1), 0));
        let mut lp = std::mem::zeroed::<abi::LmrParam>();
        ok(mem::lmr_query(server.lmr, 0, &mut lp));
        let remote = abi::RmrTriplet {
            virtual_address: server.buf.as_ptr() as u64,
            segment_length: 64,
            rmr_context: lp.rmr_context,
        };
        let too_long = err(ret::LENGTH_ERROR, subtype::NO_SUBTYPE);
        let b = client.buf.as_ptr() as u64;
        let seg = |len| abi::LmrTriplet {
            virtual_address: b,
            segment_length: len,
            lmr_context: client.lctx,
        };
        for len in [0x8000_0000, 0x8000_0008, u32::MAX] {
            for n in [1, 2] {
                let mut iov = vec![seg(len); n];
                let (c, p) = (cookie(2), iov.as_mut_ptr());
                let n = n as abi::Count;
                let what = format!("{n} segment(s) of {len:#x}");
                assert_eq!(ep::ep_post_send(client.ep, n, p, c, 0), too_long, "send, {what}");
                let r = ep::ep_post_rdma_write(client.ep, n, p, c, &remote, 0);
                assert_eq!(r, too_long, "RDMA write, {what}");
                let r = ep::ep_post_rdma_read(client.ep, n, p, c, &remote, 0);
                assert_eq!(r, too_long, "RDMA read, {what}");
            }
        }
        // Nothing went out, and the endpoint is still good: a real send arrives.
        let mut one = [client.iov(0, 8)];
        ok(ep::ep_post_send(client.ep, 1, one.as_mut_ptr(), cookie(3), 0));
        let d = wait(client.req).event_data.dto_completion_event_data;
        assert_eq!((d.status, d.user_cookie.as_64), (dto_status::SUCCESS, 3));
        let d = wait(server.recv).event_data.dto_completion_event_data;
        assert_eq!((d.status, d.transfered_length), (dto_status::SUCCESS, 8));
        ok(ia::ia_close(client.ia, close_flags::ABRUPT));
        ok(ia::ia_close(server.ia, close_flags::ABRUPT));
    }
}

/// An EVD of the wrong kind is refused by dat_ep_create as OFA's dapl_ep_create and
/// ferrodat's own dat_ep_modify refuse it, each with its argument's subtype: a DTO EVD
/// needs DAT_EVD_DTO_FLAG, the connection EVD DAT_EVD_CONNECTION_FLAG. A DTO-only EVD was
/// taken as the connection EVD, and a CR EVD as the receive EVD was reported as a bad
/// request EVD.
#[test]
fn ep_create_refuses_an_evd_of_the_wrong_kind_naming_its_argument() {
    use crate::evd;
    use ferrodat_abi::dat::evd_flags;
    use std::ptr::{null, null_mut};
    let (ia_h, _) = super::open("unit-bad-evd-kind");
    // SAFETY (every call below): live handles of this test and valid output pointers.
    unsafe {
        let (mut pz, mut dto, mut conn, mut cr) = (null_mut(), null_mut(), null_mut(), null_mut());
        ok(mem::pz_create(ia_h, &mut pz));
        ok(evd::evd_create(ia_h, 8, null_mut(), evd_flags::DTO, &mut dto));
        ok(evd::evd_create(ia_h, 8, null_mut(), evd_flags::CONNECTION, &mut conn));
        ok(evd::evd_create(ia_h, 8, null_mut(), evd_flags::CR, &mut cr));
        let bad = |s| err(ret::INVALID_HANDLE, s);
        let mut h = null_mut();
        for (recv, req, con, want) in [
            (cr, dto, conn, bad(subtype::INVALID_HANDLE_EVD_RECV)),
            (conn, dto, conn, bad(subtype::INVALID_HANDLE_EVD_RECV)),
            (dto, cr, conn, bad(subtype::INVALID_HANDLE_EVD_REQUEST)),
            (dto, dto, dto, bad(subtype::INVALID_HANDLE_EVD_CONN)),
            (dto, dto, cr, bad(subtype::INVALID_HANDLE_EVD_CONN)),
        ] {
            let r = ep::ep_create(ia_h, pz, recv, req, con, null(), &mut h);
            assert_eq!(r, want, "{recv:?} {req:?} {con:?}");
            assert!(h.is_null(), "no endpoint made");
        }
        let mut attr = abi::SrqAttr { max_recv_dtos: 8, max_recv_iov: 1, low_watermark: 0 };
        let mut srq = null_mut();
        ok(crate::srq::srq_create(ia_h, pz, &mut attr, &mut srq));
        let r = ep::ep_create_with_srq(ia_h, pz, dto, dto, dto, srq, null(), &mut h);
        assert_eq!(r, bad(subtype::INVALID_HANDLE_EVD_CONN));
        // The right kinds, and NULLs, still make an endpoint.
        ok(ep::ep_create(ia_h, pz, dto, dto, conn, null(), &mut h));
        ok(ep::ep_free(h));
        ok(ep::ep_create(ia_h, pz, null_mut(), null_mut(), null_mut(), null(), &mut h));
        ok(ep::ep_free(h));
        ok(ia::ia_close(ia_h, close_flags::ABRUPT));
    }
}

/// dat_lmr_create with a region no process can have — a length that runs past the end of
/// the address space, or memory that is not mapped — is DAT_INVALID_PARAMETER naming the
/// length (argument 4) or the region (argument 3), not DAT_INSUFFICIENT_RESOURCES as if
/// the device had run out of something; a va_type that is no DAT_VA_TYPE is
/// DAT_INVALID_PARAMETER/ARG7, not DAT_MODEL_NOT_SUPPORTED with "zero-based addressing
/// is not supported" (still the answer for DAT_VA_TYPE_ZB).
#[test]
fn lmr_create_calls_an_impossible_region_or_va_type_a_bad_parameter() {
    use ferrodat_abi::dat::{mem_priv, mem_type, va_type};
    use std::ptr::null_mut;
    let (ia_h, _) = super::open("unit-bad-lmr");
    // SAFETY (every call below): a live IA and PZ, valid output pointers; the regions that
    // are not this test's memory are refused before anything could touch them.
    unsafe {
        let mut pz = null_mut();
        ok(mem::pz_create(ia_h, &mut pz));
        let mut buf = vec![0u8; 8192];
        let create = |va: *mut u8, len: u64, vt: abi::VaType| {
            let mut h = null_mut();
            let region = abi::RegionDescription { for_va: va.cast() };
            let r = mem::lmr_create(
                ia_h,
                mem_type::VIRTUAL,
                region,
                len,
                pz,
                mem_priv::ALL,
                vt,
                &mut h,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut(),
            );
            if r == ret::SUCCESS {
                ok(mem::lmr_free(h));
            }
            r
        };
        let b = buf.as_mut_ptr();
        let arg = |n| err(ret::INVALID_PARAMETER, subtype::INVALID_ARG1 + n - 1);
        for len in [u64::MAX, u64::MAX - 4095, 1 << 63] {
            assert_eq!(create(b, len, va_type::VA), arg(4), "length {len:#x}");
        }
        let top = 0xffff_ffff_ffff_f000usize as *mut u8;
        assert_eq!(create(top, 8192, va_type::VA), arg(4), "past the end of the address space");
        // Not readable: a page below any mapping, and one of ours mapped PROT_NONE. (Not a
        // page unmapped again: another test's thread could map something there meanwhile.)
        let page = libc::mmap(
            null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(page, libc::MAP_FAILED);
        for va in [0x1000 as *mut u8, page.cast()] {
            assert_eq!(create(va, 4096, va_type::VA), arg(3), "{va:p} is not mapped");
        }
        assert_eq!(libc::munmap(page, 4096), 0);
        assert_eq!(create(b, 64, 77), arg(7), "no such va_type");
        assert_eq!(create(b, 64, va_type::ZB), ret::CLASS_ERROR | ret::MODEL_NOT_SUPPORTED);
        assert_eq!(create(b, 8192, va_type::VA), ret::SUCCESS);
        ok(ia::ia_close(ia_h, close_flags::ABRUPT));
        drop(buf);
    }
}

/// Private data longer than max_private_data_size is refused before a byte of it is read,
/// naming the size argument. dat_cr_reject copied all `pd_size` bytes before the length
/// check: 4096 bytes claimed at the end of a page followed by an inaccessible one crashed
/// the consumer with SIGSEGV inside the provider.
#[test]
fn private_data_longer_than_the_maximum_is_refused_unread() {
    use super::wired::Side;
    use crate::sockaddr::SockStorage;
    use crate::sp;
    use ferrodat_abi::dat::psp_flags;
    use std::ptr::null_mut;
    // SAFETY (every call below): valid handles and output pointers; `last` is 16 readable
    // bytes before a PROT_NONE page, and the longer sizes claimed for it are refused unread.
    unsafe {
        let guarded = super::before_a_guard_page(16);
        let last = guarded.ptr.cast::<libc::c_void>();
        let server: Side = side("unit-bad-pd-server");
        let client: Side = side("unit-bad-pd-client");
        let (mut q, mut psp) = (0, null_mut());
        ok(sp::psp_create_any(server.ia, &mut q, server.cr, psp_flags::CONSUMER, &mut psp));
        let to = SockStorage::new(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
        let arg = |n| err(ret::INVALID_PARAMETER, subtype::INVALID_ARG1 + n - 1);
        for size in [257, 4096, abi::Count::MAX] {
            let r = ep::ep_connect(client.ep, to.as_ptr(), q, 5_000_000, size, last, 0, 0);
            assert_eq!(r, arg(5), "dat_ep_connect, {size} bytes");
        }
        ok(ep::ep_connect(client.ep, to.as_ptr(), q, 5_000_000, 16, last, 0, 0));
        let ev = wait(server.cr);
        assert_eq!(ev.event_number, event::CONNECTION_REQUEST_EVENT);
        let cr = ev.event_data.cr_arrival_event_data.cr_handle;
        for size in [257, 4096, abi::Count::MAX] {
            assert_eq!(sp::cr_reject(cr, size, last), arg(2), "dat_cr_reject, {size} bytes");
            let r = sp::cr_accept(cr, server.ep, size, last);
            assert_eq!(r, arg(3), "dat_cr_accept, {size} bytes");
        }
        // The request is still undecided: the refused calls changed nothing.
        ok(sp::cr_reject(cr, 16, last));
        let ev = wait(client.conn);
        assert_eq!(ev.event_number, event::CONNECTION_EVENT_PEER_REJECTED);
        assert_eq!(ev.event_data.connect_event_data.private_data_size, 16);
        ok(ia::ia_close(client.ia, close_flags::ABRUPT));
        ok(ia::ia_close(server.ia, close_flags::ABRUPT));
    }
}

/// An SRQ that could hold no receive (max_recv_dtos or max_recv_iov 0) or a negative low
/// watermark is DAT_INVALID_PARAMETER naming the attributes (argument 3), as an EVD of qlen
/// 0 is; the first was DAT_INSUFFICIENT_RESOURCES, the second taken silently.
#[test]
fn srq_create_refuses_attributes_no_srq_can_have() {
    use crate::srq;
    use std::ptr::null_mut;
    let (ia_h, _) = super::open("unit-bad-srq");
    // SAFETY (every call below): live handles and valid pointers.
    unsafe {
        let mut pz = null_mut();
        ok(mem::pz_create(ia_h, &mut pz));
        let bad = err(ret::INVALID_PARAMETER, subtype::INVALID_ARG3);
        let cases = [(0, 1, 0), (8, 0, 0), (0, 0, 0), (8, 1, -1), (8, 1, i32::MIN), (8, 1, 4)];
        for (dtos, iov, lw) in cases {
            let mut a = abi::SrqAttr { max_recv_dtos: dtos, max_recv_iov: iov, low_watermark: lw };
            let mut h = null_mut();
            let r = srq::srq_create(ia_h, pz, &mut a, &mut h);
            assert_eq!(r, bad, "max_recv_dtos {dtos}, max_recv_iov {iov}, low_watermark {lw}");
            assert!(h.is_null());
        }
        let mut a = abi::SrqAttr { max_recv_dtos: 8, max_recv_iov: 1, low_watermark: 0 };
        let mut h = null_mut();
        ok(srq::srq_create(ia_h, pz, &mut a, &mut h));
        ok(srq::srq_free(h));
        ok(ia::ia_close(ia_h, close_flags::ABRUPT));
    }
}
