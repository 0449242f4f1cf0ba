//! Recording a JVM that cannot see our files: one in a container with a root filesystem of its
//! own (another mount namespace), or one that runs as another user, which cannot read our
//! agent or write our output directory. The agent and the recording are staged in the JVM's
//! own `/tmp`, in one directory with a fresh random name, `/tmp/jfrnative-RANDOM/`, made and
//! used as the JVM's user, held by descriptor ([`crate::confined`]):
//!
//! - `libjfrnative.so`: the agent, created with `O_EXCL`. A JVMTI agent is never unloaded,
//!   and the dynamic linker takes a library it has loaded already by its path: a JVM that has
//!   our agent mapped already (an earlier attach) is given that path again, as its maps show it,
//!   and no agent file is written.
//! - the recording and the agent's status file, read from here while the JVM records (plain
//!   files of the JVM's user only: [`crate::mirror`]), copied to the `-o` path.
//!
//! The directory is emptied and removed through its descriptor when the [`Stage`] is dropped.
//! Nothing is left in the JVM's `/tmp` after a recording but the attach socket the JVM itself
//! keeps (`.java_pidPID`, as after `jcmd`).

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use crate::confined::creds::AsUser;
use crate::confined::dir::{OwnedDir, Refused};
use crate::confined::root::JvmRoot;

/// A JVM's view of the file system, from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The JVM's process id (as this process sees it).
    pub pid: u32,
    /// Its effective uid.
    pub uid: u32,
    /// Its effective gid.
    pub gid: u32,
    /// Whether its root directory is another than ours (a container's root filesystem).
    pub other_root: bool,
}

/// The effective uid and gid of process `pid` (the second fields of `Uid:` and `Gid:` in
/// `/proc/PID/status`).
pub fn process_ids(pid: u32) -> Option<(u32, u32)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let second = |key: &str| -> Option<u32> {
        let line = status.lines().find_map(|l| l.strip_prefix(key))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((second("Uid:")?, second("Gid:")?))
}

impl Target {
    /// The JVM `pid`'s user and root, from `/proc`.
    pub fn of(pid: u32) -> Result<Target, String> {
        let (uid, gid) = process_ids(pid)
            .ok_or_else(|| format!("cannot read the uid and gid of process {pid} from /proc"))?;
        let root = std::fs::metadata(format!("/proc/{pid}/root"))
            .map_err(|e| format!("cannot look at the root of process {pid}: {e}"))?;
        let ours = std::fs::metadata("/").map_err(|e| format!("cannot look at /: {e}"))?;
        Ok(Target {
            pid,
            uid,
            gid,
            other_root: (root.dev(), root.ino()) != (ours.dev(), ours.ino()),
        })
    }

    /// Whether the JVM needs the recording staged in its own `/tmp`: it has a root of its own,
    /// or runs as another user than this process.
    pub fn needs_stage(&self) -> bool {
        self.other_root || self.uid != nix::unistd::geteuid().as_raw()
    }

    /// This thread acting as the JVM's user for file access, while the guard lives.
    pub fn as_user(&self) -> Result<AsUser, String> {
        AsUser::become_user(self.uid, self.gid).map_err(|e| {
            format!(
                "cannot act as the JVM's user (uid {}, gid {}): {e}",
                self.uid, self.gid
            )
        })
    }
}

/// The most bytes of the agent's status file read.
pub const STATUS_BYTES: u64 = 1 << 20;

/// The agent and the recording's directory in a JVM's `/tmp`; emptied and removed when dropped.
#[derive(Debug)]
pub struct Stage {
    target: Target,
    /// The JVM's `/tmp`, resolved inside its root.
    tmp: OwnedFd,
    /// The stage's name in that `/tmp`.
    name: OsString,
    dir: OwnedDir,
    /// The agent, as the JVM sees it.
    pub agent: PathBuf,
    /// The stage's directory, as the JVM sees it.
    pub dir_path: PathBuf,
}

