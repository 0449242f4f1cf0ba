//! Recording a JVM that cannot see our files: one in a container with a root filesystem of its
//! own (another mount namespace), or one that runs as another user, which cannot read our
//! agent or write our output directory. The agent and the recording are staged inside the
//! JVM's own `/tmp`, reached from here through `/proc/PID/root/tmp`, and owned by the JVM's
//! user:
//!
//! - the agent: `/tmp/jfrnative-agent-HASH/libjfrnative.so`, HASH from the library's bytes. The
//!   path stays the same for the same agent, because a JVMTI agent is never unloaded and the
//!   dynamic linker takes a library it has loaded already by its path: attaching twice must
//!   find the first copy, not load a second one beside it. Removed when the recording ends
//!   (the JVM keeps its mapping).
//! - the recording and the agent's status file: `/tmp/jfrnative-PID-N/`, read from here while
//!   the JVM records, copied to the `-o` path at the end, then removed.
//!
//! Nothing is left in the JVM's `/tmp` after a recording but the attach socket the JVM itself
//! keeps (`.java_pidPID`, as after `jcmd`).

use std::hash::Hasher;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

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

/// `path` (absolute, as process `pid` sees it) as this process reaches it, through
/// `/proc/PID/root`.
pub fn path_in_root_of(pid: u32, path: &Path) -> PathBuf {
    let relative = path.strip_prefix("/").unwrap_or(path);
    PathBuf::from(format!("/proc/{pid}/root")).join(relative)
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

    /// `path` (absolute, as the JVM sees it) as this process reaches it.
    pub fn host_path(&self, path: &Path) -> PathBuf {
        path_in_root_of(self.pid, path)
    }
}

/// A staged agent and recording directory in a JVM's `/tmp`; removed when dropped.
#[derive(Debug)]
pub struct Stage {
    target: Target,
    /// The agent, as the JVM sees it.
    pub agent: PathBuf,
    /// The recording's directory, as the JVM sees it.
    pub dir: PathBuf,
}

/// A short, stable name of a file's bytes (FNV-1a, 64 bits, in hex).
fn content_hash(bytes: &[u8]) -> String {
    struct Fnv(u64);
    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.write(bytes);
    format!("{:016x}", h.finish())
}

impl Stage {
    /// Copies `agent` into the JVM's `/tmp` and makes the recording's directory there, both
    /// owned by the JVM's user. The error names the path and says why (a read-only `/tmp`, no
    /// room, ...).
    pub fn create(target: &Target, agent: &Path) -> Result<Stage, String> {
        let bytes =
            std::fs::read(agent).map_err(|e| format!("cannot read {}: {e}", agent.display()))?;
        let agent_dir = PathBuf::from(format!("/tmp/jfrnative-agent-{}", content_hash(&bytes)));
        let dir = PathBuf::from(format!(
            "/tmp/jfrnative-{}-{}",
            std::process::id(),
            target.pid
        ));
        let stage = Stage {
            target: target.clone(),
            agent: agent_dir.join("libjfrnative.so"),
            dir,
        };
        let fail = |what: &str, path: &Path, e: std::io::Error| {
            format!(
                "cannot {what} {} in the JVM's /tmp (reached as {}): {e}; the JVM {} must have a \
                 writable /tmp of its own for the agent and its recording",
                path.display(),
                target.host_path(path).display(),
                target.pid
            )
        };
        for d in [&agent_dir, &stage.dir] {
            stage
                .make_dir(d)
                .map_err(|e| fail("create the directory", d, e))?;
        }
        let host_agent = target.host_path(&stage.agent);
        std::fs::write(&host_agent, &bytes)
            .and_then(|()| stage.own(&host_agent, 0o755))
            .map_err(|e| fail("copy the agent to", &stage.agent, e))?;
        Ok(stage)
    }

    fn make_dir(&self, dir: &Path) -> std::io::Result<()> {
        let host = self.target.host_path(dir);
        match std::fs::create_dir(&host) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Ours only if it is a directory, not a link someone put there.
                let m = std::fs::symlink_metadata(&host)?;
                if !m.is_dir() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        "exists and is not a directory",
                    ));
                }
            }
            Err(e) => return Err(e),
        }
        self.own(&host, 0o700)
    }

    /// Gives `host` (a path of the stage, as we reach it) to the JVM's user, with `mode`.
    fn own(&self, host: &Path, mode: u32) -> std::io::Result<()> {
        std::fs::set_permissions(host, std::fs::Permissions::from_mode(mode))?;
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::chown(host, Some(self.target.uid), Some(self.target.gid))?;
        }
        Ok(())
    }

    /// Makes `jvm_dir` (a directory of the stage, as the JVM names it) for a directory
    /// recording, owned by the JVM's user.
    pub fn make_recording_dir(&self, jvm_dir: &Path) -> Result<(), String> {
        self.make_dir(jvm_dir).map_err(|e| {
            format!(
                "cannot create {} in the JVM's /tmp: {e}",
                self.target.host_path(jvm_dir).display()
            )
        })
    }

    /// A path of the recording's directory: as the JVM sees it, and as we reach it.
    pub fn path(&self, name: &str) -> (PathBuf, PathBuf) {
        let jvm = self.dir.join(name);
        let host = self.target.host_path(&jvm);
        (jvm, host)
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.target.host_path(&self.dir));
        if let Some(agent_dir) = self.agent.parent() {
            let _ = std::fs::remove_dir_all(self.target.host_path(agent_dir));
        }
    }
}

