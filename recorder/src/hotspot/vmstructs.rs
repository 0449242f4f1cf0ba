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
    /// The declared C++ type of each field (`int`, `u2`, `address`, ...).
    field_types: HashMap<(String, String), String>,
    /// Sizes of the types HotSpot describes (`gHotSpotVMTypes`).
    type_sizes: HashMap<String, u64>,
    /// The integer constants HotSpot describes (`gHotSpotVMIntConstants`: enum values such as
    /// the thread states).
    int_constants: HashMap<String, i32>,
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
        let type_string = offset(c"gHotSpotVMStructEntryTypeStringOffset")?;
        let stride = offset(c"gHotSpotVMStructEntryArrayStride")?;
        if table == 0 || stride == 0 {
            return None;
        }
        let mut fields = HashMap::new();
        let mut field_types = HashMap::new();
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
            if let Some(declared) = c_string(read_exported(entry + type_string)) {
                field_types.insert((ty.clone(), name.clone()), declared);
            }
            fields.insert((ty, name), field);
        }
        Some(VmStructs {
            fields,
            field_types,
            type_sizes: Self::read_type_sizes().unwrap_or_default(),
            int_constants: Self::read_int_constants().unwrap_or_default(),
        })
    }

    /// `gHotSpotVMIntConstants`: (name, value) of every integer constant HotSpot describes.
    fn read_int_constants() -> Option<HashMap<String, i32>> {
        let table = read_exported(symbol(c"gHotSpotVMIntConstants")?);
        let offset = |name: &CStr| symbol(name).map(read_exported);
        let name_at = offset(c"gHotSpotVMIntConstantEntryNameOffset")?;
        let value_at = offset(c"gHotSpotVMIntConstantEntryValueOffset")?;
        let stride = offset(c"gHotSpotVMIntConstantEntryArrayStride")?;
        if table == 0 || stride == 0 {
            return None;
        }
        let mut constants = HashMap::new();
        for i in 0..100_000u64 {
            let entry = table + i * stride;
            let Some(name) = c_string(read_exported(entry + name_at)) else {
                break;
            };
            // SAFETY: `value` is an int32 member of the entry.
            let value = unsafe { std::ptr::read_unaligned((entry + value_at) as *const i32) };
            constants.insert(name, value);
        }
        Some(constants)
    }

    /// The integer constant `name` (`_thread_in_Java`, ...).
    pub fn int_constant(&self, name: &str) -> Option<i32> {
        self.int_constants.get(name).copied()
    }

    /// `gHotSpotVMTypes`: (type name, size) of every type HotSpot describes.
    fn read_type_sizes() -> Option<HashMap<String, u64>> {
        let table = read_exported(symbol(c"gHotSpotVMTypes")?);
        let offset = |name: &CStr| symbol(name).map(read_exported);
        let type_name = offset(c"gHotSpotVMTypeEntryTypeNameOffset")?;
        let size = offset(c"gHotSpotVMTypeEntrySizeOffset")?;
        let stride = offset(c"gHotSpotVMTypeEntryArrayStride")?;
        if table == 0 || stride == 0 {
            return None;
        }
        let mut sizes = HashMap::new();
        for i in 0..100_000u64 {
            let entry = table + i * stride;
            let Some(ty) = c_string(read_exported(entry + type_name)) else {
                break;
            };
            sizes.insert(ty, read_exported(entry + size));
        }
        Some(sizes)
    }

    /// A table made of `entries`, for tests.
    pub fn from_entries(entries: &[(&str, &str, Field)]) -> VmStructs {
        VmStructs {
            fields: entries
                .iter()
                .map(|(t, f, v)| ((t.to_string(), f.to_string()), *v))
                .collect(),
            ..VmStructs::default()
        }
    }

    /// The same table with declared field types and type sizes, for tests.
    pub fn with_types(mut self, fields: &[(&str, &str, &str)], sizes: &[(&str, u64)]) -> Self {
        for (t, f, declared) in fields {
            self.field_types
                .insert((t.to_string(), f.to_string()), declared.to_string());
        }
        for (t, size) in sizes {
            self.type_sizes.insert(t.to_string(), *size);
        }
        self
    }

    /// The size of type `ty`, if HotSpot describes it.
    pub fn type_size(&self, ty: &str) -> Option<u64> {
        self.type_sizes.get(ty).copied()
    }

    /// The offset and width in bytes (1, 2, 4 or 8) of the integer or pointer field
    /// `ty::field`, from its declared type (a pointer type is 8 bytes).
    pub fn sized_offset(&self, ty: &str, field: &str) -> Option<(u64, u8)> {
        let offset = self.offset(ty, field)?;
        let declared = self.field_types.get(&(ty.to_string(), field.to_string()))?;
        let size = if declared.ends_with('*') || declared == "address" {
            8
        } else {
            let plain = declared.trim_start_matches("volatile ").trim();
            self.type_size(plain)?
        };
        matches!(size, 1 | 2 | 4 | 8).then_some((offset, size as u8))
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

    /// The value of the 4-byte static field `ty::field` (an int), read now.
    pub fn static_u32(&self, ty: &str, field: &str) -> Option<u32> {
        match self.fields.get(&(ty.to_string(), field.to_string()))? {
            Field::Address(address) if *address != 0 && address % 4 == 0 => {
                // SAFETY: the address of a 4-byte static field described by the table, in
                // libjvm's mapped data.
                Some(unsafe { std::ptr::read_unaligned(*address as *const u32) })
            }
            _ => None,
        }
    }

    /// The address of the static field `ty::field`.
    pub fn static_address(&self, ty: &str, field: &str) -> Option<u64> {
        match self.fields.get(&(ty.to_string(), field.to_string()))? {
            Field::Address(address) if *address != 0 => Some(*address),
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
