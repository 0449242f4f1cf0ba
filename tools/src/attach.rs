//! Loading an agent into a running HotSpot JVM through its attach mechanism, without `jcmd`:
//! the same protocol `jcmd PID JVMTI.agent_load` and the JDK's `VirtualMachine.loadAgentPath`
//! use on Linux.
//!
//! 1. If the JVM's attach socket `/tmp/.java_pid<PID>` does not exist yet, create the file
//!    `.attach_pid<PID>` in the JVM's working directory (or its `/tmp`) and send it SIGQUIT:
//!    HotSpot then starts its attach listener, which creates the socket. SIGQUIT is sent only
//!    to a process that has `libjvm.so` mapped: to any other process it is fatal.
//! 2. Connect, send `1\0load\0<library>\0true\0<options>\0` (protocol version 1, the `load`
//!    operation with an absolute library path), read the reply to the end: the first line is
//!    the operation's status, then `return code: N` is what `Agent_OnAttach` returned.
//!
//! The JVM's files are found inside its root, held by descriptor ([`crate::confined`]): the
//! socket and the trigger are resolved there and never through a link; the trigger is created
//! with `O_EXCL` as the JVM's user; the socket must be the JVM's user's, and its peer
//! (`SO_PEERCRED`) the JVM itself. The reply is bounded in size and time, and only shown. The
//! PID inside the JVM's own PID namespace (`NSpid`) names the files.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::sys::stat::SFlag;

use crate::confined::root::JvmRoot;

/// Why an attach failed, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachError(pub String);

impl std::fmt::Display for AttachError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AttachError {}

fn fail<T>(message: impl Into<String>) -> Result<T, AttachError> {
    Err(AttachError(message.into()))
}

/// What the JVM answered to `load`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadReply {
    /// `Agent_OnAttach`'s return value (0 = accepted).
    pub agent_code: i32,
    /// The whole reply text.
    pub text: String,
}

/// The process's PID inside its own PID namespace (last `NSpid` value), or `pid`.
fn namespace_pid(pid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|l| l.split_whitespace().last().and_then(|v| v.parse().ok()))
        })
        .unwrap_or(pid)
}

/// Whether process `pid` has exited and waits to be reaped (state `Z` or `X`): its maps are
/// then empty, which must not read as "not a JVM".
fn has_exited(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("State:"))
            .is_some_and(|state| matches!(state.trim_start().chars().next(), Some('Z' | 'X')))
    })
}

/// Whether process `pid` runs a program called `java` (its executable's name): a launcher
/// that has not loaded libjvm yet is a JVM still starting, not "not a JVM".
fn runs_java_launcher(pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .is_ok_and(|exe| exe.file_name().is_some_and(|n| n == "java"))
}

/// Whether process `pid` catches SIGQUIT (bit 3 of `SigCgt` in `/proc/PID/status`). HotSpot
/// installs its handler during start-up and never with `-Xrs`; until then SIGQUIT would end
/// the process (and dump its core) instead of waking the attach listener.
fn catches_sigquit(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| mask & (1 << (nix::sys::signal::Signal::SIGQUIT as u32 - 1)) != 0)
    })
}

/// How often a starting JVM is looked at again.
const START_POLL: Duration = Duration::from_millis(50);

/// Checks that `pid` is a running HotSpot JVM this user may attach to. A `java` launcher that
/// has not mapped libjvm yet (a JVM started a moment ago) is waited for, up to `timeout`.
pub fn check_target(pid: u32, timeout: Duration) -> Result<(), AttachError> {
    let started = Instant::now();
    let maps = loop {
        let maps = match std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return fail(format!("no process {pid} is running"))
            }
            Err(e) => {
                return fail(format!(
                    "cannot inspect process {pid} ({e}): attach as the user the JVM runs as"
                ))
            }
        };
        let starting = !maps.lines().any(|l| l.ends_with("/libjvm.so"))
            && !has_exited(pid)
            && runs_java_launcher(pid);
        if !starting || started.elapsed() >= timeout {
            break maps;
        }
        std::thread::sleep(START_POLL);
    };
    if has_exited(pid) {
        return fail(format!("process {pid} has exited"));
    }
    if !maps.lines().any(|l| l.ends_with("/libjvm.so")) {
        return fail(format!(
            "process {pid} is not a HotSpot JVM (it has no libjvm.so mapped); \
             `jps -l` or `jcmd` lists the JVMs"
        ));
    }
    // HotSpot takes an attach from its own user or from root
    // (`matches_effective_uid_and_gid_or_root`); root stages the agent where the JVM's user
    // can read it (crate::stage).
    let me = nix::unistd::geteuid().as_raw();
    match crate::stage::process_ids(pid).map(|(uid, _)| uid) {
        Some(uid) if uid != me && me != 0 => fail(format!(
            "the JVM {pid} runs as uid {uid} and this command as uid {me}: HotSpot accepts an \
             attach only from its own user or root; run this as that user (sudo -u) or as root"
        )),
        _ => Ok(()),
    }
}