impl Stage {
    /// Makes the stage in the JVM's `/tmp` as the JVM's user and copies `agent` into it, unless
    /// the JVM has our agent loaded already. The error names the path and says why (a
    /// read-only `/tmp`, no room, a name taken, ...).
    pub fn create(target: &Target, agent: &Path) -> Result<Stage, String> {
        let bytes =
            std::fs::read(agent).map_err(|e| format!("cannot read {}: {e}", agent.display()))?;
        let root = JvmRoot::open(target.pid)?;
        let loaded = loaded_agent(target.pid, &bytes)?;
        let _as = target.as_user()?;
        let tmp = root
            .resolve(Path::new("/tmp"), OFlag::O_PATH | OFlag::O_DIRECTORY)
            .map_err(|e| {
                format!(
                    "cannot open the JVM's /tmp: {e}; the JVM {} must have a writable /tmp of its \
                     own for the agent and its recording",
                    target.pid
                )
            })?;
        let (name, dir) = make_stage_dir(&tmp, target)?;
        let dir_path = Path::new("/tmp").join(&name);
        let mut stage = Stage {
            target: target.clone(),
            tmp,
            name,
            dir,
            agent: PathBuf::new(),
            dir_path,
        };
        stage.agent = match loaded {
            Some(path) => path,
            None => {
                let file = OsStr::new(crate::session::AGENT_FILE);
                stage.dir.create_file(file, &bytes, 0o755).map_err(|e| {
                    format!(
                        "cannot create the agent {} in the JVM's /tmp: {e}",
                        stage.dir_path.join(file).display()
                    )
                })?;
                stage.dir_path.join(file)
            }
        };
        Ok(stage)
    }

    /// `name` in the stage, as the JVM sees it.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir_path.join(name)
    }

    /// Makes the directory `name` in the stage (a directory recording), as the JVM's user.
    pub fn make_dir(&self, name: &str) -> Result<(), String> {
        let _as = self.target.as_user()?;
        self.dir
            .make_dir(OsStr::new(name), 0o700)
            .map(drop)
            .map_err(|e| {
                format!(
                    "cannot create {} in the JVM's /tmp: {e}",
                    self.path(name).display()
                )
            })
    }

    /// Creates the file `name` in the stage with `bytes`, as the JVM's user.
    pub fn create_file(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        let _as = self.target.as_user()?;
        self.dir
            .create_file(OsStr::new(name), bytes, 0o600)
            .map_err(|e| {
                format!(
                    "cannot create {} in the JVM's /tmp: {e}",
                    self.path(name).display()
                )
            })
    }

    /// The file `name` of the stage (`sub/name` when `sub` is given), opened as the JVM's user
    /// if it is a plain file of that user, at most `max_bytes`: the open file and its length.
    pub fn open(
        &self,
        sub: Option<&OsStr>,
        name: &OsStr,
        max_bytes: u64,
    ) -> Result<(std::fs::File, u64), Refused> {
        let _as = self.target.as_user().map_err(Refused::Io)?;
        match sub {
            None => self.dir.open_regular(name, max_bytes),
            Some(sub) => self.dir.open_dir(sub)?.open_regular(name, max_bytes),
        }
    }

    /// The whole of the file `name` of the stage, as [`Stage::open`] allows it.
    pub fn read(&self, name: &str, max_bytes: u64) -> Result<Vec<u8>, Refused> {
        let _as = self.target.as_user().map_err(Refused::Io)?;
        self.dir.read(OsStr::new(name), max_bytes)
    }

    /// The names in the stage's directory `sub` (`None`: when it is not a directory of the
    /// JVM's user).
    pub fn names(&self, sub: &OsStr) -> Option<Vec<OsString>> {
        let _as = self.target.as_user().ok()?;
        self.dir.open_dir(sub).ok()?.names().ok()
    }

    /// Copies the stage's directory `sub` (the agent's kept libraries), every plain file of the
    /// JVM's user in it at most `COPY_DEPTH` levels down (`COPY_FILES` at most), to the same
    /// names under `to` (a directory the caller made fresh, for itself alone)
    /// (files already there are left as they are), at most `max_bytes` in all: (files, bytes,
    /// what was refused). Names are taken one by one through descriptors: a link in the tree
    /// is refused, never followed.
    pub fn copy_tree(&self, sub: &OsStr, to: &Path, max_bytes: u64) -> (usize, u64, Vec<String>) {
        let mut copied = (0, 0, Vec::new());
        let dir = {
            let Ok(_as) = self.target.as_user() else {
                return copied;
            };
            self.dir.open_dir(sub)
        };
        if let Ok(dir) = dir {
            copy_dir(&self.target, &dir, to, max_bytes, COPY_DEPTH, &mut copied);
        }
        copied
    }

    /// Removes `name` from the stage (never following it).
    pub fn remove(&self, name: &str) {
        if let Ok(_as) = self.target.as_user() {
            self.dir.remove(OsStr::new(name));
        }
    }
}

