//! What the agent reads from HotSpot's own structures, described by the JVM itself
//! ([`vmstructs`]): the OS thread id and the stack of each `JavaThread`, so that threads that
//! ran before an attach are matched by thread id, not by name, and sampled within their real
//! stack bounds ([`threads`]); the code cache's reserved range, so that JIT code is known as such
//! however it is mapped ([`codecache`]). Every read of a JVM structure goes through [`crate::fault`]: a
//! thread that exits meanwhile gives "unknown", never a crash.

pub mod codecache;
pub mod threads;
pub mod vmstructs;

use std::sync::OnceLock;

use vmstructs::VmStructs;

static VM_STRUCTS: OnceLock<Option<VmStructs>> = OnceLock::new();

/// The running JVM's structure table, read once; `None` if libjvm does not export it.
pub fn vm_structs() -> Option<&'static VmStructs> {
    VM_STRUCTS.get_or_init(VmStructs::read).as_ref()
}
