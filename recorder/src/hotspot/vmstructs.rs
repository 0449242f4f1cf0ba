//! HotSpot's own descriptions of its structures: libjvm exports `gHotSpotVMStructs`, an array
//! of (type name, field name, type string, is static, offset, address) entries, and the offsets
//! of those members inside an entry (`gHotSpotVMStructEntry*Offset`, `...ArrayStride`). The
//! serviceability agent reads the same table. Fields are looked up by name, so one build of the
//! agent works from JDK 17 to 25 without hard-coded offsets; a field the running JVM does not
//! describe is simply absent, and what needs it is off.

use std::collections::HashMap;
use std::ffi::{c_char, CStr};

/// One field: its offset inside the type, or its address for a static field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Byte offset in an instance.
    Offset(u64),
    /// Address of a static field.
    Address(u64),
}

/// The fields HotSpot describes, by (type, field) name.
#[derive(Debug, Default, Clone)]
pub struct VmStructs {
    fields: HashMap<(String, String), Field>,
}

fn symbol(name: &CStr) -> Option<u64> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; libjvm is loaded with
    // RTLD_GLOBAL by the launcher, so its exports are visible.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p as u64)
}

/// Reads a `u64` of libjvm's data at `addr`: an exported symbol (from dlsym) or a static field
/// the JVM's table describes. Either stays mapped while the JVM runs.
fn read_exported(addr: u64) -> u64 {
    // SAFETY: `addr` is the address of an 8-byte libjvm variable: an exported symbol or a
    // static field described by the table (see the callers), in libjvm's mapped data.
    unsafe { std::ptr::read_unaligned(addr as *const u64) }
}

fn c_string(addr: u64) -> Option<String> {
    if addr == 0 {
        return None;
    }
    // SAFETY: a non-null `const char*` of the VMStructs table: static NUL-terminated strings
    // in libjvm.
    Some(
        unsafe { CStr::from_ptr(addr as *const c_char) }
            .to_string_lossy()
            .into_owned(),
    )
}

impl VmStructs {
    /// Reads the table of the JVM this agent runs in; `None` if libjvm does not export it.
    pub fn read() -> Option<VmStructs> {
        let table = read_exported(symbol(c"gHotSpotVMStructs")?);
        let offset = |name: &CStr| symbol(name).map(read_exported);
        let type_name = offset(c"gHotSpotVMStructEntryTypeNameOffset")?;
        let field_name = offset(c"gHotSpotVMStructEntryFieldNameOffset")?;
        let is_static = offset(c"gHotSpotVMStructEntryIsStaticOffset")?;
        let offset_of = offset(c"gHotSpotVMStructEntryOffsetOffset")?;
        let address = offset(c"gHotSpotVMStructEntryAddressOffset")?;
        let stride = offset(c"gHotSpotVMStructEntryArrayStride")?;
        if table == 0 || stride == 0 {
            return None;
        }
        let mut fields = HashMap::new();
        // The table ends with an entry whose type name is null; a bound in case it does not.
        for i in 0..100_000u64 {
            let entry = table + i * stride;
            let Some(ty) = c_string(read_exported(entry + type_name)) else {
                break;
            };
            let Some(name) = c_string(read_exported(entry + field_name)) else {
                continue;
            };
            // SAFETY: `isStatic` is an int32 member of the entry.
            let stat = unsafe { std::ptr::read_unaligned((entry + is_static) as *const i32) };
            let field = if stat != 0 {
                Field::Address(read_exported(entry + address))
            } else {
                Field::Offset(read_exported(entry + offset_of))
            };
            fields.insert((ty, name), field);
        }
        Some(VmStructs { fields })
    }

    /// A table made of `entries`, for tests.
    pub fn from_entries(entries: &[(&str, &str, Field)]) -> VmStructs {
        VmStructs {
            fields: entries
                .iter()
                .map(|(t, f, v)| ((t.to_string(), f.to_string()), *v))
                .collect(),
        }
    }

    /// The value of the 8-byte static field `ty::field` (a pointer or a size), read now.
    pub fn static_u64(&self, ty: &str, field: &str) -> Option<u64> {
        match self.fields.get(&(ty.to_string(), field.to_string()))? {
            Field::Address(address) if *address != 0 && address % 8 == 0 => {
                Some(read_exported(*address))
            }
            _ => None,
        }
    }

    /// The offset of instance field `ty::field`.
    pub fn offset(&self, ty: &str, field: &str) -> Option<u64> {
        match self.fields.get(&(ty.to_string(), field.to_string()))? {
            Field::Offset(o) => Some(*o),
            Field::Address(_) => None,
        }
    }

    /// The offset of `field` in the first of `types` that describes it (a field moved from
    /// `JavaThread` to `Thread` between releases is found in either).
    pub fn offset_in_any(&self, types: &[&str], field: &str) -> Option<u64> {
        types.iter().find_map(|t| self.offset(t, field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_found_by_name_in_any_listed_type() {
        let v = VmStructs::from_entries(&[
            ("Thread", "_osthread", Field::Offset(0x48)),
            ("OSThread", "_thread_id", Field::Offset(0x10)),
            ("Universe", "_heap", Field::Address(0x1234)),
        ]);
        assert_eq!(v.offset("Thread", "_osthread"), Some(0x48));
        assert_eq!(
            v.offset_in_any(&["JavaThread", "Thread"], "_osthread"),
            Some(0x48)
        );
        assert_eq!(v.offset("Universe", "_heap"), None, "static");
        assert_eq!(v.offset("Thread", "_missing"), None);
        assert!(VmStructs::read().is_none(), "no libjvm in a test process");
    }
}
