//! `jfrnative attach` as root against targets that plant things for it: a JVM in a
//! container-like sandbox (`testdata/sandbox/run.sh`) as uid 65534 or as root inside, and a JVM
//! of another local user (65534) on the host, whose `/tmp` is the host's. Each case plants one
//! thing where the attach goes (what the container's, or the other user's, own rights allow),
//! with a victim on the host beside it: a root-owned 0600 file of known content, in a
//! root-owned 0700 directory, that neither the container nor the user can reach. Each checks:
//!
//! - the victim keeps its content, owner and mode, and its directory holds nothing new;
//! - no byte of the victim reaches the `-o` output, the files beside it or `OUT.libs`;
//! - the attach either works (by other names) or refuses with a line naming the planted path.
//!
//! The planted names the CLI used before it made its names random (`jfrnative-agent-HASH`, HASH
//! of the agent's bytes) are computed here as an attacker would. `JFRNATIVE_CLI=PATH` runs the
//! cases with another `jfrnative` (its agent beside it): an older build, to see each case fail.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tests::jdk::{oracle_jdks, Jdk};
use tests::sandbox::Sandbox;
use tests::workload::{tool_binary, workload_dir};

/// The `jfrnative` under test: `JFRNATIVE_CLI`, else the workspace's.
fn jfrnative() -> PathBuf {
    std::env::var_os("JFRNATIVE_CLI")
        .filter(|p| !p.is_empty())
        .map_or_else(|| tool_binary("jfrnative"), PathBuf::from)
}

/// The name the agent's directory had in a JVM's `/tmp` before names were random: FNV-1a of
/// the agent's bytes, public to anyone who has the release.
fn old_agent_dir() -> String {
    let bytes = std::fs::read(jfrnative().with_file_name("libjfrnative.so")).unwrap();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    format!("jfrnative-agent-{h:016x}")
}

/// A host file nobody but root may touch: `/var/tmp/jfrnative-victim-PID-CASE/NAME`, mode
/// 0600 in a 0700 directory, holding a token no other file has.
struct Victim {
    dir: PathBuf,
    file: PathBuf,
    token: String,
}

impl Victim {
    fn plant(case: &str, name: &str) -> Victim {
        let dir = PathBuf::from(format!(
            "/var/tmp/jfrnative-victim-{}-{case}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let file = dir.join(name);
        let token = format!("JFRNATIVE-VICTIM-{case}-{}", std::process::id());
        std::fs::write(&file, &token).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        Victim { dir, file, token }
    }

    /// The victim as it was: content, owner, mode, and nothing else in its directory.
    fn assert_intact(&self, case: &str) {
        let meta = std::fs::symlink_metadata(&self.file).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid(), meta.mode() & 0o7777, meta.is_file()),
            (0, 0, 0o600, true),
            "{case}: the victim {} changed owner or mode",
            self.file.display()
        );
        assert_eq!(
            std::fs::read_to_string(&self.file).unwrap(),
            self.token,
            "{case}: the victim {} was overwritten",
            self.file.display()
        );
        let entries: Vec<_> = std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            entries.len(),
            1,
            "{case}: written into {}: {entries:?}",
            self.dir.display()
        );
    }

    /// No file under `paths` (files, or directories walked) holds the victim's token.
    fn assert_not_in(&self, case: &str, paths: &[PathBuf]) {
        let mut todo: Vec<PathBuf> = paths.to_vec();
        while let Some(path) = todo.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            } else if meta.is_file() {
                let mut bytes = Vec::new();
                std::fs::File::open(&path)
                    .unwrap()
                    .read_to_end(&mut bytes)
                    .unwrap();
                let found = bytes
                    .windows(self.token.len())
                    .any(|w| w == self.token.as_bytes());
                assert!(
                    !found,
                    "{case}: the victim's content is in {}",
                    path.display()
                );
            }
        }
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The files an attach with `-o out` leaves: the recording and the files beside it.
fn outputs_of(out: &Path) -> Vec<PathBuf> {
    let dir = out.parent().unwrap();
    let stem = out
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".jfr")
        .to_string();
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&stem))
        .collect()
}