/// Keeps a copy of a staged recording (`from`, reached through the JVM's root) at `to` while
/// the JVM records: a directory's finished chunk files (`*.jfr`; the agent writes `.part` and
/// renames a chunk file once it is whole) as they appear, a single file at most every
/// [`Mirror::FILE_EVERY`] (each finished chunk in it is whole; the one being written is cut,
/// which readers take as the end of the file).
#[derive(Debug)]
pub struct Mirror {
    from: PathBuf,
    to: PathBuf,
    /// Chunk files copied already (a directory).
    copied: std::collections::BTreeSet<std::ffi::OsString>,
    /// The single file's length at its last copy, and when.
    file: Option<(u64, std::time::Instant)>,
}

impl Mirror {
    /// How often a single recording file is copied at most while it grows.
    pub const FILE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

    /// A mirror of `from` to `to`.
    pub fn new(from: &Path, to: &Path) -> Mirror {
        Mirror {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            copied: Default::default(),
            file: None,
        }
    }

    /// Copies what the agent finished since the last call (errors are left for
    /// [`Mirror::finish`]: the JVM may be gone).
    pub fn tick(&mut self) {
        let _ = self.copy(false);
    }

    /// The last copy, once the recording is over: everything there is.
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.copy(true)
    }

    fn copy(&mut self, last: bool) -> std::io::Result<()> {
        if self.from.is_dir() {
            std::fs::create_dir_all(&self.to)?;
            for entry in std::fs::read_dir(&self.from)? {
                let entry = entry?;
                let name = entry.file_name();
                let whole = Path::new(&name).extension().is_some_and(|e| e == "jfr");
                if !whole || self.copied.contains(&name) || !entry.file_type()?.is_file() {
                    continue;
                }
                copy_atomically(&entry.path(), &self.to.join(&name))?;
                self.copied.insert(name);
            }
            return Ok(());
        }
        let len = std::fs::metadata(&self.from)?.len();
        let due = match self.file {
            None => true,
            Some((copied, at)) => len != copied && at.elapsed() >= Self::FILE_EVERY,
        };
        if last || due {
            copy_atomically(&self.from, &self.to)?;
            self.file = Some((len, std::time::Instant::now()));
        }
        Ok(())
    }
}

/// Copies `from` to `to` through a temporary file beside `to`, so that `to` is never half
/// written.
fn copy_atomically(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut partial = to.as_os_str().to_owned();
    partial.push(".part");
    let partial = PathBuf::from(partial);
    std::fs::copy(from, &partial)?;
    std::fs::rename(&partial, to)
}

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
    paths.retain(|p| p.starts_with('/'));
    paths.sort_unstable();
    paths.dedup();
    paths
}

/// Copies `paths` (as the JVM `target` sees them) from its root to the same paths under
/// `root`, at most `bound` bytes in all (larger ones are left out, said in the result), so that
/// a recording can be symbolized after the JVM is gone (`jfr-symbolize --sysroot ROOT`).
/// Returns (files copied, bytes, files left out).
pub fn keep_libraries(
    target: &Target,
    paths: &[String],
    root: &Path,
    bound: u64,
) -> (usize, u64, Vec<String>) {
    let (mut copied, mut bytes, mut left_out) = (0, 0u64, Vec::new());
    for path in paths {
        let from = target.host_path(Path::new(path));
        let Ok(meta) = std::fs::metadata(&from) else {
            continue;
        };
        if bytes + meta.len() > bound {
            left_out.push(path.clone());
            continue;
        }
        let to = root.join(path.trim_start_matches('/'));
        let done = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::copy(&from, &to));
        if done.is_ok() {
            copied += 1;
            bytes += meta.len();
        }
    }
    (copied, bytes, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bytes_get_the_same_name_and_others_another() {
        assert_eq!(content_hash(b"agent"), content_hash(b"agent"));
        assert_ne!(content_hash(b"agent"), content_hash(b"agent2"));
        assert_eq!(content_hash(b"").len(), 16);
    }

    #[test]
    fn this_process_needs_no_stage_and_reaches_its_own_paths() {
        let me = Target::of(std::process::id()).unwrap();
        assert!(!me.other_root);
        assert!(!me.needs_stage());
        assert_eq!(
            me.host_path(Path::new("/tmp/x")),
            PathBuf::from(format!("/proc/{}/root/tmp/x", std::process::id()))
        );
    }

    #[test]
    fn libraries_are_kept_at_their_paths_within_the_bound() {
        let me = Target::of(std::process::id()).unwrap();
        let root = std::env::temp_dir().join(format!("jfrnative-keep-{}", std::process::id()));
        let exe = std::env::current_exe().unwrap().display().to_string();
        let paths = vec![exe.clone(), "/nonexistent/libx.so".to_string()];
        let (copied, bytes, left_out) = keep_libraries(&me, &paths, &root, 1 << 40);
        assert_eq!((copied, left_out.len()), (1, 0));
        let kept = root.join(exe.trim_start_matches('/'));
        assert_eq!(std::fs::metadata(&kept).unwrap().len(), bytes);
        let _ = std::fs::remove_dir_all(&root);
        let (copied, bytes, left_out) = keep_libraries(&me, &paths, &root, 0);
        assert_eq!((copied, bytes), (0, 0));
        assert_eq!(left_out, [exe]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
