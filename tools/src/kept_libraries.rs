//! The libraries a staged recording names, copied from the JVM's file system while it runs, so
//! that the recording can be symbolized after the JVM is gone (`jfr-symbolize --sysroot
//! NAME.libs`). The paths come from the recording, which code in the JVM wrote: each is
//! resolved inside the JVM's root ([`crate::confined::root`]) as the JVM's user, taken only
//! when it is a plain file, and kept only at a path made of plain names under the copy's root.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use nix::fcntl::OFlag;

use crate::confined::dir::check_regular;
use crate::confined::root::JvmRoot;
use crate::stage::Target;

/// The libraries `recording` (a file or a directory of chunk files) names, as the JVM saw
/// their paths (its `jdk.NativeLibrary` events), with the address each was mapped at, once
/// each; the kernel's own `[vdso]` and the like left out.
pub fn recorded_libraries(recording: &Path) -> Vec<(String, u64)> {
    let mut found = Vec::new();
    let files = symbolize::driver::input_files(&[recording.to_path_buf()]).unwrap_or_default();
    for file in files {
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        for chunk in symbolize::jfr::chunks(&bytes).map_while(Result::ok) {
            if let Ok(profile) = symbolize::profile::read_chunk(&chunk) {
                found.extend(profile.libraries.into_iter().map(|l| (l.path, l.base)));
            }
        }
    }
    found.retain(|(p, _)| p.starts_with('/'));
    found.sort_unstable();
    found.dedup();
    found
}

/// The paths of `libraries` (from [`recorded_libraries`]), once each.
pub fn paths_of(libraries: &[(String, u64)]) -> Vec<String> {
    let mut paths: Vec<String> = libraries.iter().map(|(p, _)| p.clone()).collect();
    paths.dedup();
    paths
}

/// What [`keep_libraries`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Files copied.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Paths left out past the bound.
    pub left_out: Vec<String>,
    /// Paths skipped, and why: not a plain file, not a plain path, not readable by the JVM's
    /// user.
    pub skipped: Vec<(String, String)>,
}

/// `path` as a relative path of plain names (no `..`, no `.`), or `None`.
fn plain_relative(path: &str) -> Option<PathBuf> {
    let relative = Path::new(path).strip_prefix("/").ok()?;
    let plain = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    (plain && !relative.as_os_str().is_empty()).then(|| relative.to_path_buf())
}

/// Copies `paths` (as the JVM `target` sees them) from its root to the same paths under
/// `root`, at most `bound` bytes in all (larger ones are left out).
pub fn keep_libraries(target: &Target, paths: &[String], root: &Path, bound: u64) -> Kept {
    let mut kept = Kept::default();
    let jvm_root = match JvmRoot::open(target.pid) {
        Ok(r) => r,
        Err(e) => {
            kept.skipped.push(("/".to_string(), e));
            return kept;
        }
    };
    // A file deleted after it was loaded is on no path: see `keep_deleted`.
    for path in paths.iter().filter(|p| !p.ends_with(DELETED)) {
        let Some(relative) = plain_relative(path) else {
            kept.skipped
                .push((path.clone(), "not a plain absolute path".to_string()));
            continue;
        };
        let file = match open_library(target, &jvm_root, path, bound - kept.bytes.min(bound)) {
            Ok(Some(file)) => file,
            Ok(None) => {
                kept.left_out.push(path.clone());
                continue;
            }
            Err(why) => {
                kept.skipped.push((path.clone(), why));
                continue;
            }
        };
        let len = file.metadata().map_or(0, |m| m.size());
        let to = root.join(&relative);
        let done = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| crate::atomic_file::copy_atomically(file, len, &to));
        if done.is_ok() {
            kept.files += 1;
            kept.bytes += len;
        }
    }
    kept
}

/// The kernel's mark on a mapped file deleted since.
const DELETED: &str = " (deleted)";

/// The mapping that starts at `base` at file offset 0 in `/proc/PID/maps` text: its range
/// (`START-END`, as `/proc/PID/map_files/` names it) and inode. By address, not by path: the
/// JVM's path is as its root sees it, the map's as the reader's does.
fn mapping_at(maps: &str, base: u64) -> Option<(String, u64)> {
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (range, _perms, offset, _dev, inode) = (
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
        );
        let start = u64::from_str_radix(range.split_once('-')?.0, 16).ok()?;
        let at_start = start == base && u64::from_str_radix(offset, 16) == Ok(0);
        at_start.then(|| Some((range.to_string(), inode.parse().ok()?)))?
    })
}

/// Copies the libraries of `libraries` ([`recorded_libraries`]: path and base address) that
/// the JVM `pid` maps with their file deleted (a jar's native code, unpacked to /tmp and deleted
/// after loading) to their paths under `root`, whole, through the kernel's
/// `/proc/PID/map_files/START-END` (root only): the very file the JVM mapped, which no path
/// reaches any more, checked by inode against the map. An existing file under `root` is left
/// as it is; at most `bound` bytes in all.
pub fn keep_deleted(pid: u32, libraries: &[(String, u64)], root: &Path, bound: u64) -> Kept {
    let mut kept = Kept::default();
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return kept;
    };
    for (path, base) in libraries.iter().filter(|(p, _)| p.ends_with(DELETED)) {
        let (Some(relative), Some((range, inode))) = (
            plain_relative(path.trim_end_matches(DELETED)),
            mapping_at(&maps, *base),
        ) else {
            continue;
        };
        let to = root.join(relative);
        if to.exists() {
            continue;
        }
        let room = bound.saturating_sub(kept.bytes);
        match copy_mapped(pid, &range, inode, &to, room) {
            Ok(Some(len)) => {
                kept.files += 1;
                kept.bytes += len;
            }
            Ok(None) => kept.left_out.push(path.clone()),
            Err(why) => kept.skipped.push((path.clone(), why)),
        }
    }
    kept
}

