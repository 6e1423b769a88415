//! Building and running uverbs write() commands.
//!
//! A legacy command is `CmdHdr` + the core request (whose first u64 is the response
//! pointer, for commands with a response) + the mlx5 request ("udata"); `in_words` counts the
//! whole write in 4-byte words, `out_words` the response in 4-byte words. An extended
//! command is `CmdHdr` + `ExCmdHdr` + core + udata, sizes in 8-byte words without the
//! headers. The response buffer is lent to the kernel for the duration of the call and read
//! back with volatile loads (the kernel wrote it behind the compiler's back).

use crate::channel::Channel;
use crate::error::{Error, Result};
use ferrodat_abi::uverbs::{CMD_FLAG_EXTENDED, CmdHdr, ExCmdHdr};
use zerocopy::{FromBytes, IntoBytes};

const HDR: usize = size_of::<CmdHdr>();
const EX_HDR: usize = size_of::<ExCmdHdr>();

/// A response buffer lent to the device for one command.
struct RespBuf {
    words: Vec<u64>,
    len: usize,
}

impl RespBuf {
    fn new(len: usize) -> RespBuf {
        RespBuf { words: vec![0u64; len.div_ceil(8).max(1)], len }
    }

    fn addr(&mut self) -> u64 {
        self.words.as_mut_ptr() as u64
    }

    /// The bytes the device wrote, read with volatile loads.
    fn take(mut self) -> Vec<u8> {
        let p = self.words.as_mut_ptr() as *const u8;
        (0..self.len)
            // SAFETY: `p..p+len` lies inside `words` (len <= 8 * words.len()), which we own.
            .map(|i| unsafe { std::ptr::read_volatile(p.add(i)) })
            .collect()
    }
}

fn map_errno(ch: &Channel, name: &'static str, errno: i32) -> Error {
    let e = Error::errno(name, errno);
    // softhca pins nothing, so RLIMIT_MEMLOCK (the kernel's usual ENOMEM) is never the
    // cause there: its own tables are.
    if errno == libc::ENOMEM && ch.is_softhca() {
        return e.with_hint(softhca_enomem_hint(name));
    }
    e
}

/// What runs out on softhca when `name` fails with ENOMEM.
fn softhca_enomem_hint(name: &str) -> String {
    use ferrodat_softhca::fabric::layout::registry::{PENDING_SLOTS, QP_CAPACITY};
    if name == "CREATE_QP" {
        format!(
            "softhca holds at most {PENDING_SLOTS} QPs per process and {QP_CAPACITY} per HCA, \
             each with a ring file mapped from the fabric directory (RLIMIT_MEMLOCK does not \
             matter to it): destroy QPs this process (or the others on the HCA) no longer uses"
        )
    } else {
        "softhca is out of numbers or memory for this object (RLIMIT_MEMLOCK does not matter \
         to it): destroy objects no longer used"
            .to_string()
    }
}

/// Runs a legacy command `command` (`name` for errors). `core` is the core request; when
/// `resp_len > 0` its first 8 bytes are overwritten with the response buffer's address.
/// `udata` follows the core request. Returns the `resp_len` response bytes.
pub(crate) fn run(
    ch: &Channel,
    name: &'static str,
    command: u32,
    core: &[u8],
    udata: &[u8],
    resp_len: usize,
) -> Result<Vec<u8>> {
    let len = HDR + core.len() + udata.len();
    if !len.is_multiple_of(4) || len / 4 > usize::from(u16::MAX) || !resp_len.is_multiple_of(4) {
        return Err(Error::invalid(name, format!("command of {len} bytes is not encodable")));
    }
    if resp_len > 0 && core.len() < 8 {
        return Err(Error::invalid(name, "a command with a response needs a response field"));
    }
    let mut resp = RespBuf::new(resp_len);
    let hdr = CmdHdr { command, in_words: (len / 4) as u16, out_words: (resp_len / 4) as u16 };
    let mut buf = Vec::with_capacity(len);
    buf.extend_from_slice(hdr.as_bytes());
    buf.extend_from_slice(core);
    buf.extend_from_slice(udata);
    if resp_len > 0 {
        buf[HDR..HDR + 8].copy_from_slice(&resp.addr().to_ne_bytes());
    }
    ch.write_command(&buf).map_err(|e| map_errno(ch, name, e))?;
    Ok(resp.take())
}

/// Runs an extended command (`CMD_FLAG_EXTENDED | command`). `core` and `udata` must be
/// multiples of 8 bytes; the response is `core_resp` bytes of core response followed by
/// `driver_resp` bytes of driver response.
pub(crate) fn run_ex(
    ch: &Channel,
    name: &'static str,
    command: u32,
    core: &[u8],
    udata: &[u8],
    core_resp: usize,
    driver_resp: usize,
) -> Result<Vec<u8>> {
    if !core.len().is_multiple_of(8)
        || !udata.len().is_multiple_of(8)
        || !core_resp.is_multiple_of(8)
        || !driver_resp.is_multiple_of(8)
    {
        return Err(Error::invalid(name, "extended command parts must be multiples of 8 bytes"));
    }
    let mut resp = RespBuf::new(core_resp + driver_resp);
    let hdr = CmdHdr {
        command: CMD_FLAG_EXTENDED | command,
        in_words: (core.len() / 8) as u16,
        out_words: (core_resp / 8) as u16,
    };
    let ex = ExCmdHdr {
        response: if core_resp + driver_resp > 0 { resp.addr() } else { 0 },
        provider_in_words: (udata.len() / 8) as u16,
        provider_out_words: (driver_resp / 8) as u16,
        cmd_hdr_reserved: 0,
    };
    let mut buf = Vec::with_capacity(HDR + EX_HDR + core.len() + udata.len());
    buf.extend_from_slice(hdr.as_bytes());
    buf.extend_from_slice(ex.as_bytes());
    buf.extend_from_slice(core);
    buf.extend_from_slice(udata);
    ch.write_command(&buf).map_err(|e| map_errno(ch, name, e))?;
    Ok(resp.take())
}

/// Reads a `T` at `offset` of a response; a response too short is a driver bug reported as
/// an error, not a panic.
pub(crate) fn read<T: FromBytes>(name: &'static str, bytes: &[u8], offset: usize) -> Result<T> {
    bytes
        .get(offset..)
        .and_then(|b| T::read_from_prefix(b).ok())
        .map(|(v, _)| v)
        .ok_or_else(|| Error::invalid(name, "response shorter than expected"))
}
