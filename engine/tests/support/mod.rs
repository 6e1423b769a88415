//! What the engine's integration tests share.
#![allow(dead_code)]

/// Every test of this binary shares one private fabric directory (a child process of a
/// two-process test joins its parent's). softhca sweeps a dead process's entries, so a
/// leftover directory from an earlier run does not disturb the next one.
pub fn private_fabric() {
    ferrodat_softhca::fabric::use_private_fabric("engine-ia");
}

/// An IA on softhca0 (127.0.0.1) in the test binary's private fabric.
pub fn ia() -> ferrodat_engine::ia::Ia {
    private_fabric();
    let spec = ferrodat_engine::ia::IaSpec::parse("softhca0 1 127.0.0.1").unwrap();
    ferrodat_engine::ia::Ia::open("ferro0", &spec).unwrap()
}

/// A DAT error as (return type, subtype), to compare with the codes the man pages give.
pub fn code(e: &ferrodat_engine::error::DatError) -> (u32, u32) {
    (e.return_type(), e.subtype())
}

/// The pointer of a software event (panics on any other event).
pub fn software(ev: ferrodat_engine::event::Event) -> u64 {
    match ev {
        ferrodat_engine::event::Event::Software { pointer } => pointer,
        other => panic!("expected a software event, got {other:?}"),
    }
}

/// Five seconds in µs: every wait in these tests completes in milliseconds; the bound only
/// turns a hang into a failure.
pub const WAIT_US: u32 = 5_000_000;

/// One side of a connection in the tests: an IA with a PZ, an EP on its own EVDs
/// (requests, receives, connection events), an EVD for connection requests, and an 8 KiB
/// region every access right (atomics included) is granted on.
pub struct Side {
    pub ia: ferrodat_engine::ia::Ia,
    pub pz: ferrodat_engine::pz::Pz,
    pub ep: ferrodat_engine::ep::Ep,
    pub cr_evd: ferrodat_engine::evd::Evd,
    pub conn_evd: ferrodat_engine::evd::Evd,
    /// Also takes RMR bind completions.
    pub req_evd: ferrodat_engine::evd::Evd,
    pub recv_evd: ferrodat_engine::evd::Evd,
    pub buf: ferrodat_engine::lmr::Lmr,
}

impl Side {
    /// Another endpoint on this side's PZ and EVDs (requests, receives, connection events).
    pub fn another_ep(&self) -> ferrodat_engine::ep::Ep {
        ferrodat_engine::ep::Ep::create(
            &self.pz,
            &self.recv_evd,
            &self.req_evd,
            Some(&self.conn_evd),
            None,
        )
        .unwrap()
    }
}

/// A fresh [`Side`] on its own IA.
pub fn side() -> Side {
    use ferrodat_abi::dat::{evd_flags, mem_priv};
    use ferrodat_engine::{ep::Ep, evd::Evd, lmr::Lmr, lmr::MemPriv, pz::Pz};
    let ia = ia();
    let pz = Pz::create(&ia).unwrap();
    let cr_evd = Evd::create(&ia, 10, evd_flags::CR).unwrap();
    let conn_evd = Evd::create(&ia, 10, evd_flags::CONNECTION).unwrap();
    let req_evd = Evd::create(&ia, 64, evd_flags::DTO | evd_flags::RMR_BIND).unwrap();
    let recv_evd = Evd::create(&ia, 64, evd_flags::DTO).unwrap();
    let ep = Ep::create(&pz, &recv_evd, &req_evd, Some(&conn_evd), None).unwrap();
    let buf = Lmr::alloc(&pz, 8192, MemPriv(mem_priv::ALL | mem_priv::IB_REMOTE_ATOMIC)).unwrap();
    Side { ia, pz, ep, cr_evd, conn_evd, req_evd, recv_evd, buf }
}

/// A server and a client, the client's endpoint connected to the server's through a PSP
/// on `port` (each test its own port); both saw ESTABLISHED.
pub fn connected(port: u16) -> (Side, Side, ferrodat_engine::sp::Psp) {
    use ferrodat_abi::dat::event;
    use ferrodat_engine::event::Event;
    let server = side();
    let client = side();
    let psp = ferrodat_engine::sp::Psp::create(&server.ia, port, &server.cr_evd).unwrap();
    client.ep.connect(server.ia.attr().address, port, None, b"").unwrap();
    let Event::ConnectionRequest { cr, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    cr.accept(Some(&server.ep), b"").unwrap();
    for s in [&client, &server] {
        match s.conn_evd.wait(WAIT_US, 1).unwrap().0 {
            Event::Connection { number: event::CONNECTION_EVENT_ESTABLISHED, .. } => {}
            other => panic!("expected ESTABLISHED, got {other:?}"),
        }
    }
    (server, client, psp)
}

/// CPU time this process has used so far (user + system): for checks that a thread sleeps
/// rather than spins.
pub fn cpu_time() -> std::time::Duration {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let ru = unsafe {
        let mut ru = std::mem::zeroed::<libc::rusage>();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut ru), 0);
        ru
    };
    let tv = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The DTO completion `ev` must be.
pub fn dto(ev: ferrodat_engine::event::Event) -> ferrodat_engine::dto::DtoCompletion {
    match ev {
        ferrodat_engine::event::Event::Dto { completion, .. } => completion,
        other => panic!("expected a DTO completion, got {other:?}"),
    }
}

/// The connection event `ev` must be: its number and private data.
pub fn connection(ev: ferrodat_engine::event::Event) -> (u32, Vec<u8>) {
    match ev {
        ferrodat_engine::event::Event::Connection { number, private_data, .. } => {
            (number, private_data)
        }
        other => panic!("expected a connection event, got {other:?}"),
    }
}
