//! A JVM in a container-like sandbox (`testdata/sandbox/run.sh`: its own PID and mount
//! namespaces, a chroot of bind mounts, a private `/tmp`), for the attach tests. Needs root,
//! `unshare` and `chroot` (util-linux, coreutils); [`Sandbox::available`] says whether they are
//! here. The JVM runs until the [`Sandbox`] is dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::workload::repo;

/// A JVM running in a sandbox; killed, with its namespaces, when dropped.
pub struct Sandbox {
    child: Child,
    /// The JVM's process id as this process sees it.
    pub pid: u32,
    /// Its output (stdout and stderr).
    pub log: PathBuf,
}

impl Sandbox {
    /// Whether sandboxes can be made here: root, `unshare` and `chroot`. When not, says why on
    /// stderr; missing tools fail the tests in CI ([`crate::jdk::jdks_required`]), where root
    /// is available.
    pub fn available() -> bool {
        let root = is_root();
        let tools = ["unshare", "chroot"].iter().all(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        if root && tools {
            return true;
        }
        let why = if root {
            "unshare or chroot is missing"
        } else {
            "they need root"
        };
        if crate::jdk::jdks_required() {
            panic!("the container sandbox tests cannot run: {why}");
        }
        eprintln!("note: the container sandbox tests are skipped: {why}");
        false
    }

    /// Runs `java` (a path as the sandbox sees it: the host's `/usr` is mounted) with `args` as
    /// `user` (`uid:gid`) in a sandbox rooted at `root`, with each (host dir, path inside) of
    /// `binds` mounted, and `/tmp` read-only when `read_only_tmp`. Waits until the JVM runs.
    pub fn start(
        root: &Path,
        user: &str,
        read_only_tmp: bool,
        binds: &[(&Path, &str)],
        java: &Path,
        args: &[String],
    ) -> Sandbox {
        let tmp = if read_only_tmp { "ro" } else { "rw" };
        Sandbox::start_with_tmp(root, user, tmp, binds, java, args)
    }

    /// As [`Sandbox::start`], with `/tmp` as `tmp` says: `rw`, `ro`, or `link:/DIR` (an absolute
    /// symbolic link to `/DIR`, a writable tmpfs, as a hostile container's root can make it).
    pub fn start_with_tmp(
        root: &Path,
        user: &str,
        tmp: &str,
        binds: &[(&Path, &str)],
        java: &Path,
        args: &[String],
    ) -> Sandbox {
        std::fs::create_dir_all(root).unwrap();
        let token = format!("{}-{}", std::process::id(), root.display());
        let log = root.with_extension("log");
        let out = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join("testdata/sandbox/run.sh"))
            .arg(root)
            .arg(user)
            .arg(tmp);
        for (host, inside) in binds {
            cmd.arg(format!("{}:{inside}", host.display()));
        }
        cmd.arg("--")
            .arg(java)
            .arg(format!("-Djfrnative.sandbox={token}"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let mut child = cmd.spawn().expect("start the sandbox");
        let started = Instant::now();
        let marker = format!("-Djfrnative.sandbox={token}");
        let pid = loop {
            if let Some(pid) = find_process(&marker) {
                break Some(pid);
            }
            if started.elapsed() > Duration::from_secs(30) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        match pid {
            Some(pid) => Sandbox { child, pid, log },
            None => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the sandboxed JVM did not start: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            }
        }
    }

    /// The names in the JVM's own `/tmp`.
    pub fn tmp_entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{}/root/tmp", self.pid))
            .map(|d| {
                d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // The JVM is PID 1 of its namespace: killing it ends the namespace and its mounts.
        let _ = Command::new("kill")
            .args(["-9", &self.pid.to_string()])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether this process's effective uid is 0 (`/proc/self/status`, second `Uid:` field).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}

/// The process whose command line holds `marker` and whose program is a `java`.
fn find_process(marker: &str) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_java = args
            .first()
            .is_some_and(|a| a.ends_with(b"/java") || *a == b"java");
        if is_java && args.contains(&marker.as_bytes()) {
            return Some(pid);
        }
    }
    None
}
