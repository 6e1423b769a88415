//! Which process an in-process softhca object belongs to.
//!
//! softhca keeps a device's state in the memory of the process that opened it. A child
//! forked from that process gets a copy of all of it, but the QPNs, instance slot, rings and
//! exported regions the copy names are shared files of the fabric, which the parent goes on
//! using. So the copy neither acts on them nor gives them back: as with the kernel's device
//! file, which a child inherits too, the objects stay the parent's until the parent closes
//! it. The child opens a device of its own to do RDMA.

/// The process an object was made in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwningProcess(u32);

impl OwningProcess {
    /// The calling process.
    pub fn current() -> OwningProcess {
        OwningProcess(std::process::id())
    }

    /// Its pid.
    pub fn pid(self) -> u32 {
        self.0
    }

    /// False in a child forked from the owner, which holds only a copy.
    pub fn is_current(self) -> bool {
        self.0 == std::process::id()
    }
}
