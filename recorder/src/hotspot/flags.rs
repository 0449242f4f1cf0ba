//! The running JVM's boolean flags (`-XX:+UseZGC`, `UseCompressedOops`, ...), read from its own
//! flag table (`JVMFlag::flags`, `JVMFlag::numFlags`, described by `gHotSpotVMStructs`), off
//! the signal handler. They say how object fields are laid out (compressed or full-width
//! references, compact headers) and which collector runs.

use super::mem::{read_c_string, read_ptr, read_u8};
use super::vmstructs::VmStructs;

/// Most flags looked at (a bound on a table that could be misread).
const MAX_FLAGS: u64 = 8192;
/// Longest flag name compared.
const MAX_NAME: u64 = 64;

/// The value of boolean flag `name`, if the JVM has it.
pub fn bool_flag(v: &VmStructs, name: &str) -> Option<bool> {
    read_u8(flag_entry(v, name)?.0).map(|b| b != 0)
}

/// Whether flag `name` has its default value's origin (not set on the command line, in a flags
/// file or by management): `JVMFlag::_flags`' value-origin bits (the low four, `DEFAULT` = 0, in
/// JDK 11 to 25). `None` if the JVM does not describe them.
pub fn flag_is_default(v: &VmStructs, name: &str) -> Option<bool> {
    let (_, entry) = flag_entry(v, name)?;
    let flags = super::mem::read_uint(entry.checked_add(v.offset("JVMFlag", "_flags")?)?, 4)?;
    Some(flags & 0xf == 0)
}

/// Flag `name`'s value address and its `JVMFlag` entry.
fn flag_entry(v: &VmStructs, name: &str) -> Option<(u64, u64)> {
    let table = v.static_u64("JVMFlag", "flags")?;
    let count = v.static_u64("JVMFlag", "numFlags")?.min(MAX_FLAGS);
    let size = v.type_size("JVMFlag")?;
    let name_offset = v.offset("JVMFlag", "_name")?;
    let addr_offset = v.offset("JVMFlag", "_addr")?;
    for i in 0..count {
        let flag = table.checked_add(i.checked_mul(size)?)?;
        let Some(text) =
            read_ptr(flag.checked_add(name_offset)?).and_then(|a| read_c_string(a, MAX_NAME))
        else {
            continue;
        };
        if text == name {
            let value = read_ptr(flag.checked_add(addr_offset)?).filter(|&a| a != 0)?;
            return Some((value, flag));
        }
    }
    None
}
