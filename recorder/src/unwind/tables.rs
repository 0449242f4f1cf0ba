//! Unwind tables for the loaded libraries: each library's table is built once, from the file
//! that is mapped (checked by inode) or, for the vDSO, from its image in memory, and kept while
//! the library stays loaded. Off the handler (the writer thread, or a Java thread about to call
//! a new native method: see [`super::watcher`]); the code map hands the tables to the handler.

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::sync::Arc;
use std::time::Instant;

use super::build::{build, Built};
use super::image;
use super::rule::Table;
use crate::unwind::codemap::Library;

/// What building the tables cost, for the summary.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TableStats {
    /// Libraries with a table.
    pub libraries: usize,
    /// Libraries without one (no CFI, file unreadable and not rebuilt from memory).
    pub without: usize,
    /// Libraries whose table was built from memory (the vDSO, and libraries whose file is
    /// gone or replaced, from their rebuilt image).
    pub from_memory: usize,
    /// Heap bytes of the tables in use.
    pub bytes: usize,
    /// Rows in the tables in use.
    pub rows: usize,
    /// CPU time spent building tables, in total (ns, of the threads that built them).
    pub build_cpu_ns: u64,
}

/// A library's identity: the same path (deleted since or not), inode and device, mapped over
/// the same addresses, is the same file (tables are kept across recordings: a library
/// replaced in between differs in one of them, barring an inode reused for a file of the very
/// same mapped size at the very same address).
type Key = (String, u64, u64, u64, u64);

/// The tables of the libraries seen so far.
#[derive(Debug, Default)]
pub struct Tables {
    built: HashMap<Key, Option<Arc<Table>>>,
    /// The keys of the tables built from memory.
    from_memory: std::collections::HashSet<Key>,
    problems: Vec<String>,
    build_cpu_ns: u64,
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096).max(4096)
}

/// The vDSO's image, copied out of memory (it has no file).
pub(crate) fn vdso_image(lib: &Library) -> Vec<u8> {
    let len = lib.top.saturating_sub(lib.base) as usize;
    // SAFETY: `[base, top)` is the vDSO as listed in /proc/self/maps: mapped readable for the
    // life of the process (the kernel never unmaps it).
    unsafe { std::slice::from_raw_parts(lib.base as *const u8, len) }.to_vec()
}

/// `lib`'s path without the kernel's " (deleted)": a mapping whose file is deleted while it is
/// mapped (a jar's library deleted at exit) is the same library as before.
pub fn file_path(lib: &Library) -> &str {
    lib.path.strip_suffix(" (deleted)").unwrap_or(&lib.path)
}

/// Whether `lib`'s file is gone (the kernel's " (deleted)" on its path).
pub fn is_deleted(lib: &Library) -> bool {
    lib.path.ends_with(" (deleted)")
}

/// `lib`'s file, rebuilt from this process's memory ([`image`]): for a library whose file is
/// gone or was replaced since it was loaded.
pub fn rebuilt_image(lib: &Library) -> Result<image::Rebuilt, String> {
    if lib.file_offset != 0 {
        return Err("its lowest mapping is not the start of its file".into());
    }
    // The file's loaded bytes cannot exceed what is mapped (plus a page of slack per segment).
    let bound = lib.top.saturating_sub(lib.base).saturating_add(1 << 20);
    image::rebuild(lib.base, page_size(), bound, &|address, buf| {
        crate::os::read_own_memory(address, buf)
    })
}

/// Where a table was built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    File,
    Memory,
}

/// The file `lib` maps, open: the one the load hook held from its `dlopen` on (a file deleted
/// since stays readable), else the file at its path if it is still the one mapped (same inode);
/// `None` when it is gone or replaced.
pub fn mapped_file(lib: &Library) -> Option<std::fs::File> {
    if let Some(file) = super::load_hook::held_file(lib.inode) {
        return Some(file);
    }
    if is_deleted(lib) {
        return None;
    }
    // Non-blocking: a FIFO planted at the path must not hold the writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&lib.path)
        .ok()?;
    let metadata = file.metadata().ok()?;
    // By inode alone: on overlayfs (containers) before Linux 6.8 the map names the backing
    // device and `stat` the overlay's.
    (metadata.ino() == lib.inode && metadata.is_file()).then_some(file)
}

