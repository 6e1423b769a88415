//! What each kind of handle holds: the engine object and what the C side needs beside it
//! (the handles it was made from, for the query calls, and storage that pointers handed to
//! the consumer point into).

use crate::sockaddr::SockStorage;
use ferrodat_abi::dat::{self as abi, HandleType, handle_type};
use ferrodat_engine::cno::Cno;
use ferrodat_engine::ep::Ep;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::ia::Ia;
use ferrodat_engine::lmr::Lmr;
use ferrodat_engine::pz::Pz;
use ferrodat_engine::rmr::Rmr;
use ferrodat_engine::sp::{Cr, Psp, Rsp};
use ferrodat_engine::srq::Srq;
use std::ffi::CString;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

/// The object behind a handle.
pub(crate) enum Body {
    Ia(IaBody),
    Pz(PzBody),
    Lmr(LmrBody),
    Rmr(RmrBody),
    Evd(EvdBody),
    Cno(CnoBody),
    Ep(EpBody),
    Psp(PspBody),
    Rsp(RspBody),
    Cr(CrBody),
    Srq(SrqBody),
}

impl Body {
    /// Its `DAT_HANDLE_TYPE_*`.
    pub fn kind(&self) -> HandleType {
        match self {
            Body::Ia(_) => handle_type::IA,
            Body::Pz(_) => handle_type::PZ,
            Body::Lmr(_) => handle_type::LMR,
            Body::Rmr(_) => handle_type::RMR,
            Body::Evd(_) => handle_type::EVD,
            Body::Cno(_) => handle_type::CNO,
            Body::Ep(_) => handle_type::EP,
            Body::Psp(_) => handle_type::PSP,
            Body::Rsp(_) => handle_type::RSP,
            Body::Cr(_) => handle_type::CR,
            Body::Srq(_) => handle_type::SRQ,
        }
    }
}

/// A `DAT_NAMED_ATTR` array and the strings it points to.
pub(crate) struct NamedAttrs {
    _strings: Vec<(CString, CString)>,
    pub attrs: Vec<abi::NamedAttr>,
}

impl NamedAttrs {
    pub fn new(pairs: &[(String, String)]) -> NamedAttrs {
        let strings: Vec<(CString, CString)> =
            pairs.iter().map(|(n, v)| (c_string(n), c_string(v))).collect();
        let attrs = strings
            .iter()
            .map(|(n, v)| abi::NamedAttr { name: n.as_ptr(), value: v.as_ptr() })
            .collect();
        NamedAttrs { _strings: strings, attrs }
    }

    /// The array pointer as `DAT_IA_ATTR`/`DAT_PROVIDER_ATTR` carry it (NULL when empty).
    pub fn as_ptr(&self) -> *mut abi::NamedAttr {
        if self.attrs.is_empty() { std::ptr::null_mut() } else { self.attrs.as_ptr().cast_mut() }
    }

    pub fn len(&self) -> abi::Count {
        self.attrs.len() as abi::Count
    }
}

/// A C string of `s` (an interior NUL, which no attribute has, ends it early).
pub(crate) fn c_string(s: &str) -> CString {
    let bytes: Vec<u8> = s.bytes().take_while(|b| *b != 0).collect();
    CString::new(bytes).unwrap_or_default()
}

pub(crate) struct IaBody {
    pub ia: Ia,
    /// `ia_address_ptr` points here.
    pub address: SockStorage,
    pub transport_attr: NamedAttrs,
    pub vendor_attr: NamedAttrs,
    pub provider_attr: NamedAttrs,
    /// The async EVD's handle (0: none).
    pub async_evd: AtomicUsize,
    /// A `dat_ia_close` passed its checks and is closing the IA: a second one racing it
    /// finds the handle invalid, as it would a moment later.
    pub closing: std::sync::atomic::AtomicBool,
}

pub(crate) struct PzBody {
    /// Taken by `dat_pz_free` (with no other reference to the object left).
    pub pz: Option<Pz>,
}

impl PzBody {
    pub fn pz(&self) -> &Pz {
        self.pz.as_ref().expect("a registered PZ handle holds its PZ")
    }
}

pub(crate) struct LmrBody {
    /// Taken by `dat_lmr_free` (put back if the engine refuses: an RMR is bound in it).
    pub lmr: Option<Lmr>,
    pub pz: usize,
    pub mem_type: abi::MemType,
    /// The address, or for DAT_MEM_TYPE_LMR the LMR handle, the consumer described the
    /// region with.
    pub region: u64,
    /// DAT_MEM_TYPE_SHARED_VIRTUAL: a copy of the consumer's shared memory id, which
    /// dat_lmr_query points to.
    pub shared_id: Option<Box<[libc::c_char; abi::LMR_COOKIE_SIZE]>>,
    pub length: u64,
    pub privileges: abi::MemPrivFlags,
    pub va_type: abi::VaType,
}

