//! A directory this process made in a file system another user controls, held by its
//! descriptor from the moment it was made. Every name in it is opened relative to that
//! descriptor without following links: files are created with `O_EXCL` (a name that exists
//! already is someone else's), read only when they are regular files of the expected owner
//! with one link, and removed with `unlinkat`. Renaming the directory, or planting links in it,
//! cannot turn any of these onto another file.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};
use nix::unistd::UnlinkatFlags;

use super::root::owned;

/// A directory made by [`OwnedDir::make`], with the uid and gid its files must have.
#[derive(Debug)]
pub struct OwnedDir {
    fd: OwnedFd,
    owner: (u32, u32),
}

/// Why a file of the directory was not read: it is not what it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// It could not be opened or read.
    Io(String),
    /// It is something other than a regular file of the expected owner with one link.
    NotOurs(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Io(s) | Refused::NotOurs(s) => f.write_str(s),
        }
    }
}

/// Whether `stat` is a plain file of `owner` with one link, no bigger than `max_bytes`: what
/// the agent writes. Anything else was put there by someone else.
pub fn check_regular(stat: &FileStat, owner: Option<u32>, max_bytes: u64) -> Result<(), String> {
    let kind = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
    if kind != SFlag::S_IFREG {
        return Err(format!("not a regular file (mode {:o})", stat.st_mode));
    }
    if let Some(uid) = owner.filter(|uid| *uid != stat.st_uid) {
        return Err(format!("owned by uid {}, not {uid}", stat.st_uid));
    }
    if owner.is_some() && stat.st_nlink != 1 {
        return Err(format!("{} hard links to it", stat.st_nlink));
    }
    if stat.st_size as u64 > max_bytes {
        return Err(format!("{} bytes, more than {max_bytes}", stat.st_size));
    }
    Ok(())
}

fn io(e: nix::errno::Errno) -> std::io::Error {
    std::io::Error::from(e)
}