/// Builds `lib`'s table from its file, from memory for the vDSO, and from its rebuilt image
/// when the file is gone or replaced and was not held: a deleted file is never a reason to
/// walk by frame pointers.
fn build_for(lib: &Library, page_size: u64) -> Result<(Built, Source), String> {
    if lib.path == "[vdso]" {
        return Ok((
            build(&vdso_image(lib), lib.base, 0, page_size)?,
            Source::Memory,
        ));
    }
    let Some(file) = mapped_file(lib) else {
        let rebuilt =
            rebuilt_image(lib).map_err(|e| format!("its file is gone; from memory: {e}"))?;
        return Ok((
            build(&rebuilt.bytes, lib.base, 0, page_size)?,
            Source::Memory,
        ));
    };
    // SAFETY: the file is mapped read-only and private; it is the library the process has
    // mapped (same inode), which the loader also maps and nothing in this process writes.
    // A file truncated underneath would fault here as it would in the loader.
    let data = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
    Ok((
        build(&data, lib.base, lib.file_offset, page_size)?,
        Source::File,
    ))
}

impl Tables {
    /// These tables for a new recording: its build time counts from zero, and a library whose
    /// table could not be built is tried again.
    pub fn for_new_recording(mut self) -> Tables {
        self.build_cpu_ns = 0;
        self.built.retain(|_, table| table.is_some());
        self
    }

    /// The table of every library in `libraries` (in the same order; `None` where there is
    /// none), building the new ones; tables of libraries no longer loaded are forgotten (freed
    /// once no published code map holds them).
    pub fn for_libraries(&mut self, libraries: &[Library]) -> Vec<Option<Arc<Table>>> {
        let page_size = page_size();
        let keys: Vec<Key> = libraries
            .iter()
            .map(|l| (file_path(l).to_string(), l.inode, l.dev, l.base, l.top))
            .collect();
        self.built.retain(|k, _| keys.contains(k));
        self.from_memory.retain(|k| keys.contains(k));
        libraries
            .iter()
            .zip(keys)
            .map(|(lib, key)| {
                if let Some(table) = self.built.get(&key) {
                    return table.clone();
                }
                let start = crate::os::thread_cpu_ns();
                let table = match build_for(lib, page_size) {
                    Ok((built, source)) => {
                        if source == Source::Memory {
                            self.from_memory.insert(key.clone());
                        }
                        Some(Arc::new(built.table))
                    }
                    Err(e) => {
                        self.problems.push(format!("{}: {e}", lib.path));
                        None
                    }
                };
                let spent = crate::os::thread_cpu_ns().saturating_sub(start);
                self.build_cpu_ns = self.build_cpu_ns.saturating_add(spent as u64);
                self.built.insert(key, table.clone());
                table
            })
            .collect()
    }

    /// What the tables in use cost.
    pub fn stats(&self) -> TableStats {
        let with: Vec<&Arc<Table>> = self.built.values().flatten().collect();
        TableStats {
            libraries: with.len(),
            without: self.built.len() - with.len(),
            from_memory: self.from_memory.len(),
            bytes: with.iter().map(|t| t.heap_bytes()).sum(),
            rows: with.iter().map(|t| t.len()).sum(),
            build_cpu_ns: self.build_cpu_ns,
        }
    }

    /// Libraries that got no table, and why (taken: each is reported once).
    pub fn take_problems(&mut self) -> Vec<String> {
        std::mem::take(&mut self.problems)
    }
}