impl LmrBody {
    pub fn lmr(&self) -> &Lmr {
        self.lmr.as_ref().expect("a registered LMR handle holds its LMR")
    }

    /// The region as the consumer described it at create, for `dat_lmr_query`.
    pub fn region_description(&self) -> abi::RegionDescription {
        match (self.mem_type, &self.shared_id) {
            (abi::mem_type::LMR, _) => {
                abi::RegionDescription { for_lmr_handle: self.region as abi::LmrHandle }
            }
            (abi::mem_type::SHARED_VIRTUAL, Some(id)) => abi::RegionDescription {
                for_shared_memory: abi::SharedMemory {
                    virtual_address: self.region as *mut libc::c_void,
                    // The consumer may read the id through it, never write: DAT_LMR_PARAM
                    // is the provider's answer.
                    shared_memory_id: (&**id as *const [libc::c_char; abi::LMR_COOKIE_SIZE])
                        .cast_mut(),
                },
            },
            _ => abi::RegionDescription { for_va: self.region as *mut libc::c_void },
        }
    }
}

pub(crate) struct RmrBody {
    /// Taken by `dat_rmr_free`.
    pub rmr: Option<Rmr>,
    /// The PZ handle it was created in.
    pub pz: usize,
}

impl RmrBody {
    pub fn rmr(&self) -> &Rmr {
        self.rmr.as_ref().expect("a registered RMR handle holds its RMR")
    }
}

pub(crate) struct EvdBody {
    /// Taken by `dat_evd_free`.
    pub evd: Option<Evd>,
    /// The CNO handle it reports to (0: none).
    pub cno: AtomicUsize,
}

impl EvdBody {
    pub fn evd(&self) -> &Evd {
        self.evd.as_ref().expect("a registered EVD handle holds its EVD")
    }
}

pub(crate) struct CnoBody {
    pub cno: Cno,
}

/// The handles an endpoint is wired to (0: NULL); `dat_ep_modify` may change all four.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EpWiring {
    pub pz: usize,
    pub recv_evd: usize,
    pub request_evd: usize,
    pub connect_evd: usize,
}

impl EpWiring {
    /// One of its EVDs is `evd`.
    pub fn uses_evd(&self, evd: usize) -> bool {
        [self.recv_evd, self.request_evd, self.connect_evd].contains(&evd)
    }
}

pub(crate) struct EpBody {
    pub ep: Ep,
    /// What `dat_ep_query` reports and what the frees of PZs and EVDs look for; changed only
    /// by a `dat_ep_modify` the engine accepted (under `modifying`).
    pub wiring: Mutex<EpWiring>,
    /// Held through a `dat_ep_modify`: the engine's change and the new handles above go
    /// together.
    pub modifying: Mutex<()>,
    pub srq: usize,
    /// The private data of the last connection event that carried any (its
    /// `private_data` points here, and stays valid through the events after it).
    pub private_data: Mutex<Vec<u8>>,
    /// `dat_ep_query`'s remote address points here.
    pub remote: Mutex<SockStorage>,
}

impl EpBody {
    /// The body of a new endpoint handle for `ep`, wired to `wiring` (and SRQ handle `srq`,
    /// 0 for none).
    pub fn new(ep: Ep, wiring: EpWiring, srq: usize) -> EpBody {
        EpBody {
            ep,
            wiring: Mutex::new(wiring),
            modifying: Mutex::new(()),
            srq,
            private_data: Mutex::new(Vec::new()),
            remote: Mutex::new(SockStorage::default()),
        }
    }

    /// The handles it is wired to now.
    pub fn wiring(&self) -> EpWiring {
        *self.wiring.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) struct PspBody {
    pub psp: Psp,
    pub evd: usize,
    pub flags: abi::PspFlags,
}

pub(crate) struct RspBody {
    /// Taken by `dat_rsp_free`.
    pub rsp: Option<Rsp>,
    pub ep: usize,
    pub evd: usize,
}

pub(crate) struct CrBody {
    pub cr: Cr,
    /// The requester's address (`remote_ia_address_ptr` points here).
    pub remote: SockStorage,
    pub remote_port: u64,
    /// The request's private data (`private_data` points here).
    pub private_data: Vec<u8>,
    /// The endpoint the request came with (0: none): an RSP's, or one the provider made
    /// for a PSP with `DAT_PSP_PROVIDER_FLAG` (`provider_ep`).
    pub ep: usize,
    /// `ep` is the provider's: a reject hands it back, and its handle goes.
    pub provider_ep: bool,
}

pub(crate) struct SrqBody {
    pub srq: Srq,
    pub pz: usize,
}
