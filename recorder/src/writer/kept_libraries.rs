//! Copies of the libraries that may not outlive the JVM, kept beside the recording so that it
//! can be symbolized after the JVM is gone, and on another machine.
//!
//! Java libraries often carry their native code in the jar: the jar's loader unpacks the `.so`
//! into a temporary directory, loads it and deletes the file, right after loading (Netty) or
//! at exit (`deleteOnExit`). The recording holds only PCs, resolved offline, so a library
//! whose file is gone by then could not be named. The writer therefore keeps, when it first
//! sees it mapped:
//! - a library whose file is deleted, or in a temporary directory (`/tmp`, `/var/tmp`,
//!   `/dev/shm`, `$TMPDIR`): a copy of its file, with whatever symbol tables and DWARF it has,
//!   read through the descriptor the load hook kept from its `dlopen` on
//!   ([`crate::unwind::load_hook`]) or from its path while it is the one mapped;
//! - when neither can be read (deleted before the agent came, or loaded by other code than
//!   the JVM's): its file rebuilt from the process's memory ([`crate::unwind::image`]: dynamic
//!   symbols, call-frame information, build-id).
//!
//! They go under the `keep_libs` directory (`FILE.libs` by default) at their recorded paths
//! (without the kernel's ` (deleted)`), so that the directory is a root `jfr-symbolize
//! --sysroot` finds them under; `jfr-symbolize` looks there by itself. Files are created new
//! (`O_EXCL`, never through a link), readable by the JVM's user only, within a byte bound.
//! Nothing here runs in the signal handler: the writer thread does it.

use std::collections::HashSet;
use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use crate::unwind::codemap::Library;
use crate::unwind::tables;

/// One library kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Its path as mapped.
    pub path: String,
    /// Rebuilt from memory (its file was gone), or copied from its file.
    pub from_memory: bool,
    /// Bytes written.
    pub bytes: u64,
}

/// What the keeper did, for the summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KeptLibraries {
    /// The directory, if keeping is on.
    pub dir: Option<String>,
    /// The libraries kept.
    pub kept: Vec<Kept>,
    /// Libraries left out, and why.
    pub left_out: Vec<(String, String)>,
    /// CPU time spent keeping them, ns.
    pub cpu_ns: u64,
}

/// Keeps the libraries that may not outlive the JVM.
#[derive(Debug)]
pub struct Keeper {
    root: Option<PathBuf>,
    max_bytes: u64,
    used_bytes: u64,
    temp_dirs: Vec<String>,
    /// (path without " (deleted)", inode, base) of every library considered.
    seen: HashSet<(String, u64, u64)>,
    done: KeptLibraries,
}

/// The temporary directories a library found under may be deleted before the recording is
/// read: the usual ones and `$TMPDIR` (each with a trailing `/`).
fn temp_dirs() -> Vec<String> {
    let mut dirs: Vec<String> = ["/tmp/", "/var/tmp/", "/dev/shm/"]
        .into_iter()
        .map(String::from)
        .collect();
    if let Ok(t) = std::env::var("TMPDIR") {
        let t = format!("{}/", t.trim_end_matches('/'));
        if t.len() > 1 && !dirs.contains(&t) {
            dirs.push(t);
        }
    }
    dirs
}

/// `path` (as mapped) as a relative path of plain names, without the kernel's ` (deleted)`.
fn plain_relative(path: &str) -> Option<PathBuf> {
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    let relative = Path::new(path).strip_prefix("/").ok()?;
    let plain = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    (plain && !relative.as_os_str().is_empty()).then(|| relative.to_path_buf())
}

/// Whether `lib` is this agent (never kept: it is not the user's code).
fn is_this_agent(lib: &Library) -> bool {
    let here = plain_relative as fn(&str) -> Option<PathBuf> as usize as u64;
    lib.base <= here && here < lib.top
}

impl Keeper {
    /// A keeper writing under `dir` (`None`: keeping is off), at most `max_bytes` in all.
    pub fn new(dir: Option<&str>, max_bytes: u64) -> Keeper {
        Keeper {
            root: dir.map(PathBuf::from),
            max_bytes,
            used_bytes: 0,
            temp_dirs: temp_dirs(),
            seen: HashSet::new(),
            done: KeptLibraries {
                dir: dir.map(String::from),
                ..KeptLibraries::default()
            },
        }
    }

    /// What was kept so far.
    pub fn kept(&self) -> &KeptLibraries {
        &self.done
    }

    /// Whether `lib` may be gone when the recording is read.
    fn may_vanish(&self, lib: &Library) -> bool {
        lib.path.starts_with('/')
            && (tables::is_deleted(lib) || self.temp_dirs.iter().any(|d| lib.path.starts_with(d)))
    }

    /// Keeps each library of `libraries` not considered before that may not outlive the JVM.
    pub fn consider(&mut self, libraries: &[Library]) {
        let Some(root) = self.root.clone() else {
            return;
        };
        for lib in libraries {
            // Deleted since it was seen (at exit) is the same library: not kept twice.
            let file = tables::file_path(lib).to_string();
            if !self.seen.insert((file, lib.inode, lib.base)) {
                continue;
            }
            if !self.may_vanish(lib) || is_this_agent(lib) {
                continue;
            }
            let start = crate::os::thread_cpu_ns();
            match self.keep(&root, lib) {
                Ok(kept) => {
                    self.used_bytes += kept.bytes;
                    self.done.kept.push(kept);
                }
                Err(why) => self.done.left_out.push((lib.path.clone(), why)),
            }
            let spent = crate::os::thread_cpu_ns().saturating_sub(start).max(0) as u64;
            self.done.cpu_ns = self.done.cpu_ns.saturating_add(spent);
        }
    }