/// The JVM's attach socket `/tmp/.java_pidNSPID`, resolved inside its root: an `O_PATH`
/// descriptor of the socket itself (never through a link), which must be a socket of the JVM's
/// user. `Ok(None)` while there is none.
fn find_socket(
    root: &JvmRoot,
    target: &crate::stage::Target,
    path: &Path,
) -> Result<Option<OwnedFd>, AttachError> {
    let fd = match root.resolve(path, OFlag::O_PATH | OFlag::O_NOFOLLOW) {
        Ok(fd) => fd,
        Err(nix::errno::Errno::ENOENT) => return Ok(None),
        Err(e) => {
            return fail(format!(
                "cannot look at the attach socket {}: {e}",
                path.display()
            ))
        }
    };
    let stat = nix::sys::stat::fstat(fd.as_raw_fd())
        .map_err(|e| AttachError(format!("{}: {e}", path.display())))?;
    let kind = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
    if kind != SFlag::S_IFSOCK || stat.st_uid != target.uid {
        return fail(format!(
            "refused: {} in the JVM's file system is not the JVM's attach socket (mode {:o}, uid \
             {}; the JVM runs as uid {}): something else was put there",
            path.display(),
            stat.st_mode,
            stat.st_uid,
            target.uid
        ));
    }
    Ok(Some(fd))
}