fn attach(pid: u32, seconds: u32, output: &str) -> Output {
    Command::new(jfrnative())
        .env_remove("DEBUGINFOD_URLS")
        .arg("attach")
        .arg(pid.to_string())
        .args([
            "-d",
            &format!("{seconds}s"),
            "--attach-timeout",
            "20s",
            "-o",
            output,
        ])
        .output()
        .unwrap()
}

/// The attach worked, or refused naming `planted`.
fn assert_worked_or_named(case: &str, out: &Output, planted: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || stderr.contains(planted),
        "{case}: failed without naming {planted}: {stderr}"
    );
}

fn work_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-hostile-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A JDK whose files the sandbox has (it mounts the host's /usr).
fn sandbox_jdk() -> Jdk {
    oracle_jdks()
        .into_iter()
        .find(|j| j.home.starts_with("/usr/"))
        .expect("a JDK under /usr/ (Debian's JDK 17), which the sandbox mounts")
}

/// A copy of the workload (Burner and libburner.so) in `work/app/lib`, readable by all: the
/// app directory a case may rearrange.
fn app_copy(work: &Path) -> PathBuf {
    let app = work.join("app");
    let lib = app.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    for name in ["Burner.class", "libburner.so"] {
        std::fs::copy(workload_dir().join(name), lib.join(name)).unwrap();
    }
    for d in [&app, &lib] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    app
}

/// Burner in a sandbox as `user`, `/tmp` as `tmp` says, the app at `/opt/app`.
fn sandboxed_burner(work: &Path, user: &str, tmp: &str) -> Sandbox {
    assert!(
        Sandbox::available(),
        "the hostile attach tests need root, unshare and chroot"
    );
    let jdk = sandbox_jdk();
    let app = app_copy(work);
    Sandbox::start_with_tmp(
        &work.join("root"),
        user,
        tmp,
        &[(&app, "/opt/app")],
        &jdk.tool("java"),
        &[
            "-Djava.library.path=/opt/app/lib".into(),
            "-cp".into(),
            "/opt/app/lib".into(),
            "Burner".into(),
            "120".into(),
            "h-native:native".into(),
        ],
    )
}

/// Waits until process `pid` has a thread called `name` (at most 60 s).
fn wait_for_thread(pid: u32, name: &str) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten();
        if tasks
            .flatten()
            .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("process {pid} has no thread {name} after 60 s");
}

/// Makes `path` (reached from here) belong to uid and gid 65534, as what that user planted.
fn as_nobody(path: &Path) {
    std::os::unix::fs::lchown(path, Some(65534), Some(65534)).unwrap();
}

/// `..` enough times to climb from any directory of these tests to the host's `/`.
fn climb() -> String {
    "../".repeat(24)
}

/// What one case plants in a `/tmp` (reached from here as `tmp`) at the agent's old path
/// (its directory, or the file in it).
#[derive(Clone, Copy, Debug)]
enum Plant {
    /// The agent's file: an absolute link to the victim.
    FileAbsolute,
    /// The agent's file: a relative link that climbs with `..` to the victim.
    FileClimbing,
    /// The agent's directory: an absolute link to the victim's directory.
    DirAbsolute,
    /// The agent's directory: a climbing link to the victim's directory.
    DirClimbing,
    /// The agent's directory, made in advance (empty, the user's).
    DirMadeBefore,
}

impl Plant {
    const ALL: [Plant; 5] = [
        Plant::FileAbsolute,
        Plant::FileClimbing,
        Plant::DirAbsolute,
        Plant::DirClimbing,
        Plant::DirMadeBefore,
    ];