/// How deep the stage's directories are emptied and copied (the recording's directory is one
/// level; the agent's kept libraries keep their paths under `NAME.libs`).
const STAGE_DEPTH: u32 = 24;

/// How deep [`Stage::copy_tree`] goes (a kept library's path: `tmp/jna-123/jna456.tmp` is 3).
const COPY_DEPTH: u32 = 12;
/// Most files [`Stage::copy_tree`] copies (the stage is the container's to fill).
const COPY_FILES: usize = 1024;

/// [`Stage::copy_tree`]'s walk of `dir` into `to`, `depth` levels more at most: the stage is
/// read as the JVM's user (through descriptors), the copies written as the caller.
fn copy_dir(
    target: &Target,
    dir: &OwnedDir,
    to: &Path,
    max_bytes: u64,
    depth: u32,
    copied: &mut (usize, u64, Vec<String>),
) {
    let as_user = || target.as_user().map_err(Refused::Io);
    let names = as_user().ok().and_then(|_as| dir.names().ok());
    for name in names.unwrap_or_default() {
        if copied.0 >= COPY_FILES {
            copied
                .2
                .push(format!("{}: more than {COPY_FILES} files", to.display()));
            return;
        }
        let dest = to.join(&name);
        let left = max_bytes.saturating_sub(copied.1);
        let opened = as_user().and_then(|_as| dir.open_regular(&name, left));
        match opened {
            Ok((file, len)) => {
                if dest.exists() {
                    continue;
                }
                let made = std::fs::create_dir_all(to)
                    .and_then(|()| crate::atomic_file::copy_atomically(file, len, &dest));
                match made {
                    Ok(()) => {
                        copied.0 += 1;
                        copied.1 += len;
                    }
                    Err(e) => copied.2.push(format!("{}: {e}", dest.display())),
                }
            }
            Err(_) if depth > 0 => match as_user().and_then(|_as| dir.open_dir(&name)) {
                Ok(sub) => copy_dir(target, &sub, &dest, max_bytes, depth - 1, copied),
                Err(e) => copied.2.push(format!("{}: {e}", dest.display())),
            },
            Err(e) => copied.2.push(format!("{}: {e}", dest.display())),
        }
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if let Ok(_as) = self.target.as_user() {
            self.dir.empty(STAGE_DEPTH);
            let _ = nix::unistd::unlinkat(
                Some(std::os::fd::AsRawFd::as_raw_fd(&self.tmp)),
                self.name.as_os_str(),
                nix::unistd::UnlinkatFlags::RemoveDir,
            );
        }
    }
}

/// Makes `/tmp/jfrnative-RANDOM` in the JVM's `/tmp` (`tmp`), for the JVM's user only. A name
/// that exists already (nobody could have guessed it, but it is someone's) is passed over.
fn make_stage_dir(tmp: &OwnedFd, target: &Target) -> Result<(OsString, OwnedDir), String> {
    let mut last = None;
    for _ in 0..8 {
        let name = crate::confined::random_name("jfrnative")
            .map_err(|e| format!("cannot draw a random name: {e}"))?;
        match OwnedDir::make(
            tmp.as_fd(),
            OsStr::new(&name),
            0o700,
            (target.uid, target.gid),
        ) {
            Ok(dir) => return Ok((name.into(), dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(format!(
                    "cannot create the directory /tmp/{name} in the JVM's /tmp: {e}; the JVM {} \
                     must have a writable /tmp of its own for the agent and its recording",
                    target.pid
                ))
            }
        }
    }
    Err(format!(
        "cannot create a directory of a fresh name in the JVM's /tmp: {}",
        last.map_or_else(String::new, |e| e.to_string())
    ))
}

/// The first mapping of a library called `libjfrnative.so` in `maps` (the text of
/// `/proc/PID/maps`): its address range and its path, without the kernel's ` (deleted)`.
fn mapped_agent(maps: &str) -> Option<(&str, &str)> {
    maps.lines().find_map(|line| {
        let mut fields = line.splitn(6, ' ');
        let range = fields.next()?;
        let offset = fields.nth(1)?;
        let path = fields.nth(2)?.trim_start();
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        let named = Path::new(path).file_name() == Some(OsStr::new(crate::session::AGENT_FILE));
        (named && path.starts_with('/') && u64::from_str_radix(offset, 16) == Ok(0))
            .then_some((range, path))
    })
}

/// The path of the agent the JVM `pid` has loaded already (as its maps show it), if it is this
/// very agent (`bytes`); an error if it runs another build of it, which a second load beside it
/// would fight.
fn loaded_agent(pid: u32, bytes: &[u8]) -> Result<Option<PathBuf>, String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| format!("cannot read the maps of process {pid}: {e}"))?;
    let Some((range, path)) = mapped_agent(&maps) else {
        return Ok(None);
    };
    // The mapped file itself, even if deleted (root only: an unprivileged attach to a JVM of
    // its own user trusts the name, as the JVM is its own).
    let mapped = match std::fs::File::open(format!("/proc/{pid}/map_files/{range}")) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Ok(Some(as_the_jvm_sees(pid, Path::new(path))))
        }
        Err(e) => {
            return Err(format!(
                "cannot read the agent JVM {pid} has loaded ({path}): {e}"
            ))
        }
    };
    let mut theirs = Vec::with_capacity(bytes.len());
    mapped
        .take(bytes.len() as u64 + 1)
        .read_to_end(&mut theirs)
        .map_err(|e| format!("cannot read the agent JVM {pid} has loaded ({path}): {e}"))?;
    if theirs != bytes {
        return Err(format!(
            "the JVM {pid} has another build of the agent loaded already ({path}): an agent is \
             never unloaded, and a second one beside it would take the same signals; attach with \
             that build (--agent), or restart the JVM"
        ));
    }
    Ok(Some(as_the_jvm_sees(pid, Path::new(path))))
}