/// Builds `lib`'s table, timing it (for the benchmark and tests).
pub fn build_timed(lib: &Library) -> Result<(Built, std::time::Duration), String> {
    let start = Instant::now();
    let (built, _) = build_for(lib, page_size())?;
    Ok((built, start.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unwind::codemap::CodeMap;
    use crate::unwind::rule::Kind;

    fn library(name: &str) -> Library {
        let map = CodeMap::read_self().unwrap();
        map.libraries
            .iter()
            .find(|l| l.path.contains(name))
            .unwrap_or_else(|| panic!("no {name} in {:?}", map.libraries))
            .clone()
    }

    /// The runtime address of libc's `name`.
    fn libc_function(name: &std::ffi::CStr) -> u64 {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        assert!(!p.is_null(), "{name:?}");
        p as u64
    }

    #[test]
    fn libc_table_describes_function_entries_and_the_signal_trampoline() {
        let libc_lib = library("/libc.so");
        let (built, _) = build_timed(&libc_lib).unwrap();
        assert!(built.eh_frame_fdes > 1000, "{} FDEs", built.eh_frame_fdes);
        // At a function's first instruction the return address is at rsp: CFA = rsp + 8.
        for name in [c"getpid", c"qsort", c"malloc", c"memcpy"] {
            let rule = built.table.rule(libc_function(name));
            assert_eq!((rule.kind(), rule.cfa_offset()), (Kind::Rsp, 8), "{name:?}");
        }
        // The restorer glibc gives every handler (`__restore_rt`): a signal frame, found at
        // the return address - 1 as the walk looks it up.
        // SAFETY: querying and setting a handler for a real-time signal nothing else uses in
        // this test process, with valid sigaction structs.
        let restorer = unsafe {
            extern "C" fn nothing(_: i32) {}
            let signal = libc::SIGRTMAX() - 1;
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = nothing as *const () as usize;
            assert_eq!(libc::sigaction(signal, &action, std::ptr::null_mut()), 0);
            let mut installed: libc::sigaction = std::mem::zeroed();
            assert_eq!(libc::sigaction(signal, std::ptr::null(), &mut installed), 0);
            installed.sa_restorer.map(|f| f as usize as u64).unwrap()
        };
        assert_eq!(built.table.rule(restorer - 1).kind(), Kind::Signal);
    }

    #[test]
    fn vdso_table_is_read_from_memory() {
        let vdso = library("[vdso]");
        let (built, _) = build_timed(&vdso).unwrap();
        assert!(built.eh_frame_fdes >= 1, "{} FDEs", built.eh_frame_fdes);
        assert!(!built.table.is_empty());
    }

    #[test]
    fn tables_are_built_once_and_forgotten_with_their_library() {
        let libs = [library("/libc.so"), library("[vdso]")];
        let mut tables = Tables::default();
        let first = tables.for_libraries(&libs);
        assert!(first.iter().all(Option::is_some));
        let again = tables.for_libraries(&libs);
        assert!(Arc::ptr_eq(
            first[0].as_ref().unwrap(),
            again[0].as_ref().unwrap()
        ));
        assert_eq!(tables.stats().libraries, 2);
        // Its file deleted while it stays mapped (a jar's library at exit): the same table.
        let deleted_since = Library {
            path: format!("{} (deleted)", libs[0].path),
            ..libs[0].clone()
        };
        let same = tables.for_libraries(&[deleted_since, libs[1].clone()]);
        assert!(Arc::ptr_eq(
            first[0].as_ref().unwrap(),
            same[0].as_ref().unwrap()
        ));
        tables.for_libraries(&libs[1..]);
        assert_eq!(tables.stats().libraries, 1);
        // A file replaced since it was loaded: the table comes from the image in memory.
        let replaced = Library {
            inode: libs[0].inode + 1,
            ..libs[0].clone()
        };
        let rebuilt = tables.for_libraries(&[replaced]);
        assert!(rebuilt[0].is_some(), "{:?}", tables.take_problems());
        assert_eq!(tables.stats().from_memory, 1);
        // Neither a file nor an ELF image in memory: no table, and one problem said.
        let nothing = [0u8; 4096];
        let gone = Library {
            path: "/nonexistent/libgone.so".into(),
            base: nothing.as_ptr() as u64,
            top: nothing.as_ptr() as u64 + 4096,
            file_offset: 0,
            inode: 1,
            dev: 0,
        };
        assert!(tables.for_libraries(&[gone])[0].is_none());
        assert_eq!(tables.take_problems().len(), 1);
    }
}