    /// Plants it in `tmp`; returns the planted path as the JVM sees it.
    fn plant(self, tmp: &Path, victim: &Victim) -> String {
        let dir_name = old_agent_dir();
        let dir = tmp.join(&dir_name);
        let _ = std::fs::remove_file(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let climbing = |to: &Path| PathBuf::from(format!("{}{}", climb(), to.display()));
        let file = match self {
            Plant::FileAbsolute | Plant::FileClimbing | Plant::DirMadeBefore => {
                std::fs::create_dir(&dir).unwrap();
                as_nobody(&dir);
                Some(dir.join("libjfrnative.so"))
            }
            Plant::DirAbsolute => {
                std::os::unix::fs::symlink(&victim.dir, &dir).unwrap();
                as_nobody(&dir);
                None
            }
            Plant::DirClimbing => {
                std::os::unix::fs::symlink(climbing(&victim.dir), &dir).unwrap();
                as_nobody(&dir);
                None
            }
        };
        match (self, file) {
            (Plant::FileAbsolute, Some(f)) => {
                std::os::unix::fs::symlink(&victim.file, &f).unwrap();
                as_nobody(&f);
                format!("/tmp/{dir_name}/libjfrnative.so")
            }
            (Plant::FileClimbing, Some(f)) => {
                std::os::unix::fs::symlink(climbing(&victim.file), &f).unwrap();
                as_nobody(&f);
                format!("/tmp/{dir_name}/libjfrnative.so")
            }
            _ => format!("/tmp/{dir_name}"),
        }
    }

    /// What must hold of the planted thing afterwards: a directory made in advance is still
    /// empty (nothing was written through it).
    fn assert_untouched(self, tmp: &Path) {
        if let Plant::DirMadeBefore = self {
            let dir = tmp.join(old_agent_dir());
            let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
            assert!(
                entries.is_empty(),
                "{self:?}: written into {}",
                dir.display()
            );
        }
    }

    fn remove(self, tmp: &Path) {
        let dir = tmp.join(old_agent_dir());
        let _ = std::fs::remove_file(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Every [`Plant`] in turn in the `/tmp` reached as `tmp`, each with its own victim, one attach
/// each into the JVM `pid`.
fn attach_past_every_plant(pid: u32, tmp: &Path, work: &Path, place: &str) {
    for plant in Plant::ALL {
        let case = format!("{place}-{plant:?}");
        let victim = Victim::plant(&case, "secret");
        let planted = plant.plant(tmp, &victim);
        let out = work.join(format!("{case}.jfr"));
        let result = attach(pid, 2, out.to_str().unwrap());
        victim.assert_intact(&case);
        victim.assert_not_in(&case, &outputs_of(&out));
        plant.assert_untouched(tmp);
        assert_worked_or_named(&case, &result, &planted);
        plant.remove(tmp);
    }
}

#[test]
fn links_planted_at_the_agents_path_in_a_container_reach_no_host_file() {
    // The JVM as an unprivileged user inside, and as the container's root.
    for (user, place) in [
        ("65534:65534", "container-nobody"),
        ("0:0", "container-root"),
    ] {
        let work = work_dir(place);
        let sandbox = sandboxed_burner(&work, user, "rw");
        let tmp = PathBuf::from(format!("/proc/{}/root/tmp", sandbox.pid));
        attach_past_every_plant(sandbox.pid, &tmp, &work, place);
        drop(sandbox);
        let _ = std::fs::remove_dir_all(&work);
    }
}

#[test]
fn links_planted_in_the_hosts_tmp_by_the_jvms_user_reach_no_host_file() {
    assert!(Sandbox::available(), "the hostile attach tests need root");
    let jdk = sandbox_jdk();
    let work = work_dir("host-plants");
    let app = app_copy(&work);
    let mut jvm = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(jdk.tool("java"))
        .arg(format!("-Djava.library.path={}", app.join("lib").display()))
        .arg("-cp")
        .arg(app.join("lib"))
        .args(["Burner", "120", "h-native:native"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    attach_past_every_plant(jvm.id(), Path::new("/tmp"), &work, "host");
    let _ = jvm.kill();
    let _ = jvm.wait();
    let _ = std::fs::remove_dir_all(&work);
}

/// Replaces, while `run` is set, every file of a stage in `tmp` that `pick` chooses by a link
/// to `to` (as the JVM's user: a symbolic link made beside it and renamed over it); counts the
/// replacements.
fn replace_stage_files(
    tmp: PathBuf,
    to: PathBuf,
    pick: fn(&Path) -> bool,
    run: Arc<AtomicBool>,
    count: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while run.load(Ordering::Acquire) {
            let stages = std::fs::read_dir(&tmp).into_iter().flatten().flatten();
            for stage in stages.filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("jfrnative-") && !name.starts_with("jfrnative-agent-")
            }) {
                let mut todo = vec![stage.path()];
                while let Some(dir) = todo.pop() {
                    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                        let path = entry.path();
                        let Ok(kind) = entry.file_type() else {
                            continue;
                        };
                        if kind.is_dir() {
                            todo.push(path);
                        } else if kind.is_file() && pick(&path) {
                            let link = path.with_extension("planted");
                            if std::os::unix::fs::symlink(&to, &link).is_ok() {
                                let _ = std::os::unix::fs::lchown(&link, Some(65534), Some(65534));
                                if std::fs::rename(&link, &path).is_ok() {
                                    count.fetch_add(1, Ordering::AcqRel);
                                }
                            }
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

/// Whether `path` is a recording file of a stage (a single file, or a finished chunk file).
fn is_recording_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jfr")
}

/// An attach into the JVM `pid` (its `/tmp` reached as `tmp`) whose recording files are
/// replaced by links to a victim while it records, into `-o output`.
fn attach_with_recording_links(case: &str, pid: u32, tmp: &Path, output: &str, climbing: bool) {
    let victim = Victim::plant(case, "secret");
    let to = if climbing {
        PathBuf::from(format!("{}{}", climb(), victim.file.display()))
    } else {
        victim.file.clone()
    };
    let run = Arc::new(AtomicBool::new(true));
    let count = Arc::new(AtomicUsize::new(0));
    let planter = replace_stage_files(
        tmp.to_path_buf(),
        to,
        is_recording_file,
        run.clone(),
        count.clone(),
    );
    let result = attach(pid, 3, output);
    run.store(false, Ordering::Release);
    planter.join().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        count.load(Ordering::Acquire) > 0,
        "{case}: no recording file was there to replace: {stderr}"
    );
    victim.assert_intact(case);
    let out = PathBuf::from(output.trim_end_matches('/'));
    victim.assert_not_in(case, &outputs_of(&out));
    // Worked, or stopped on a line that names the planted file in the stage (the agent in the
    // JVM may itself stop on it, or the copy skip it).
    let last = stderr.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(
        result.status.success() || (last.contains("/tmp/jfrnative-") && last.contains(".jfr")),
        "{case}: {stderr}"
    );
}

#[test]
fn recording_files_replaced_by_links_while_recording_are_never_read() {
    let work = work_dir("recording-links");
    let sandbox = sandboxed_burner(&work, "65534:65534", "rw");
    let tmp = PathBuf::from(format!("/proc/{}/root/tmp", sandbox.pid));
    let file = work.join("file.jfr");
    let chunks = work.join("chunks");
    attach_with_recording_links("file-abs", sandbox.pid, &tmp, file.to_str().unwrap(), false);
    let dir = format!("{}/", chunks.display());
    attach_with_recording_links("chunks-climbing", sandbox.pid, &tmp, &dir, true);
    drop(sandbox);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn a_containers_tmp_that_links_out_is_resolved_inside_the_container() {
    let work = work_dir("tmp-link");
    // The container's /tmp is a link to /NAME, an absolute path that, from the host, names a
    // host directory holding a victim.
    let name = format!("/jfrnative-hostile-ctmp-{}", std::process::id());
    let host_dir = PathBuf::from(&name);
    let _ = std::fs::remove_dir_all(&host_dir);
    std::fs::create_dir_all(&host_dir).unwrap();
    std::fs::set_permissions(&host_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(host_dir.join("secret"), "host").unwrap();
    let sandbox = sandboxed_burner(&work, "0:0", &format!("link:{name}"));
    // Everything that appears in the host's directory while the attach runs (an attach that
    // wrote there and removed it at the end is caught too).
    let run = Arc::new(AtomicBool::new(true));
    let seen = {
        let (run, host_dir) = (run.clone(), host_dir.clone());
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while run.load(Ordering::Acquire) {
                for e in std::fs::read_dir(&host_dir).into_iter().flatten().flatten() {
                    seen.insert(e.file_name().to_string_lossy().into_owned());
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            seen
        })
    };
    let out = work.join("linked.jfr");
    let result = attach(sandbox.pid, 2, out.to_str().unwrap());
    run.store(false, Ordering::Release);
    let seen: Vec<String> = seen.join().unwrap().into_iter().collect();
    drop(sandbox);
    let _ = std::fs::remove_dir_all(&host_dir);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(seen, ["secret"], "written into the host's {name}: {stderr}");
    assert!(result.status.success(), "{stderr}");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn a_library_that_links_out_after_loading_is_not_kept() {
    let work = work_dir("library-link");
    let sandbox = sandboxed_burner(&work, "65534:65534", "rw");
    let victim = Victim::plant("library", "libburner.so");
    let app = work.join("app");
    let tmp = PathBuf::from(format!("/proc/{}/root/tmp", sandbox.pid));
    // Once the agent has read the JVM's maps (a stage exists, and a moment after), the loaded
    // library's directory becomes a link to the victim's directory.
    let swapper = {
        let (app, tmp, to) = (app.clone(), tmp.clone(), victim.dir.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(30) {
                let staged = std::fs::read_dir(&tmp)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("jfrnative-"));
                if staged {
                    std::thread::sleep(Duration::from_millis(1500));
                    std::fs::rename(app.join("lib"), app.join("lib.old")).unwrap();
                    std::os::unix::fs::symlink(&to, app.join("lib")).unwrap();
                    return true;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            false
        })
    };
    let out = work.join("lib.jfr");
    let result = attach(sandbox.pid, 4, out.to_str().unwrap());
    assert!(
        swapper.join().unwrap(),
        "the library's directory was never swapped"
    );
    drop(sandbox);
    let stderr = String::from_utf8_lossy(&result.stderr);
    // The premise: the recording names the library at the path that now links out.
    let recording = std::fs::read(&out).unwrap_or_default();
    let path = b"/opt/app/lib/libburner.so";
    assert!(
        recording.windows(path.len()).any(|w| w == path),
        "the recording does not name /opt/app/lib/libburner.so: {stderr}"
    );
    victim.assert_intact("library");
    victim.assert_not_in("library", &outputs_of(&out));
    assert!(result.status.success(), "{stderr}");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn an_attach_socket_served_by_another_process_is_refused() {
    let work = work_dir("fake-socket");
    let sandbox = sandboxed_burner(&work, "65534:65534", "rw");
    // Once the JVM runs main (at its start it removes a stale socket of its name).
    wait_for_thread(sandbox.pid, "h-native");
    // The JVM's socket would be /tmp/.java_pidN, N its pid in its namespace. Made before the
    // JVM opens its own, by another process, answering a fake success to anything.
    let ns_pid = namespace_pid(sandbox.pid);
    let name = format!("/tmp/.java_pid{ns_pid}");
    let socket = PathBuf::from(format!("/proc/{}/root{name}", sandbox.pid));
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    as_nobody(&socket);
    let answered = Arc::new(AtomicUsize::new(0));
    {
        let answered = answered.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                use std::io::Write;
                if stream.read(&mut [0u8; 4096]).is_ok_and(|n| n > 0) {
                    answered.fetch_add(1, Ordering::AcqRel);
                }
                let _ = stream.write_all(b"0\nreturn code: 0\n");
            }
        });
    }
    let out = work.join("fake.jfr");
    let started = Instant::now();
    let result = attach(sandbox.pid, 2, out.to_str().unwrap());
    let took = started.elapsed();
    drop(sandbox);
    let stderr = String::from_utf8_lossy(&result.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(
        lines
            .last()
            .is_some_and(|l| l.contains("/tmp/.java_pid1") && l.contains("refused")),
        "{stderr}"
    );
    assert_eq!(
        answered.load(Ordering::Acquire),
        0,
        "a request reached the fake socket"
    );
    eprintln!("refused in {took:.1?}");
    let _ = std::fs::remove_dir_all(&work);
}

/// The JVM's pid in its own PID namespace (the last `NSpid` value).
fn namespace_pid(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap()
        .to_string()
}

#[test]
fn a_link_planted_at_the_attach_trigger_is_never_written() {
    // The container's root plants `.attach_pidN` as an absolute link to a host file, in the
    // JVM's working directory and in its /tmp, before anything attached to it.
    let work = work_dir("trigger-link");
    let sandbox = sandboxed_burner(&work, "0:0", "rw");
    wait_for_thread(sandbox.pid, "h-native");
    let victim = Victim::plant("trigger", "secret");
    let name = format!(".attach_pid{}", namespace_pid(sandbox.pid));
    let planted: Vec<PathBuf> = ["cwd", "root/tmp"]
        .iter()
        .map(|d| PathBuf::from(format!("/proc/{}/{d}/{name}", sandbox.pid)))
        .collect();
    for link in &planted {
        std::os::unix::fs::symlink(&victim.file, link).unwrap();
    }
    let out = work.join("trigger.jfr");
    let result = attach(sandbox.pid, 2, out.to_str().unwrap());
    drop(sandbox);
    victim.assert_intact("trigger");
    victim.assert_not_in("trigger", &outputs_of(&out));
    assert_worked_or_named("trigger", &result, &name);
    let _ = std::fs::remove_dir_all(&work);
}

/// The copies of libraries an attach writes as root beside the recording (`OUT.jfr.libs`): a
/// link planted at that name by a user who can write beside the output, pointing at the
/// victim's directory, is removed, never followed; and inside the container, the JVM's user
/// plants, in the agent's own kept libraries in the stage (`NAME.libs`), a link to the victim,
/// which is never read.
#[test]
fn planted_links_at_the_kept_libraries_are_never_followed() {
    let work = work_dir("kept-libs");
    let sandbox = sandboxed_burner(&work, "65534:65534", "rw");
    let victim = Victim::plant("kept-libs", "libburner.so");
    let out = work.join("kept.jfr");
    let kept = work.join("kept.jfr.libs");
    std::os::unix::fs::symlink(&victim.dir, &kept).unwrap();
    let tmp = PathBuf::from(format!("/proc/{}/root/tmp", sandbox.pid));
    // Once the stage exists, the JVM's user puts a link to the victim where the agent keeps
    // its libraries (the agent keeps none of its own here: the burner's library is not in a
    // temporary directory).
    let planter = {
        let (tmp, to) = (tmp.clone(), victim.file.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            // Long enough for the first attach of a test process, which builds the tools.
            while started.elapsed() < Duration::from_secs(300) {
                let stage = std::fs::read_dir(&tmp)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .find(|e| e.file_name().to_string_lossy().starts_with("jfrnative-"));
                if let Some(stage) = stage {
                    std::thread::sleep(Duration::from_millis(500));
                    let libs = stage.path().join("kept.jfr.libs/tmp");
                    std::fs::create_dir_all(&libs).unwrap();
                    std::os::unix::fs::symlink(&to, libs.join("libplanted.so")).unwrap();
                    // As the container's user made it.
                    for p in [stage.path().join("kept.jfr.libs"), libs.clone()] {
                        std::os::unix::fs::lchown(&p, Some(65534), Some(65534)).unwrap();
                    }
                    std::os::unix::fs::lchown(libs.join("libplanted.so"), Some(65534), Some(65534))
                        .unwrap();
                    // And a plain file of that user: copied, into a directory of our own.
                    std::fs::write(libs.join("liblegit.so"), b"legit").unwrap();
                    std::os::unix::fs::lchown(libs.join("liblegit.so"), Some(65534), Some(65534))
                        .unwrap();
                    return true;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            false
        })
    };
    let result = attach(sandbox.pid, 4, out.to_str().unwrap());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        planter.join().unwrap(),
        "the stage never appeared: {stderr}"
    );
    drop(sandbox);
    assert!(result.status.success(), "{stderr}");
    victim.assert_intact("kept-libs");
    victim.assert_not_in("kept-libs", &outputs_of(&out));
    let meta = std::fs::symlink_metadata(&kept).unwrap();
    assert!(meta.is_dir() && meta.mode() & 0o777 == 0o700, "{meta:?}");
    assert!(!kept.join("tmp/libplanted.so").exists(), "{stderr}");
    assert_eq!(
        std::fs::read(kept.join("tmp/liblegit.so")).unwrap(),
        b"legit",
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&work);
}