    /// Writes `lib`'s copy under `root`.
    fn keep(&self, root: &Path, lib: &Library) -> Result<Kept, String> {
        let relative = plain_relative(&lib.path).ok_or("not a plain absolute path")?;
        let room = self.max_bytes.saturating_sub(self.used_bytes);
        let source = match tables::mapped_file(lib) {
            Some(file) => {
                let len = file.metadata().map_err(|e| e.to_string())?.len();
                Source::File(file, len)
            }
            None => Source::Memory(tables::rebuilt_image(lib)?.bytes),
        };
        let len = match &source {
            Source::File(_, len) => *len,
            Source::Memory(bytes) => bytes.len() as u64,
        };
        if len > room {
            return Err(format!(
                "{len} bytes would pass keep_libs_max ({room} bytes left)"
            ));
        }
        let target = root.join(&relative);
        if let Some(parent) = target.parent() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
        }
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&target)
            .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
        let written = match &source {
            // Streamed from offset 0 (a held file's descriptors share one offset): no copy of
            // a large library in the JVM's heap.
            Source::File(file, len) => copy_from_start(file, *len, &mut out),
            Source::Memory(bytes) => out.write_all(bytes),
        };
        written.map_err(|e| format!("cannot write {}: {e}", target.display()))?;
        Ok(Kept {
            path: lib.path.clone(),
            from_memory: matches!(source, Source::Memory(_)),
            bytes: len,
        })
    }
}

/// Where a kept copy comes from.
enum Source {
    /// The file, open, and its length.
    File(std::fs::File, u64),
    /// The file rebuilt from memory.
    Memory(Vec<u8>),
}

/// Copies the first `len` bytes of `file` into `out` in 64 KiB pieces, by position.
fn copy_from_start(file: &std::fs::File, len: u64, out: &mut std::fs::File) -> std::io::Result<()> {
    let mut piece = vec![0u8; 64 << 10];
    let mut at = 0u64;
    while at < len {
        let want = (len - at).min(piece.len() as u64) as usize;
        let n = std::os::unix::fs::FileExt::read_at(file, &mut piece[..want], at)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        out.write_all(&piece[..n])?;
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_paths_are_plain_and_lose_the_deleted_mark() {
        assert_eq!(
            plain_relative("/tmp/libnetty_tcnative_x86_64123.so (deleted)"),
            Some(PathBuf::from("tmp/libnetty_tcnative_x86_64123.so"))
        );
        assert_eq!(plain_relative("/tmp/../etc/passwd"), None);
        assert_eq!(
            plain_relative("/tmp/./a.so"),
            Some(PathBuf::from("tmp/a.so"))
        );
        assert_eq!(plain_relative("relative.so"), None);
        assert_eq!(plain_relative("/"), None);
    }

    /// Two libraries in a temporary directory, as a jar's loader leaves them: one deleted
    /// right after loading (rebuilt from memory), one still there (copied as it is).
    #[test]
    fn libraries_that_may_vanish_are_kept_once_each() {
        let dir = std::env::temp_dir().join(format!("jfrnative-keep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut handles = Vec::new();
        for name in ["libkeepgone.so", "libkeepthere.so"] {
            let source = format!("int {}_f(int a) {{ return a + 1; }}\n", &name[3..7]);
            let lib = crate::test_lib::build(&dir, name, &source, &["-O2"]);
            let handle = crate::test_lib::load(&lib);
            handles.push(handle);
        }
        let there = std::fs::read(dir.join("libkeepthere.so")).unwrap();
        std::fs::remove_file(dir.join("libkeepgone.so")).unwrap();
        let map = crate::unwind::codemap::CodeMap::read_self().unwrap();
        let root = dir.join("out.jfr.libs");
        let mut keeper = Keeper::new(root.to_str(), 64 << 20);
        keeper.consider(&map.libraries);
        keeper.consider(&map.libraries);
        let kept = keeper.kept();
        let ours: Vec<&Kept> = kept
            .kept
            .iter()
            .filter(|k| k.path.contains("libkeep"))
            .collect();
        assert_eq!(ours.len(), 2, "{kept:?}");
        let relative = |n: &str| root.join(dir.strip_prefix("/").unwrap()).join(n);
        let gone = std::fs::read(relative("libkeepgone.so")).unwrap();
        assert!(gone.starts_with(b"\x7fELF"));
        assert!(ours
            .iter()
            .any(|k| k.path.ends_with("libkeepgone.so (deleted)") && k.from_memory));
        assert_eq!(std::fs::read(relative("libkeepthere.so")).unwrap(), there);
        assert!(ours
            .iter()
            .any(|k| k.path.ends_with("libkeepthere.so") && !k.from_memory));
        // A bound too small for either: both left out, said.
        let mut small = Keeper::new(dir.join("small.libs").to_str(), 100);
        small.consider(&map.libraries);
        assert!(small.kept().kept.is_empty());
        assert!(small
            .kept()
            .left_out
            .iter()
            .any(|(_, why)| why.contains("keep_libs_max")));
        for handle in handles {
            // SAFETY: handles from dlopen above; nothing of the libraries is in use.
            unsafe { libc::dlclose(handle) };
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
