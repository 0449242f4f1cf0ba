//! Holds each library the JVM loads open from the moment it is loaded, so that its file can be
//! read whole (symbol tables, DWARF) even when the code that loaded it deletes it right after
//! (a jar's loader: unpack to `/tmp`, `System.load`, delete).
//!
//! How: the JVM loads every JNI library through `dlopen`, called from `libjvm.so` (`System.load`
//! → `JVM_LoadLibrary` → `os::dll_load`). [`install`] points `libjvm.so`'s import of `dlopen`
//! (its GOT slot, found through its dynamic relocations) at `hooked_dlopen`, as async-profiler
//! does. That calls the real `dlopen` and, when it succeeds, opens the file it was given
//! (read-only) and keeps the descriptor: the caller deletes the file only after `dlopen`
//! returns, and a deleted file stays readable through an open descriptor. The code map's
//! readers ([`held_file`]) find the file by device and inode.
//!
//! Why it is safe:
//! - nothing runs in the signal handler: the hook runs on the thread that loads the library;
//! - no deadlock under the dynamic loader's lock: the hook opens the file after the real
//!   `dlopen` has returned (and released that lock), and takes only `HELD`'s lock, which
//!   neither a signal handler nor the loader ever takes;
//! - the slot is written with one aligned 8-byte store (a concurrent call sees the old or the
//!   new function), its page made writable for that store only and given back its exact
//!   protection from `/proc/self/maps`;
//! - a panic in the hook is caught; errno is kept; a failed `dlopen` is passed back untouched;
//! - at most [`MAX_HELD`] descriptors are held, the oldest closed first.
//!
//! What it changes: the loader sees the hook, not `libjvm.so`, as `dlopen`'s caller, which
//! matters only for a relative name searched through the caller's `RUNPATH`; the JVM passes
//! absolute paths.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::os;
use crate::unwind::got;

/// Most files held open.
pub const MAX_HELD: usize = 64;

type Dlopen = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void;

/// The real `dlopen` (set before the hook is installed).
static REAL_DLOPEN: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Libraries loaded since the hook was installed: (inode, the open file). By inode alone: the
/// code map's device differs from `stat`'s on overlayfs before Linux 6.8.
static HELD: Mutex<VecDeque<(u64, File)>> = Mutex::new(VecDeque::new());
/// Libraries the hook held (for the summary).
pub static LOADS_HELD: AtomicUsize = AtomicUsize::new(0);

/// `dlopen`, as `libjvm.so` now calls it: the real one, then the file held open.
unsafe extern "C" fn hooked_dlopen(filename: *const c_char, flags: c_int) -> *mut c_void {
    let real = REAL_DLOPEN.load(Ordering::Acquire);
    // SAFETY: REAL_DLOPEN holds libc's `dlopen` (set in `install` before the slot pointed
    // here), whose signature `Dlopen` is.
    let real: Dlopen = unsafe { std::mem::transmute::<usize, Dlopen>(real) };
    // SAFETY: the caller's arguments, passed on as they are.
    let handle = unsafe { real(filename, flags) };
    if !handle.is_null() && !filename.is_null() {
        let _errno = os::ErrnoGuard::save();
        // SAFETY: `filename` is the NUL-terminated path the caller gave `dlopen`, which just
        // opened it.
        let path = unsafe { CStr::from_ptr(filename) };
        let _ = std::panic::catch_unwind(|| hold(path));
    }
    handle
}