/// Creates the attach trigger `name` in the directory `dir` as the JVM's user (`O_EXCL`, never
/// through a link). `Ok(true)`: made here (to be removed after); `Ok(false)`: the name exists
/// already (the JVM's check is only that it exists), and is left alone.
fn make_trigger(dir: &OwnedFd, name: &str) -> std::io::Result<bool> {
    match nix::fcntl::openat(
        Some(dir.as_raw_fd()),
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    ) {
        Ok(fd) => {
            drop(crate::confined::root::owned(fd));
            Ok(true)
        }
        Err(nix::errno::Errno::EEXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The attach trigger, as [`place_trigger`] left it.
enum Trigger {
    /// Made here, in this directory (to be removed after).
    Made(OwnedFd),
    /// Found there already (in the JVM's working directory or its `/tmp`), and left alone.
    Found(&'static str),
}

/// The attach trigger made in the JVM's working directory, else its `/tmp`.
fn place_trigger(
    root: &JvmRoot,
    target: &crate::stage::Target,
    name: &str,
) -> Result<Trigger, AttachError> {
    let pid = target.pid;
    // The working directory, as the magic link the kernel keeps (opened as root, before acting
    // as the JVM's user); the trigger's name in it is never followed.
    let cwd = nix::fcntl::open(
        format!("/proc/{pid}/cwd").as_str(),
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map(crate::confined::root::owned);
    let tmp = root.resolve(Path::new("/tmp"), OFlag::O_PATH | OFlag::O_DIRECTORY);
    let _as = target.as_user().map_err(AttachError)?;
    let dirs = [(cwd.ok(), "working directory"), (tmp.ok(), "/tmp")];
    for (dir, place) in dirs.into_iter().filter_map(|(d, p)| Some((d?, p))) {
        match make_trigger(&dir, name) {
            Ok(true) => return Ok(Trigger::Made(dir)),
            Ok(false) => return Ok(Trigger::Found(place)),
            Err(_) => continue,
        }
    }
    fail(format!(
        "cannot create the attach trigger file {name} in the JVM's working directory or /tmp"
    ))
}

/// Makes the JVM (`ns_pid` in its own PID namespace) open its attach socket `socket`; returns
/// an `O_PATH` descriptor of it.
fn wake_listener(
    root: &JvmRoot,
    target: &crate::stage::Target,
    ns_pid: u32,
    socket: &Path,
    timeout: Duration,
) -> Result<OwnedFd, AttachError> {
    let pid = target.pid;
    if let Some(socket) = find_socket(root, target, socket)? {
        return Ok(socket);
    }
    let name = format!(".attach_pid{ns_pid}");
    let trigger = place_trigger(root, target, &name)?;
    let remove_trigger = || {
        if let Trigger::Made(dir) = &trigger {
            if let Ok(_as) = target.as_user() {
                let _ = nix::unistd::unlinkat(
                    Some(dir.as_raw_fd()),
                    name.as_str(),
                    nix::unistd::UnlinkatFlags::NoRemoveDir,
                );
            }
        }
    };
    let started = Instant::now();
    // SIGQUIT only once the JVM catches it: before its handler is installed (a JVM started a
    // moment ago), or with -Xrs, the signal would end the JVM.
    while !catches_sigquit(pid) && started.elapsed() < timeout {
        std::thread::sleep(START_POLL);
    }
    if !catches_sigquit(pid) {
        remove_trigger();
        return fail(format!(
            "the JVM {pid} does not catch SIGQUIT (still starting after {} s, or started with \
             -Xrs): it is not signalled, since SIGQUIT would end it",
            timeout.as_secs()
        ));
    }
    // Sent again every second while the trigger file is there: a JVM that is still starting
    // may take the first signal before its attach listener can start.
    let mut sent_at: Option<Instant> = None;
    let mut sent = true;
    let mut ready = None;
    while sent && started.elapsed() < timeout {
        if sent_at.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            sent = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGQUIT,
            )
            .is_ok();
            sent_at = Some(Instant::now());
        }
        std::thread::sleep(START_POLL);
        match find_socket(root, target, socket) {
            Ok(Some(socket)) => {
                ready = Some(socket);
                break;
            }
            Ok(None) => {}
            Err(e) => {
                remove_trigger();
                return Err(e);
            }
        }
    }
    remove_trigger();
    if !sent {
        return fail(format!("cannot signal process {pid}"));
    }
    ready.ok_or_else(|| {
        let found = match trigger {
            Trigger::Found(place) => format!(
                "; the attach trigger {name} was in its {place} already, not made by jfrnative, \
                 and was left alone (something else may have put it there)"
            ),
            Trigger::Made(_) => String::new(),
        };
        AttachError(format!(
            "the JVM {pid} did not open its attach socket within {} s: it may have been \
             started with -XX:+DisableAttachMechanism, or be too busy or still starting{found}",
            timeout.as_secs()
        ))
    })
}

/// Parses the reply to `load`: the operation's status, then `return code: N` once the library
/// was loaded and its `Agent_OnAttach` ran. A library the JVM could not load gets no return
/// code: JDK 17 answers `-1`, JDK 25 `0` alone (neither says why: see [`diagnose`]).
pub fn parse_load_reply(text: &str) -> Result<LoadReply, AttachError> {
    let mut lines = text.lines();
    let status: i32 = match lines.next().map(str::trim).map(str::parse) {
        Some(Ok(s)) => s,
        _ => return fail(format!("unexpected reply from the JVM: {text:?}")),
    };
    let rest: Vec<&str> = lines.collect();
    let words = said(rest.join(" ").trim());
    if status != 0 {
        return fail(format!(
            "the JVM refused to load the agent (status {status}){words}"
        ));
    }
    let Some(agent_code) = rest
        .iter()
        .find_map(|l| l.trim().strip_prefix("return code:"))
        .and_then(|c| c.trim().parse().ok())
    else {
        return fail(format!("the JVM did not load the agent library{words}"));
    };
    Ok(LoadReply {
        agent_code,
        text: text.to_string(),
    })
}

/// What the JVM `pid` (running as `uid`) meets at `library`, a path as it sees it: why it
/// could not load it, as far as looking at the file from here (inside the JVM's root) tells.
pub fn diagnose(pid: u32, uid: u32, library: &Path) -> String {
    let opened = JvmRoot::open(pid).and_then(|root| {
        root.resolve(library, OFlag::O_RDONLY | OFlag::O_NONBLOCK)
            .map_err(|e| e.to_string())
    });
    let fd = match opened {
        Ok(fd) => fd,
        Err(e) => {
            return format!(
                "{} cannot be opened in the JVM's file system ({e})",
                library.display()
            )
        }
    };
    let Ok(stat) = nix::sys::stat::fstat(fd.as_raw_fd()) else {
        return format!("{} cannot be looked at", library.display());
    };
    if let Err(why) = crate::confined::dir::check_regular(&stat, None, u64::MAX) {
        return format!("{} is {why}", library.display());
    }
    let mode = stat.st_mode;
    let readable = uid == 0
        || (stat.st_uid == uid && mode & 0o400 != 0)
        || mode & 0o004 != 0
        || mode & 0o040 != 0;
    if !readable {
        return format!(
            "{} is not readable by the JVM's user (uid {uid}; the file is uid {}, mode {:o})",
            library.display(),
            stat.st_uid,
            mode & 0o777
        );
    }
    let mut magic = [0u8; 5];
    let is_elf64 =
        std::fs::File::from(fd).read_exact(&mut magic).is_ok() && magic == *b"\x7fELF\x02";
    if !is_elf64 {
        return format!("{} is not a 64-bit ELF library", library.display());
    }
    "the JVM gave no reason; its own output may say more".to_string()
}

/// Why the JVM `pid` did not start the agent it was given as `library` (a path as the JVM
/// sees it), from its reply to `load`: the agent's return code and the JVM's own words.
pub fn refusal(pid: u32, library: &Path, reply: &LoadReply) -> String {
    let words: Vec<&str> = reply
        .text
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("return code:"))
        .collect();
    format!(
        "the JVM {pid} did not start the agent {} (return code {}){}",
        library.display(),
        reply.agent_code,
        said(&words.join(" "))
    )
}

/// The most characters of the JVM's words quoted in a message.
const SAID_CHARS: usize = 400;

/// Words from the other side of a socket as they may be shown: quoted (control characters
/// escaped) and cut at 400 characters (`SAID_CHARS`). They are shown, never acted on.
pub fn quoted(words: &str) -> String {
    let cut: String = words.chars().take(SAID_CHARS).collect();
    let more = if cut.len() < words.len() {
        " (cut)"
    } else {
        ""
    };
    format!("{cut:?}{more}")
}

/// What the JVM said, as the end of a message: `: "WORDS"` ([`quoted`]), or nothing when it
/// said nothing.
fn said(words: &str) -> String {
    if words.is_empty() {
        return String::new();
    }
    format!(": {}", quoted(words))
}

/// The most bytes of a reply read: HotSpot's replies to `load` and to the few diagnostic
/// commands used here are far shorter.
pub const REPLY_BYTES: u64 = 256 << 10;

/// Checks that the peer of `stream` is the JVM itself (`SO_PEERCRED`): the socket's file can
/// have been made by any process of the JVM's user.
fn check_peer(
    stream: &UnixStream,
    target: &crate::stage::Target,
    socket: &str,
) -> Result<(), AttachError> {
    let peer = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(|e| AttachError(format!("cannot read the attach socket's peer: {e}")))?;
    if (peer.pid() as u32, peer.uid()) != (target.pid, target.uid) {
        return fail(format!(
            "refused: the attach socket {socket} of JVM {} is served by process {} (uid {}), not \
             by the JVM (uid {}): something else was put in its place",
            target.pid,
            peer.pid(),
            peer.uid(),
            target.uid
        ));
    }
    Ok(())
}

/// Sends `message` on `stream` and reads the reply to its end: at most [`REPLY_BYTES`], within
/// `timeout` in all.
fn exchange(
    stream: &mut UnixStream,
    message: &[u8],
    timeout: Duration,
) -> Result<String, AttachError> {
    let started = Instant::now();
    let _ = stream.set_write_timeout(Some(timeout));
    stream
        .write_all(message)
        .map_err(|e| AttachError(format!("sending the request to the JVM: {e}")))?;
    let late = || {
        fail(format!(
            "the JVM did not finish its reply within {} s",
            timeout.as_secs()
        ))
    };
    let mut reply = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            return late();
        }
        let _ = stream.set_read_timeout(Some(left));
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => reply.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return late()
            }
            Err(e) => return fail(format!("reading the JVM's reply: {e}")),
        }
        if reply.len() as u64 > REPLY_BYTES {
            return fail(format!(
                "the reply on the attach socket is longer than {REPLY_BYTES} bytes: not the JVM's"
            ));
        }
    }
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