/// `path`, as this process reads it in the maps of process `pid`, as that process names it. The
/// kernel writes a mapping's path from the reader's root: where the JVM's root is a directory
/// of ours (a chroot), its paths start with that directory, which the JVM does not see.
fn as_the_jvm_sees(pid: u32, path: &Path) -> PathBuf {
    let root = std::fs::read_link(format!("/proc/{pid}/root")).unwrap_or_else(|_| "/".into());
    within(&root, path)
}

/// `path` with the directory `root` taken off its start (`/` then stands for `root`).
fn within(root: &Path, path: &Path) -> PathBuf {
    match path.strip_prefix(root) {
        Ok(rest) if root != Path::new("/") => Path::new("/").join(rest),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_needs_no_stage() {
        let me = Target::of(std::process::id()).unwrap();
        assert!(!me.other_root);
        assert!(!me.needs_stage());
    }

    #[test]
    fn an_agent_mapped_already_is_found_by_its_path_deleted_or_not() {
        let maps = "\
55d0-55d1 r--p 00000000 08:01 12 /usr/lib/jvm/java-17/bin/java
7f00-7f10 r--p 00000000 00:2a 99 /tmp/jfrnative-0123/libjfrnative.so (deleted)
7f10-7f20 r-xp 00010000 00:2a 99 /tmp/jfrnative-0123/libjfrnative.so (deleted)
";
        assert_eq!(
            mapped_agent(maps),
            Some(("7f00-7f10", "/tmp/jfrnative-0123/libjfrnative.so"))
        );
        let spaced = "7f00-7f10 r--p 00000000 00:2a 99   /opt/my dir/libjfrnative.so\n";
        assert_eq!(
            mapped_agent(spaced),
            Some(("7f00-7f10", "/opt/my dir/libjfrnative.so"))
        );
        assert_eq!(
            mapped_agent("7f00-7f10 r--p 00000000 00:2a 99 /x/libother.so\n"),
            None
        );
        assert_eq!(loaded_agent(std::process::id(), b"agent"), Ok(None));
    }

    #[test]
    fn a_chrooted_jvms_paths_lose_the_chroot() {
        let root = Path::new("/srv/box/root");
        assert_eq!(
            within(
                root,
                Path::new("/srv/box/root/tmp/jfrnative-1/libjfrnative.so")
            ),
            PathBuf::from("/tmp/jfrnative-1/libjfrnative.so")
        );
        // As a container runtime's own mount namespace shows them: already the JVM's.
        assert_eq!(
            within(root, Path::new("/tmp/jfrnative-1/libjfrnative.so")),
            PathBuf::from("/tmp/jfrnative-1/libjfrnative.so")
        );
        assert_eq!(
            within(Path::new("/"), Path::new("/tmp/x")),
            PathBuf::from("/tmp/x")
        );
    }
}
