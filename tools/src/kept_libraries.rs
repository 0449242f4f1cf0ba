//! The libraries a staged recording names, copied from the JVM's file system while it runs, so
//! that the recording can be symbolized after the JVM is gone (`jfr-symbolize --sysroot
//! NAME.libs`). The paths come from the recording, which code in the JVM wrote: each is
//! resolved inside the JVM's root ([`crate::confined::root`]) as the JVM's user, taken only
//! when it is a plain file, and kept only at a path made of plain names under the copy's root.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use nix::fcntl::OFlag;

use crate::confined::dir::check_regular;
use crate::confined::root::JvmRoot;
use crate::stage::Target;

/// The libraries `recording` (a file or a directory of chunk files) names, as the JVM saw
/// their paths (its `jdk.NativeLibrary` events), in order, once each; the kernel's own
/// `[vdso]` and the like left out.
pub fn recorded_libraries(recording: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    let files = symbolize::driver::input_files(&[recording.to_path_buf()]).unwrap_or_default();
    for file in files {
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        for chunk in symbolize::jfr::chunks(&bytes).map_while(Result::ok) {
            if let Ok(profile) = symbolize::profile::read_chunk(&chunk) {
                paths.extend(profile.libraries.into_iter().map(|l| l.path));
            }
        }
    }
    // A file deleted after it was loaded is not on any path: the agent keeps its image.
    paths.retain(|p| p.starts_with('/') && !p.ends_with(" (deleted)"));
    paths.sort_unstable();
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
    for path in paths {
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
            .and_then(|()| crate::mirror::copy_atomically(file, len, &to));
        if done.is_ok() {
            kept.files += 1;
            kept.bytes += len;
        }
    }
    kept
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
