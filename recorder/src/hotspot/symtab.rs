//! Statics of libjvm that `gHotSpotVMStructs` does not describe, from the library's full symbol
//! table (`.symtab`, not the exported `.dynsym`): the field offsets HotSpot computes at start-up
//! for the classes it knows (`jdk_internal_vm_StackChunk::_sp_offset`,
//! `java_lang_Thread::_tid_offset`, ...), the stack-chunk layout
//! (`InstanceStackChunkKlass::_offset_of_stack`) and stub addresses
//! (`StubRoutines::_cont_returnBarrier`). The builds of JDK 17, 21 and 25 on this project's
//! machines keep `.symtab`; a stripped build has none, and what needs these is off (said once
//! by the caller).
//!
//! The file is read once, off the signal handler. Its load bias is the address `dlsym` gives
//! `gHotSpotVMStructs` minus that symbol's value in the file, so a symbol's address here is
//! exactly the one the running libjvm uses. Values are read when asked (they are set while the
//! VM initializes: ask at VMInit or later), fault-safely.

use std::collections::HashMap;
use std::ffi::{c_void, CStr};

use object::{Object, ObjectSymbol};

use super::mem::{read_int, read_ptr};

/// The addresses of some of libjvm's statics.
#[derive(Debug, Default, Clone)]
pub struct JvmSymbols {
    addresses: HashMap<&'static str, u64>,
    /// The functions whose names contain a wanted part: (part, start, end) in this process.
    functions: Vec<(&'static str, u64, u64)>,
}

/// The file libjvm was loaded from and the address of `gHotSpotVMStructs` in this process.
fn libjvm() -> Result<(String, u64), String> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
    let at = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"gHotSpotVMStructs".as_ptr()) };
    if at.is_null() {
        return Err("libjvm exports no gHotSpotVMStructs".into());
    }
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `at` is an address inside a loaded object; `info` is a valid out-parameter.
    if unsafe { libc::dladdr(at as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return Err("dladdr does not know libjvm".into());
    }
    // SAFETY: dladdr filled `dli_fname` with the object's NUL-terminated path.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    Ok((path, at as u64))
}

impl JvmSymbols {
    /// Reads the addresses of `wanted` (mangled names) from the running libjvm's `.symtab`,
    /// and the address ranges of the functions whose mangled names contain one of
    /// `functions_containing` (every instance of a template). Names the table lacks are
    /// absent; an error if there is no table at all.
    pub fn read(
        wanted: &[&'static str],
        functions_containing: &[&'static str],
    ) -> Result<JvmSymbols, String> {
        let (path, anchor) = libjvm()?;
        let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        // SAFETY: the file is libjvm, mapped read-only by the loader too; nothing here writes
        // it, and a library file is not modified while the process runs it.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{path}: {e}"))?;
        let elf = object::File::parse(&*map).map_err(|e| format!("{path}: {e}"))?;
        let mut found: HashMap<&'static str, u64> = HashMap::new();
        let mut functions: Vec<(&'static str, u64, u64)> = Vec::new();
        let mut anchor_value = None;
        let mut any = false;
        for symbol in elf.symbols() {
            any = true;
            let Ok(name) = symbol.name() else {
                continue;
            };
            if name == "gHotSpotVMStructs" {
                anchor_value = Some(symbol.address());
            } else if let Some(&w) = wanted.iter().find(|&&w| w == name) {
                found.insert(w, symbol.address());
            }
            if symbol.kind() == object::SymbolKind::Text && symbol.size() > 0 {
                if let Some(&part) = functions_containing.iter().find(|&&p| name.contains(p)) {
                    functions.push((part, symbol.address(), symbol.size()));
                }
            }
        }
        if !any {
            return Err(format!("{path} has no symbol table (.symtab)"));
        }
        let bias = anchor
            .checked_sub(anchor_value.ok_or("gHotSpotVMStructs is not in .symtab")?)
            .ok_or("libjvm's load bias is negative")?;
        let addresses = found
            .into_iter()
            .filter_map(|(name, value)| Some((name, value.checked_add(bias)?)))
            .collect();
        let functions = functions
            .into_iter()
            .filter_map(|(part, value, size)| {
                let start = value.checked_add(bias)?;
                Some((part, start, start.checked_add(size)?))
            })
            .collect();
        Ok(JvmSymbols {
            addresses,
            functions,
        })
    }

    /// The address ranges `[start, end)` of the functions whose names contain `part` (one of
    /// the parts [`JvmSymbols::read`] was given).
    pub fn functions<'a>(&'a self, part: &'a str) -> impl Iterator<Item = (u64, u64)> + 'a {
        self.functions
            .iter()
            .filter(move |(p, _, _)| *p == part)
            .map(|&(_, start, end)| (start, end))
    }

    /// The address of static `name`, if the table has it.
    pub fn address(&self, name: &str) -> Option<u64> {
        self.addresses.get(name).copied()
    }

    /// The `int` stored at static `name`.
    pub fn int(&self, name: &str) -> Option<i32> {
        read_int(self.address(name)?, 4).map(|v| v as i32)
    }

    /// The pointer stored at static `name` (non-null).
    pub fn pointer(&self, name: &str) -> Option<u64> {
        read_ptr(self.address(name)?).filter(|&p| p != 0)
    }
}
