//! A loaded library's import slots (GOT entries): where it finds a function of another library,
//! found through its dynamic relocations, and the one store that points a slot elsewhere
//! ([`super::load_hook`]).

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::os::read_own_memory;

const DT_NULL: u64 = 0;
const DT_PLTRELSZ: u64 = 2;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_JMPREL: u64 = 23;
const PT_DYNAMIC: u32 = 2;

// The relocation types that fill an import slot with a function's address.
use crate::arch::SLOT_RELOCATIONS;

/// A loaded object: its load bias and its dynamic section's address.
struct Object {
    bias: u64,
    dynamic: u64,
}

/// The loaded object whose name ends with `suffix`.
fn find_object(suffix: &str) -> Option<Object> {
    struct Search<'a> {
        suffix: &'a str,
        found: Option<Object>,
    }
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of the callback, and
        // `data` is the `Search` passed below.
        let (info, search) = unsafe { (&*info, &mut *data.cast::<Search<'_>>()) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        // SAFETY: the object's name, NUL-terminated, valid during the callback.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) };
        if !name.to_string_lossy().ends_with(search.suffix) {
            return 0;
        }
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
            let phdr = unsafe { &*info.dlpi_phdr.add(i) };
            if phdr.p_type == PT_DYNAMIC {
                search.found = Some(Object {
                    bias: info.dlpi_addr,
                    dynamic: info.dlpi_addr.wrapping_add(phdr.p_vaddr),
                });
                return 1;
            }
        }
        0
    }
    let mut search = Search {
        suffix,
        found: None,
    };
    // SAFETY: `each` matches the callback type and writes only through `data`, which points at
    // `search` for the whole call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut search as *mut Search<'_>).cast()) };
    search.found
}

fn read_u64(address: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    read_own_memory(address, &mut b).ok()?;
    Some(u64::from_ne_bytes(b))
}

/// The addresses of the import slots through which the object named `...suffix` calls
/// `symbol` (a PLT slot, and a GOT slot for calls that bypass the PLT), at least one.
pub fn import_slots(suffix: &str, symbol: &str) -> Result<Vec<u64>, String> {
    let object = find_object(suffix).ok_or_else(|| format!("no loaded object {suffix}"))?;
    // An address the loader relocated in place, or one still relative to the object.
    let absolute = |v: u64| if v >= object.bias { v } else { object.bias + v };
    let (mut symtab, mut strtab) = (0, 0);
    let mut tables: Vec<(u64, u64)> = Vec::new();
    let (mut jmprel, mut pltrelsz, mut rela, mut relasz) = (0, 0, 0, 0);
    for i in 0..4096u64 {
        let entry = object.dynamic + i * 16;
        let (Some(tag), Some(value)) = (read_u64(entry), read_u64(entry + 8)) else {
            return Err("cannot read its dynamic section".into());
        };
        match tag {
            DT_NULL => break,
            DT_SYMTAB => symtab = absolute(value),
            DT_STRTAB => strtab = absolute(value),
            DT_JMPREL => jmprel = absolute(value),
            DT_PLTRELSZ => pltrelsz = value,
            DT_RELA => rela = absolute(value),
            DT_RELASZ => relasz = value,
            _ => {}
        }
    }
    tables.push((jmprel, pltrelsz));
    tables.push((rela, relasz));
    if symtab == 0 || strtab == 0 {
        return Err("no dynamic symbol table".into());
    }
    let mut slots = Vec::new();
    for (start, size) in tables.into_iter().filter(|&(s, n)| s != 0 && n != 0) {
        let mut relocations = vec![0u8; size.min(64 << 20) as usize];
        read_own_memory(start, &mut relocations).map_err(|e| e.to_string())?;
        for r in relocations.chunks_exact(24) {
            let offset = u64::from_ne_bytes(r[..8].try_into().unwrap_or_default());
            let info = u64::from_ne_bytes(r[8..16].try_into().unwrap_or_default());
            let (index, kind) = (info >> 32, (info & 0xffff_ffff) as u32);
            if !SLOT_RELOCATIONS.contains(&kind) || index == 0 {
                continue;
            }
            let mut sym = [0u8; 24];
            if read_own_memory(symtab + index * 24, &mut sym).is_err() {
                continue;
            }
            let name_at = u64::from(u32::from_ne_bytes(sym[..4].try_into().unwrap_or_default()));
            let mut name = vec![0u8; symbol.len() + 1];
            if read_own_memory(strtab + name_at, &mut name).is_ok()
                && name[..symbol.len()] == *symbol.as_bytes()
                && name[symbol.len()] == 0
            {
                slots.push(object.bias + offset);
            }
        }
    }
    slots.sort_unstable();
    slots.dedup();
    if slots.is_empty() {
        return Err(format!("it does not import {symbol}"));
    }
    Ok(slots)
}

