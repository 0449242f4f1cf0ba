//! A JVM's root directory, held by descriptor, and every path of the JVM's resolved inside it.
//!
//! `/proc/PID/root` is opened once. Each path is then resolved with `openat2(RESOLVE_IN_ROOT |
//! RESOLVE_NO_MAGICLINKS)`: an absolute symbolic link, or a `..` that climbs past the JVM's
//! root, stays inside that root, as the JVM itself would see it. A path walked through
//! `/proc/PID/root/...` instead would resolve such a link from this process's root, the
//! host's, which is how a container's user could make a root `attach` write a host file.

use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;

/// Takes ownership of a descriptor an open-like system call of this thread just returned.
pub fn owned(fd: std::os::fd::RawFd) -> OwnedFd {
    // SAFETY: `fd` was just returned by a successful open-like call of this thread and is owned
    // by nobody else; the OwnedFd closes it once.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// The root directory of a JVM, as an `O_PATH` descriptor.
#[derive(Debug)]
pub struct JvmRoot {
    fd: OwnedFd,
}

/// `path` without its leading `/`, refused when it is empty, relative, or holds a NUL.
fn inside(path: &Path) -> Result<&Path, String> {
    let relative = path
        .strip_prefix("/")
        .map_err(|_| format!("{} is not an absolute path", path.display()))?;
    if relative.as_os_str().as_bytes().contains(&0) {
        return Err(format!("{} holds a NUL byte", path.display()));
    }
    Ok(if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    })
}

impl JvmRoot {
    /// Opens the root of process `pid`. Fails with one line where this kernel cannot confine
    /// paths to it (no `openat2`, Linux before 5.6): nothing is then done by path instead.
    pub fn open(pid: u32) -> Result<JvmRoot, String> {
        let at = format!("/proc/{pid}/root");
        let fd = nix::fcntl::open(
            at.as_str(),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("cannot open the root directory of process {pid} ({at}): {e}"))?;
        let root = JvmRoot { fd: owned(fd) };
        match root.resolve(Path::new("/"), OFlag::O_PATH | OFlag::O_DIRECTORY) {
            Ok(_) => Ok(root),
            Err(nix::errno::Errno::ENOSYS) => Err(format!(
                "this kernel has no openat2 (Linux 5.6 or later): jfrnative cannot keep the \
                 paths of JVM {pid} inside its root, so it does not attach to it"
            )),
            Err(e) => Err(format!(
                "cannot resolve paths in the root of process {pid}: {e}"
            )),
        }
    }

    /// Opens `path` (absolute, as the JVM sees it) with `flags`, resolved inside this root;
    /// magic links (`/proc/self/...`) are refused.
    pub fn resolve(&self, path: &Path, flags: OFlag) -> nix::Result<OwnedFd> {
        let relative = inside(path).map_err(|_| nix::errno::Errno::EINVAL)?;
        let how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        nix::fcntl::openat2(self.fd.as_raw_fd(), relative, how).map(owned)
    }

    /// The directory holding `path` (resolved inside this root) and `path`'s last name, which
    /// calls relative to that directory (`openat`, `mkdirat`, `unlinkat`) never follow.
    pub fn parent_of<'p>(&self, path: &'p Path) -> Result<(OwnedFd, &'p OsStr), String> {
        let name = match path.components().next_back() {
            Some(Component::Normal(name)) => name,
            _ => return Err(format!("{} names no file", path.display())),
        };
        let parent = path.parent().unwrap_or(Path::new("/"));
        let dir = self
            .resolve(parent, OFlag::O_PATH | OFlag::O_DIRECTORY)
            .map_err(|e| format!("{}: {e}", parent.display()))?;
        Ok((dir, name))
    }

    /// `path` as `/proc/self/fd/N` would reach the object `fd` holds, for the few calls that
    /// take only a path (`connect` on a Unix socket).
    pub fn fd_path(fd: BorrowedFd<'_>) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
    }
}

impl AsFd for JvmRoot {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_inside_the_root_never_above_it() {
        // A stand-in for a container's root: a directory, its own links, and a "host" file
        // beside it that an absolute or climbing link would reach through /proc/PID/root.
        let top = tempfile::tempdir().unwrap();
        let root_dir = top.path().join("root");
        std::fs::create_dir_all(root_dir.join("tmp")).unwrap();
        std::fs::write(top.path().join("host-secret"), "host").unwrap();
        std::fs::write(root_dir.join("inside"), "inside").unwrap();
        let host_secret = top.path().join("host-secret");
        std::os::unix::fs::symlink(&host_secret, root_dir.join("tmp/abs")).unwrap();
        std::os::unix::fs::symlink("../../host-secret", root_dir.join("tmp/climb")).unwrap();
        std::os::unix::fs::symlink("/inside", root_dir.join("tmp/to-inside")).unwrap();
        let fd =
            nix::fcntl::open(&root_dir, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty()).unwrap();
        let root = JvmRoot { fd: owned(fd) };
        let read = |p: &str| -> Result<String, nix::errno::Errno> {
            let fd = root.resolve(Path::new(p), OFlag::O_RDONLY)?;
            Ok(std::io::read_to_string(std::fs::File::from(fd)).unwrap())
        };
        assert_eq!(read("/tmp/to-inside").unwrap(), "inside");
        assert_eq!(read("/tmp/abs"), Err(nix::errno::Errno::ENOENT));
        // `..` stops at the root: ../../host-secret is /host-secret inside, which is not there.
        assert_eq!(read("/tmp/climb"), Err(nix::errno::Errno::ENOENT));
        assert!(read("relative").is_err());
        let (_, name) = root.parent_of(Path::new("/tmp/abs")).unwrap();
        assert_eq!(name, "abs");
        assert!(root.parent_of(Path::new("/")).is_err());
    }

    #[test]
    fn this_process_root_opens() {
        let root = JvmRoot::open(std::process::id()).unwrap();
        assert!(root
            .resolve(Path::new("/proc/self/root"), OFlag::O_PATH)
            .is_err());
        assert!(root
            .resolve(Path::new("/tmp"), OFlag::O_PATH | OFlag::O_DIRECTORY)
            .is_ok());
    }
}