impl OwnedDir {
    /// Makes `name` in the directory `parent` (`mkdirat`: a name that exists already, a link
    /// included, fails with `AlreadyExists`), opens what it made without following links, checks
    /// it is a directory of `owner`, and sets `mode` on the descriptor.
    pub fn make(
        parent: BorrowedFd<'_>,
        name: &OsStr,
        mode: u32,
        owner: (u32, u32),
    ) -> std::io::Result<OwnedDir> {
        nix::sys::stat::mkdirat(
            Some(parent.as_raw_fd()),
            name,
            Mode::from_bits_truncate(0o700),
        )
        .map_err(io)?;
        let fd = nix::fcntl::openat(
            Some(parent.as_raw_fd()),
            name,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map(owned)
        .map_err(io)?;
        let dir = OwnedDir { fd, owner };
        dir.own(mode)?;
        Ok(dir)
    }

    /// Sets `mode` and the owner on the descriptor (the owner only where it differs: a
    /// directory made with the user's file-system identity is the user's already).
    fn own(&self, mode: u32) -> std::io::Result<()> {
        let stat = nix::sys::stat::fstat(self.fd.as_raw_fd()).map_err(io)?;
        if (stat.st_uid, stat.st_gid) != self.owner {
            nix::unistd::fchown(
                self.fd.as_raw_fd(),
                Some(nix::unistd::Uid::from_raw(self.owner.0)),
                Some(nix::unistd::Gid::from_raw(self.owner.1)),
            )
            .map_err(io)?;
        }
        nix::sys::stat::fchmod(self.fd.as_raw_fd(), Mode::from_bits_truncate(mode)).map_err(io)
    }

    /// Makes the directory `name` in this one.
    pub fn make_dir(&self, name: &OsStr, mode: u32) -> std::io::Result<OwnedDir> {
        OwnedDir::make(self.fd.as_fd(), name, mode, self.owner)
    }

    /// Opens the directory `name` of this one, never through a link, checked to be of this
    /// directory's owner.
    pub fn open_dir(&self, name: &OsStr) -> Result<OwnedDir, Refused> {
        let fd = nix::fcntl::openat(
            Some(self.fd.as_raw_fd()),
            name,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map(owned)
        .map_err(|e| Refused::Io(e.to_string()))?;
        let stat = nix::sys::stat::fstat(fd.as_raw_fd()).map_err(|e| Refused::Io(e.to_string()))?;
        if stat.st_uid != self.owner.0 {
            return Err(Refused::NotOurs(format!(
                "a directory of uid {}, not {}",
                stat.st_uid, self.owner.0
            )));
        }
        Ok(OwnedDir {
            fd,
            owner: self.owner,
        })
    }

    /// Creates the file `name` (`O_EXCL`, never through a link), writes `bytes`, sets `mode`.
    pub fn create_file(&self, name: &OsStr, bytes: &[u8], mode: u32) -> std::io::Result<()> {
        let fd = nix::fcntl::openat(
            Some(self.fd.as_raw_fd()),
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )
        .map(owned)
        .map_err(io)?;
        nix::sys::stat::fchmod(fd.as_raw_fd(), Mode::from_bits_truncate(mode)).map_err(io)?;
        std::fs::File::from(fd).write_all(bytes)
    }

    /// Opens the file `name` for reading if it is a regular file of this directory's owner with
    /// one link and at most `max_bytes`: the file and its length. Never follows a link, never
    /// blocks on a FIFO.
    pub fn open_regular(
        &self,
        name: &OsStr,
        max_bytes: u64,
    ) -> Result<(std::fs::File, u64), Refused> {
        let fd = nix::fcntl::openat(
            Some(self.fd.as_raw_fd()),
            name,
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map(owned);
        let fd = match fd {
            Ok(fd) => fd,
            Err(nix::errno::Errno::ELOOP) => {
                return Err(Refused::NotOurs("a symbolic link".to_string()))
            }
            Err(e) => return Err(Refused::Io(e.to_string())),
        };
        let stat = nix::sys::stat::fstat(fd.as_raw_fd()).map_err(|e| Refused::Io(e.to_string()))?;
        check_regular(&stat, Some(self.owner.0), max_bytes).map_err(Refused::NotOurs)?;
        Ok((std::fs::File::from(fd), stat.st_size as u64))
    }

    /// The whole of the file `name`, as [`OwnedDir::open_regular`] allows it.
    pub fn read(&self, name: &OsStr, max_bytes: u64) -> Result<Vec<u8>, Refused> {
        let (file, len) = self.open_regular(name, max_bytes)?;
        let mut bytes = Vec::with_capacity(len as usize);
        file.take(max_bytes)
            .read_to_end(&mut bytes)
            .map_err(|e| Refused::Io(e.to_string()))?;
        Ok(bytes)
    }

    /// The names in this directory (`.` and `..` left out).
    pub fn names(&self) -> std::io::Result<Vec<OsString>> {
        let mut dir = nix::dir::Dir::openat(
            Some(self.fd.as_raw_fd()),
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(io)?;
        let mut names = Vec::new();
        for entry in dir.iter() {
            let name = entry.map_err(io)?.file_name().to_bytes().to_vec();
            if name != b"." && name != b".." {
                names.push(OsString::from(std::ffi::OsStr::from_bytes(&name)));
            }
        }
        names.sort();
        Ok(names)
    }

    /// Removes the entry `name` (a file, a link or an empty directory) without following it.
    pub fn remove(&self, name: &OsStr) {
        let at = Some(self.fd.as_raw_fd());
        if nix::unistd::unlinkat(at, name, UnlinkatFlags::NoRemoveDir).is_err() {
            let _ = nix::unistd::unlinkat(at, name, UnlinkatFlags::RemoveDir);
        }
    }

    /// Empties this directory: every entry, directories of its owner emptied first, through
    /// descriptors only (a link is removed, never followed). `depth` bounds the recursion.
    pub fn empty(&self, depth: u32) {
        for name in self.names().unwrap_or_default() {
            let stat = nix::sys::stat::fstatat(
                Some(self.fd.as_raw_fd()),
                name.as_os_str(),
                AtFlags::AT_SYMLINK_NOFOLLOW,
            );
            let is_dir =
                stat.is_ok_and(|s| s.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFDIR.bits());
            if is_dir && depth > 0 {
                if let Ok(sub) = self.open_dir(&name) {
                    sub.empty(depth - 1);
                }
            }
            self.remove(&name);
        }
    }
}

impl AsFd for OwnedDir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn me() -> (u32, u32) {
        (
            nix::unistd::geteuid().as_raw(),
            nix::unistd::getegid().as_raw(),
        )
    }

    fn parent() -> (tempfile::TempDir, OwnedFd) {
        let top = tempfile::tempdir().unwrap();
        let fd = nix::fcntl::open(
            top.path(),
            OFlag::O_PATH | OFlag::O_DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        (top, owned(fd))
    }

    #[test]
    fn a_name_that_exists_is_never_reused_or_followed() {
        let (top, fd) = parent();
        let victim = top.path().join("victim");
        std::fs::write(&victim, "victim").unwrap();
        std::os::unix::fs::symlink(&victim, top.path().join("planted")).unwrap();
        std::fs::create_dir(top.path().join("made-before")).unwrap();
        for name in ["planted", "made-before"] {
            let e = OwnedDir::make(fd.as_fd(), OsStr::new(name), 0o700, me()).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{name}");
        }
        let dir = OwnedDir::make(fd.as_fd(), OsStr::new("ours"), 0o711, me()).unwrap();
        let meta = std::fs::metadata(top.path().join("ours")).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o711);
        std::os::unix::fs::symlink(&victim, top.path().join("ours/agent")).unwrap();
        let e = dir
            .create_file(OsStr::new("agent"), b"agent", 0o755)
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&victim).unwrap(), b"victim");
        dir.create_file(OsStr::new("new"), b"agent", 0o755).unwrap();
        let meta = std::fs::metadata(top.path().join("ours/new")).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o755);
    }