/// Sends one attach request (`parts` after the protocol version) to the JVM `pid`; returns
/// its whole reply.
fn request(pid: u32, parts: &[&str], timeout: Duration) -> Result<String, AttachError> {
    check_target(pid, timeout)?;
    let target = crate::stage::Target::of(pid).map_err(AttachError)?;
    let root = JvmRoot::open(pid).map_err(AttachError)?;
    let ns_pid = namespace_pid(pid);
    let path = format!("/tmp/.java_pid{ns_pid}");
    let socket = wake_listener(&root, &target, ns_pid, Path::new(&path), timeout)?;
    // connect() takes a path: the descriptor's own, which names that socket and nothing else.
    let mut stream = UnixStream::connect(JvmRoot::fd_path(socket.as_fd())).map_err(|e| {
        AttachError(format!(
            "cannot connect to the JVM's attach socket {path}: {e}"
        ))
    })?;
    check_peer(&stream, &target, &path)?;
    let mut message = Vec::new();
    for part in std::iter::once("1").chain(parts.iter().copied()) {
        message.extend_from_slice(part.as_bytes());
        message.push(0);
    }
    exchange(&mut stream, &message, timeout.max(Duration::from_secs(60)))
        .map_err(|e| AttachError(format!("{} request: {e}", parts[0])))
}

