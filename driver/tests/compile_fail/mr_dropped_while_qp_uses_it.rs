// Once an Mr's Sge was posted to a Qp, the Mr (and the buffer under it) cannot be dropped
// while the Qp is used afterwards: the device may still read or write that memory.
use ferrodat_driver::work_request::{Payload, RecvWr, SendOp, SendWr};
use ferrodat_driver::{Access, Cq, Pd, Qp, QpCaps, QpInit};

fn init(cq: &Cq) -> QpInit<'_> {
    QpInit {
        send_cq: cq,
        recv_cq: cq,
        srq: None,
        caps: QpCaps::default(),
        sq_sig_all: false,
        user_handle: None,
    }
}

fn after_post_send(pd: &Pd, cq: &Cq) {
    let mr = pd.alloc_mr(64, Access::LOCAL_WRITE).unwrap();
    let mut qp = Qp::new(pd, &init(cq)).unwrap();
    let sge = [mr.sge(0, 8).unwrap()];
    qp.post_send(&[SendWr::new(1, SendOp::Send, Payload::Sges(&sge))]).unwrap();
    drop(mr);
    qp.post_send(&[]).unwrap();
}

fn after_post_recv(pd: &Pd, cq: &Cq) {
    let mut buf = vec![0u8; 64];
    let mr = pd.reg_mr(&mut buf, Access::LOCAL_WRITE).unwrap();
    let mut qp = Qp::new(pd, &init(cq)).unwrap();
    let sge = [mr.sge(0, 64).unwrap()];
    qp.post_recv(&[RecvWr { wr_id: 1, sges: &sge }]).unwrap();
    drop(mr);
    qp.post_recv(&[]).unwrap();
}

fn main() {}