    #[test]
    fn only_plain_files_of_the_owner_are_read() {
        let (top, fd) = parent();
        let dir = OwnedDir::make(fd.as_fd(), OsStr::new("stage"), 0o700, me()).unwrap();
        let victim = top.path().join("victim");
        std::fs::write(&victim, "victim").unwrap();
        let stage = top.path().join("stage");
        std::fs::write(stage.join("chunk.jfr"), "chunk").unwrap();
        std::os::unix::fs::symlink(&victim, stage.join("link.jfr")).unwrap();
        std::fs::hard_link(&victim, stage.join("hard.jfr")).unwrap();
        nix::unistd::mkfifo(&stage.join("fifo.jfr"), Mode::from_bits_truncate(0o600)).unwrap();
        std::fs::create_dir(stage.join("dir.jfr")).unwrap();
        assert_eq!(dir.read(OsStr::new("chunk.jfr"), 100).unwrap(), b"chunk");
        assert!(matches!(
            dir.read(OsStr::new("chunk.jfr"), 3),
            Err(Refused::NotOurs(_))
        ));
        for name in ["link.jfr", "hard.jfr", "fifo.jfr", "dir.jfr"] {
            let e = dir.read(OsStr::new(name), 100).unwrap_err();
            assert!(matches!(e, Refused::NotOurs(_)), "{name}: {e:?}");
        }
        let other = check_regular(
            &nix::sys::stat::stat(&victim).unwrap(),
            Some(me().0 + 1),
            100,
        );
        assert!(other.unwrap_err().contains("owned by uid"));
    }

    #[test]
    fn emptying_removes_links_never_their_targets() {
        let (top, fd) = parent();
        let dir = OwnedDir::make(fd.as_fd(), OsStr::new("stage"), 0o700, me()).unwrap();
        let outside = top.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "keep").unwrap();
        let stage = top.path().join("stage");
        std::os::unix::fs::symlink(&outside, stage.join("link")).unwrap();
        let sub = dir.make_dir(OsStr::new("chunks"), 0o700).unwrap();
        sub.create_file(OsStr::new("1.jfr"), b"x", 0o600).unwrap();
        // Renamed away while held: the descriptor still names the directory we made.
        std::fs::rename(&stage, top.path().join("moved")).unwrap();
        dir.empty(4);
        assert!(dir.names().unwrap().is_empty());
        assert_eq!(std::fs::read(outside.join("keep")).unwrap(), b"keep");
    }
}