/// The value in the slot at `slot`.
pub fn read_slot(slot: u64) -> Option<usize> {
    read_u64(slot).map(|v| v as usize)
}

/// The protection of the page at `address`, from `/proc/self/maps`.
fn protection(address: u64) -> Option<c_int> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            u64::from_str_radix(start, 16).ok()?,
            u64::from_str_radix(end, 16).ok()?,
        );
        (start <= address && address < end).then(|| {
            let perms = fields.next().unwrap_or("").as_bytes();
            let bit = |i: usize, c: u8, p: c_int| if perms.get(i) == Some(&c) { p } else { 0 };
            bit(0, b'r', libc::PROT_READ)
                | bit(1, b'w', libc::PROT_WRITE)
                | bit(2, b'x', libc::PROT_EXEC)
        })
    })
}

/// Stores `value` into the import slot at `slot` (from [`import_slots`]) with one aligned
/// 8-byte store, making its page writable for that store only when it is read-only (RELRO).
pub fn write_slot(slot: u64, value: usize) -> Result<(), String> {
    if slot % 8 != 0 {
        return Err("the slot is not aligned".into());
    }
    let original = protection(slot).ok_or("the slot is not mapped")?;
    // SAFETY: sysconf has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let page = (slot & !(page_size - 1)) as *mut c_void;
    let writable = original & libc::PROT_WRITE != 0;
    if !writable {
        // SAFETY: `page` is the mapped page holding the slot; it gains write permission only.
        if unsafe { libc::mprotect(page, page_size as usize, original | libc::PROT_WRITE) } != 0 {
            return Err(format!(
                "cannot make the slot writable: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    // SAFETY: `slot` is an aligned, mapped, now writable 8-byte import slot of a loaded object;
    // the loader and callers read it as one pointer, so one atomic store replaces it whole.
    unsafe { (*(slot as *const AtomicUsize)).store(value, Ordering::SeqCst) };
    // SAFETY: as above; the page gets its protection back.
    if !writable && unsafe { libc::mprotect(page, page_size as usize, original) } != 0 {
        return Err(format!(
            "the slot was written, but its page could not be made read-only again: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn not_getpid() -> libc::pid_t {
        4242
    }

    /// A library that calls `getpid` through its import slot: once the slot is pointed
    /// elsewhere, its calls go there; its page keeps its protection.
    #[test]
    fn an_import_slot_found_and_pointed_elsewhere() {
        let dir = std::env::temp_dir().join(format!("jfrnative-got-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lib = crate::test_lib::build(
            &dir,
            "libgotcase.so",
            "#include <unistd.h>\nint gotcase_pid(void) { return getpid(); }\n",
            &["-O2", "-Wl,-z,relro,-z,now"],
        );
        let handle = crate::test_lib::load(&lib);
        // SAFETY: dlsym of the function of the library loaded above, called with its C
        // signature.
        let call = unsafe {
            let f = libc::dlsym(handle, c"gotcase_pid".as_ptr());
            assert!(!f.is_null());
            std::mem::transmute::<*mut c_void, extern "C" fn() -> libc::pid_t>(f)
        };
        assert_eq!(call(), std::process::id() as libc::pid_t);
        let slots = import_slots("/libgotcase.so", "getpid").unwrap();
        assert_eq!(slots.len(), 1, "{slots:x?}");
        let slot = slots[0];
        let before = protection(slot).unwrap();
        assert_eq!(
            before & libc::PROT_WRITE,
            0,
            "RELRO: read-only after loading"
        );
        write_slot(slot, not_getpid as *const () as usize).unwrap();
        assert_eq!(call(), 4242);
        assert_eq!(protection(slot), Some(before));
        assert!(import_slots("/libgotcase.so", "no_such_import").is_err());
        assert!(import_slots("/libnot-loaded.so", "getpid").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