/// Copies the file mapped at `range` of `pid` to `to` if it is a plain file of inode `inode`
/// no larger than `room`: its length, or `None` past the bound.
fn copy_mapped(
    pid: u32,
    range: &str,
    inode: u64,
    to: &Path,
    room: u64,
) -> Result<Option<u64>, String> {
    // Non-blocking: the mapping could be a device or a FIFO-like file the container serves.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(format!("/proc/{pid}/map_files/{range}"))
        .map_err(|e| format!("cannot open its mapping {range}: {e}"))?;
    let stat =
        nix::sys::stat::fstat(std::os::fd::AsRawFd::as_raw_fd(&file)).map_err(|e| e.to_string())?;
    check_regular(&stat, None, u64::MAX)?;
    if stat.st_ino != inode {
        return Err("its mapping is another file now".into());
    }
    let len = stat.st_size as u64;
    if len > room {
        return Ok(None);
    }
    to.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crate::atomic_file::copy_atomically(file, len, to))
        .map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    Ok(Some(len))
}

/// The library `path` of the JVM, opened inside its root as its user: `None` when it is larger
/// than `room`, an error when it is not there or not a plain file.
fn open_library(
    target: &Target,
    jvm_root: &JvmRoot,
    path: &str,
    room: u64,
) -> Result<Option<std::fs::File>, String> {
    let _as = target.as_user()?;
    // Links inside the JVM's root are followed (a library's versioned names), never out of it.
    let fd = jvm_root
        .resolve(Path::new(path), OFlag::O_RDONLY | OFlag::O_NONBLOCK)
        .map_err(|e| e.to_string())?;
    let stat =
        nix::sys::stat::fstat(std::os::fd::AsRawFd::as_raw_fd(&fd)).map_err(|e| e.to_string())?;
    match check_regular(&stat, None, u64::MAX) {
        Err(why) => Err(why),
        Ok(()) if stat.st_size as u64 > room => Ok(None),
        Ok(()) => Ok(Some(std::fs::File::from(fd))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_are_kept_at_their_paths_within_the_bound() {
        let me = Target::of(std::process::id()).unwrap();
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("kept");
        let exe = std::env::current_exe().unwrap().display().to_string();
        let paths = vec![
            exe.clone(),
            "/nonexistent/libx.so".to_string(),
            "/dev/zero".to_string(),
            "/usr/../etc/passwd".to_string(),
        ];
        let kept = keep_libraries(&me, &paths, &root, 1 << 40);
        assert_eq!((kept.files, kept.left_out.len()), (1, 0), "{kept:?}");
        let skipped: Vec<&str> = kept.skipped.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            skipped,
            ["/nonexistent/libx.so", "/dev/zero", "/usr/../etc/passwd"]
        );
        let copy = root.join(exe.trim_start_matches('/'));
        assert_eq!(std::fs::metadata(&copy).unwrap().len(), kept.bytes);
        assert!(!top.path().join("etc/passwd").exists());
        let kept = keep_libraries(&me, &paths, &top.path().join("none"), 0);
        assert_eq!((kept.files, kept.bytes), (0, 0));
        assert_eq!(kept.left_out, [exe]);
    }

    /// A library of this process, deleted after loading: copied whole through map_files.
    #[test]
    fn a_deleted_library_is_copied_from_its_mapping() {
        let top = tempfile::tempdir().unwrap();
        let src = top.path().join("d.c");
        std::fs::write(
            &src,
            "static int s(int a) { return a * 5; }\nint dcopy(int a) { return s(a); }\n",
        )
        .unwrap();
        let lib = top.path().join("libdcopy.so");
        let ok = std::process::Command::new("gcc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&lib)
            .arg(&src)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        let bytes = std::fs::read(&lib).unwrap();
        let c = std::ffi::CString::new(lib.to_str().unwrap()).unwrap();
        // SAFETY: dlopen of a library built above, with no constructors.
        let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW) };
        assert!(!handle.is_null());
        std::fs::remove_file(&lib).unwrap();
        let path = format!("{}{DELETED}", lib.display());
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let base = maps
            .lines()
            .find(|l| l.ends_with(&path))
            .and_then(|l| u64::from_str_radix(l.split('-').next()?, 16).ok())
            .unwrap();
        let root = top.path().join("kept");
        let libraries = [
            (path.clone(), base),
            ("/usr/lib/x.so (deleted)".into(), 0x1000),
        ];
        let kept = keep_deleted(std::process::id(), &libraries, &root, 1 << 30);
        assert_eq!(kept.files, 1, "{kept:?}");
        let copy = root.join(lib.strip_prefix("/").unwrap());
        assert_eq!(std::fs::read(&copy).unwrap(), bytes);
        // Past the bound: left out, and said.
        let kept = keep_deleted(
            std::process::id(),
            &libraries[..1],
            &top.path().join("small"),
            10,
        );
        assert_eq!(kept.left_out.len(), 1);
        // SAFETY: the handle from dlopen above.
        unsafe { libc::dlclose(handle) };
    }

    #[test]
    fn only_plain_paths_are_kept() {
        assert_eq!(
            plain_relative("/usr/lib/x.so"),
            Some(PathBuf::from("usr/lib/x.so"))
        );
        for bad in ["/usr/../../etc/x", "relative/x.so", "/", "/a/./../b"] {
            assert_eq!(plain_relative(bad), None, "{bad}");
        }
        // A `.` is no step anywhere: the path is read and kept as `x`.
        assert_eq!(plain_relative("/./x"), Some(PathBuf::from("x")));
    }
}