/// Loads `library` (an absolute path) with `options` into the JVM `pid`.
pub fn load_agent(
    pid: u32,
    library: &Path,
    options: &str,
    timeout: Duration,
) -> Result<LoadReply, AttachError> {
    let reply = request(
        pid,
        &["load", &library.to_string_lossy(), "true", options],
        timeout,
    )?;
    parse_load_reply(&reply).map_err(|e| {
        let uid = crate::stage::process_ids(pid).map_or(u32::MAX, |(uid, _)| uid);
        AttachError(format!(
            "JVM {pid}, agent {}: {e}: {}",
            library.display(),
            diagnose(pid, uid, library)
        ))
    })
}

/// Whether `e` is HotSpot's refusal of an agent while the JVM is still starting (JDK 21 and
/// later answer a `load` before the live phase with "Dynamic agent loading is only permitted in
/// the live phase"): worth trying again in a moment.
pub fn not_live_yet(e: &AttachError) -> bool {
    e.0.contains("only permitted in the live phase")
}

/// Runs the diagnostic command `command` (as `jcmd PID COMMAND` would) in the JVM `pid`;
/// returns its output, or the JVM's refusal as an error.
pub fn jcmd(pid: u32, command: &str, timeout: Duration) -> Result<String, AttachError> {
    let reply = request(pid, &["jcmd", command, "", ""], timeout)?;
    let (status, output) = reply.split_once('\n').unwrap_or((reply.as_str(), ""));
    match status.trim() {
        "0" => Ok(output.to_string()),
        code => Err(AttachError(format!(
            "JVM {pid} refused `{command}` (status {code}){}",
            said(output.trim())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket pair whose far end `serve` plays the JVM's part (it may misbehave).
    fn misbehaving_peer(serve: impl FnOnce(UnixStream) + Send + 'static) -> UnixStream {
        let (ours, theirs) = UnixStream::pair().unwrap();
        std::thread::spawn(move || serve(theirs));
        ours
    }

    #[test]
    fn a_reply_is_bounded_in_size_and_time_and_only_shown() {
        // Endless bytes: cut at REPLY_BYTES, an error, not memory without end.
        let mut endless = misbehaving_peer(|mut s| {
            let junk = [b'x'; 4096];
            while s.write_all(&junk).is_ok() {}
        });
        let e = exchange(&mut endless, b"1\0load\0", Duration::from_secs(20)).unwrap_err();
        assert!(e.0.contains("longer than"), "{e}");
        // Silence: the time bound, not a wait without end.
        let mut silent = misbehaving_peer(|s| {
            std::thread::sleep(Duration::from_secs(5));
            drop(s);
        });
        let started = Instant::now();
        let e = exchange(&mut silent, b"1\0load\0", Duration::from_millis(300)).unwrap_err();
        assert!(e.0.contains("did not finish its reply"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(4));
        // Garbage with control characters and a fake success line: shown quoted and cut.
        let mut garbage = misbehaving_peer(|mut s| {
            let _ = s.read(&mut [0u8; 64]);
            let mut text = "100\n\x1b[2Jrm -rf /\r\n".to_string();
            text.push_str(&"y".repeat(5000));
            let _ = s.write_all(text.as_bytes());
        });
        let reply = exchange(&mut garbage, b"1\0load\0", Duration::from_secs(20)).unwrap();
        let e = parse_load_reply(&reply).unwrap_err();
        assert!(e.0.contains("\\u{1b}[2J"), "{e}");
        assert!(e.0.ends_with("(cut)"), "{e}");
        assert!(e.0.len() < 600, "{}", e.0.len());
    }

    #[test]
    fn a_socket_served_by_another_process_is_refused() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let me = std::process::id();
        let uid = nix::unistd::geteuid().as_raw();
        let jvm = crate::stage::Target {
            pid: me + 1,
            uid,
            gid: 0,
            other_root: false,
        };
        let e = check_peer(&ours, &jvm, "/tmp/.java_pid9").unwrap_err();
        assert!(
            e.0.contains(&format!(
                "/tmp/.java_pid9 of JVM {} is served by process {me}",
                me + 1
            )),
            "{e}"
        );
        let this = crate::stage::Target { pid: me, ..jvm };
        check_peer(&ours, &this, "/tmp/.java_pid9").unwrap();
    }

    #[test]
    fn load_replies() {
        assert_eq!(
            parse_load_reply("0\nreturn code: 0\n").unwrap().agent_code,
            0
        );
        assert_eq!(
            parse_load_reply("0\nreturn code: -1\n").unwrap().agent_code,
            -1
        );
        let refused = parse_load_reply("100\nagent library not found\n").unwrap_err();
        assert!(refused.0.contains("status 100"), "{refused}");
        assert!(refused.0.contains("not found"), "{refused}");
        assert!(parse_load_reply("").is_err());
        // A library the JVM could not load: JDK 17 and JDK 25's replies.
        let jdk17 = parse_load_reply("-1\n").unwrap_err();
        assert!(jdk17.0.contains("status -1"), "{jdk17}");
        let jdk25 = parse_load_reply("0\n").unwrap_err();
        assert!(jdk25.0.contains("did not load"), "{jdk25}");
    }

    #[test]
    fn an_unloadable_library_is_explained() {
        let me = std::process::id();
        let uid = nix::unistd::geteuid().as_raw();
        let missing = diagnose(me, uid, Path::new("/nonexistent/libx.so"));
        assert!(
            missing.contains("cannot be opened in the JVM's file system"),
            "{missing}"
        );
        let dir = std::env::temp_dir().join(format!("jfrnative-diagnose-{me}"));
        std::fs::create_dir_all(&dir).unwrap();
        let text = dir.join("lib.so");
        std::fs::write(&text, "not an ELF").unwrap();
        let not_elf = diagnose(me, uid, &text);
        assert!(not_elf.contains("not a 64-bit ELF"), "{not_elf}");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&text, std::fs::Permissions::from_mode(0o600)).unwrap();
        let unreadable = diagnose(me, 65534, &text);
        assert!(
            unreadable.contains("not readable by the JVM's user (uid 65534"),
            "{unreadable}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_process_without_libjvm_is_not_a_target() {
        let e = check_target(std::process::id(), Duration::from_secs(5)).unwrap_err();
        assert!(e.0.contains("not a HotSpot JVM"), "{e}");
        let e = check_target(u32::MAX - 1, Duration::from_secs(5)).unwrap_err();
        assert!(e.0.contains("no process"), "{e}");
    }

    #[test]
    fn sigquit_is_caught_only_where_a_handler_is_installed() {
        use std::os::unix::process::CommandExt;
        assert!(!catches_sigquit(std::process::id()));
        let mut shell = std::process::Command::new("bash");
        shell.args(["-c", "trap 'echo quit' QUIT; sleep 30 & wait"]);
        // This process may have SIGQUIT ignored on entry (a background job of a
        // non-interactive shell, `nohup ... &`: POSIX has such jobs ignore it), and an ignored
        // disposition is inherited through exec: bash cannot trap a signal ignored on entry, so
        // the child gets the default disposition back first.
        // SAFETY: between fork and exec only async-signal-safe calls are allowed; `signal` is
        // one (a sigaction), and the closure touches no memory of the parent's.
        unsafe {
            shell.pre_exec(|| {
                nix::sys::signal::signal(
                    nix::sys::signal::Signal::SIGQUIT,
                    nix::sys::signal::SigHandler::SigDfl,
                )
                .map(drop)
                .map_err(std::io::Error::from)
            });
        }
        let mut shell = shell.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !catches_sigquit(shell.id()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let caught = catches_sigquit(shell.id());
        let _ = shell.kill();
        let _ = shell.wait();
        assert!(caught, "bash with a QUIT trap catches SIGQUIT");
    }

    #[test]
    fn an_exited_process_is_named_as_exited() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not reaped yet: a zombie, whose maps are empty.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !has_exited(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let e = check_target(pid, Duration::from_secs(5)).unwrap_err();
        child.wait().unwrap();
        assert!(e.0.contains("has exited"), "{e}");
    }
}