/// Opens `path` (an absolute path of a library just loaded) and keeps it.
fn hold(path: &CStr) {
    let Ok(path) = path.to_str() else {
        return;
    };
    if !path.starts_with('/') {
        return;
    }
    // Non-blocking: a FIFO planted at the path must not hold the loading thread.
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    else {
        return;
    };
    let Ok(metadata) = file.metadata() else {
        return;
    };
    if !metadata.is_file() {
        return;
    }
    if let Ok(mut held) = HELD.lock() {
        let new = !held.iter().any(|(ino, _)| *ino == metadata.ino());
        held.retain(|(ino, _)| *ino != metadata.ino());
        while held.len() >= MAX_HELD {
            held.pop_front();
        }
        held.push_back((metadata.ino(), file));
        if new {
            LOADS_HELD.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The file the hook held for the library of inode `inode`, if any (a new descriptor of it).
pub fn held_file(inode: u64) -> Option<File> {
    let held = HELD.lock().ok()?;
    held.iter()
        .find(|(i, _)| *i == inode)
        .and_then(|(_, f)| f.try_clone().ok())
}

/// Whether the hook is in place.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// Whether `address` lies in the loaded object named `...suffix` (`dladdr`).
fn in_object(address: usize, suffix: &str) -> bool {
    // SAFETY: dladdr only reads the loader's tables and writes into `info`.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `address` is only looked up, never dereferenced.
    let found = unsafe { libc::dladdr(address as *const c_void, &mut info) } != 0;
    // SAFETY: dli_fname, when set, is the object's NUL-terminated name, valid while loaded.
    found
        && !info.dli_fname.is_null()
        && unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .ends_with(suffix)
}

/// Points `libjvm.so`'s `dlopen` import at the hook (once per process). The error says why not.
pub fn install() -> Result<(), String> {
    if INSTALLED.load(Ordering::Acquire) {
        return Ok(());
    }
    let slots = got::import_slots("/libjvm.so", "dlopen")?;
    let hook = hooked_dlopen as Dlopen as usize;
    // Chained to what the slot holds when that is another agent's hook (async-profiler patches
    // the same import), else libc's dlopen (also when the slot still points at libjvm's own
    // PLT: lazy binding not done yet).
    let previous = slots.iter().find_map(|&s| got::read_slot(s)).unwrap_or(0);
    let real = if previous != 0 && previous != hook && !in_object(previous, "/libjvm.so") {
        previous
    } else {
        libc::dlopen as Dlopen as usize
    };
    REAL_DLOPEN.store(real, Ordering::Release);
    for slot in slots {
        got::write_slot(slot, hook)?;
    }
    INSTALLED.store(true, Ordering::Release);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hook on a dlopen of its own: the library, deleted after loading, is still readable
    /// whole through the held file.
    #[test]
    fn a_library_deleted_after_loading_is_held_whole() {
        let dir = std::env::temp_dir().join(format!("jfrnative-hold-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lib = crate::test_lib::build(
            &dir,
            "libheld.so",
            "static int hidden(int a) { return a * 7; }\nint held_f(int a) { return hidden(a) + 1; }\n",
            &["-O0"],
        );
        let bytes = std::fs::read(&lib).unwrap();
        REAL_DLOPEN.store(libc::dlopen as Dlopen as usize, Ordering::Release);
        let c = std::ffi::CString::new(lib.to_str().unwrap()).unwrap();
        // SAFETY: the hook with a valid path, as libjvm would call it.
        let handle = unsafe { hooked_dlopen(c.as_ptr(), libc::RTLD_NOW) };
        assert!(!handle.is_null());
        let metadata = std::fs::metadata(&lib).unwrap();
        std::fs::remove_file(&lib).unwrap();
        let mut held = held_file(metadata.ino()).expect("held");
        let mut read = Vec::new();
        std::io::Read::read_to_end(&mut held, &mut read).unwrap();
        assert_eq!(read, bytes);
        // A failed dlopen is passed back as it is, and holds nothing.
        let missing = std::ffi::CString::new("/nonexistent/libnone.so").unwrap();
        // SAFETY: as above.
        assert!(unsafe { hooked_dlopen(missing.as_ptr(), libc::RTLD_NOW) }.is_null());
        // SAFETY: the handle from dlopen above.
        unsafe { libc::dlclose(handle) };
        let _ = std::fs::remove_dir_all(&dir);
    }
}
