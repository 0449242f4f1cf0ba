//! Test support: small C libraries built with gcc into a directory and loaded into the test
//! process, for the tests of what the agent reads of loaded libraries.

use std::ffi::c_void;
use std::path::{Path, PathBuf};

/// Builds `source` into the shared library `dir/name` with gcc (`-shared -fPIC` and `flags`).
pub fn build(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let (src, lib) = (dir.join(format!("{name}.c")), dir.join(name));
    std::fs::write(&src, source).unwrap();
    let status = std::process::Command::new("gcc")
        .args(["-shared", "-fPIC"])
        .args(flags)
        .arg("-o")
        .arg(&lib)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success(), "gcc {flags:?} {}", src.display());
    lib
}

/// Loads `lib` (`dlopen`, `RTLD_NOW`): its handle.
pub fn load(lib: &Path) -> *mut c_void {
    let c = std::ffi::CString::new(lib.to_str().unwrap()).unwrap();
    // SAFETY: dlopen of a library these tests built, with no constructors.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW) };
    assert!(!handle.is_null(), "dlopen {}", lib.display());
    handle
}
