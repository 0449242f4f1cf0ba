//! A JVM's CPU time as the kernel counts it, measured from outside the agent: the test runs the
//! JVM, reads `/proc/PID/stat` (utime + stime of the whole process, in clock ticks) and the
//! agent's writer thread's `/proc/PID/task/TID/schedstat` every 2 ms, and reaps it with
//! `wait4`, whose rusage is the process's whole CPU time. The recording spans the writer
//! thread's life (the agent starts it first and joins it last), so the process's CPU while the
//! writer lived, less the writer's own (it is not sampled), is what the samples must add up
//! to. The polls bracket each end: [`Window::during_ns`] is a range, never a guess.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The agent's writer thread's kernel name (`jfr-native writer`, cut to 15 bytes).
const WRITER_COMM: &str = "jfr-native writ";

/// How often the JVM is looked at.
const POLL: Duration = Duration::from_millis(2);

/// What the polls saw: process CPU (ns) read before each look for the writer thread.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// The process's CPU when the writer thread started: (at least, at most), ns.
    pub start_ns: (u64, u64),
    /// The process's CPU when the writer thread ended: (at least, at most), ns.
    pub end_ns: (u64, u64),
    /// The writer thread's own CPU time: (at least, at most), ns.
    pub writer_ns: (u64, u64),
    /// The process's whole CPU time (`wait4`'s rusage: user + system), ns.
    pub total_ns: u64,
}

impl Window {
    /// The CPU time of the process's threads other than the writer while the writer lived:
    /// (at least, at most), ns.
    pub fn during_ns(&self) -> (u64, u64) {
        let lo = self
            .end_ns
            .0
            .saturating_sub(self.start_ns.1 + self.writer_ns.1);
        let hi = self
            .end_ns
            .1
            .saturating_sub(self.start_ns.0 + self.writer_ns.0);
        (lo, hi)
    }
}

fn clock_tick_ns() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / hz.max(1) as u64
}

/// utime + stime of process `pid` (`/proc/PID/stat`, fields 14 and 15), in clock ticks.
fn process_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The writer thread's id, if it runs now.
fn find_writer(pid: u32) -> Option<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .find(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == WRITER_COMM)
        })?
        .file_name()
        .to_str()?
        .parse()
        .ok()
}

/// Thread `tid`'s CPU time (`schedstat`, first field), ns; `None` once it is gone.
fn thread_ns(pid: u32, tid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    text.split(' ').next()?.parse().ok()
}

/// Reaps `pid` if it has exited: its wait status and its CPU time (user + system), ns.
fn reaped(pid: u32) -> Option<(i32, u64)> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of that plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes into `status` and `usage`, both live for the call; `pid` is our
    // child, not reaped by anyone else (the caller never waits on it).
    let got = unsafe { libc::wait4(pid as i32, &mut status, libc::WNOHANG, &mut usage) };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (got == pid as i32).then(|| (status, 1_000 * (us(usage.ru_utime) + us(usage.ru_stime))))
}

/// Runs `java` (its output captured) and watches its CPU from outside; returns its output and
/// the window of its agent's writer thread. Panics if the writer thread is never seen.
// The child is reaped by `wait4` (in `reaped`), for its rusage, not by `Child::wait`.
#[allow(clippy::zombie_processes)]
pub fn run_watched(java: &mut Command) -> (Output, Window) {
    let mut child = java
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{java:?}: {e}"));
    let pid = child.id();
    let read_all = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().unwrap()));
    let stderr = read_all(Box::new(child.stderr.take().unwrap()));
    let tick = clock_tick_ns();
    let mut w = Watch::default();
    let (status, total_ns) = loop {
        if let Some(done) = reaped(pid) {
            break done;
        }
        w.step(pid);
        std::thread::sleep(POLL);
    };
    let reaped_at = Instant::now();
    let output = Output {
        status: ExitStatus::from_raw(status),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    let window = w.window(total_ns, tick, reaped_at).unwrap_or_else(|| {
        panic!(
            "the agent's writer thread was never seen: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output, window)
}

/// The polls so far.
#[derive(Debug, Default)]
struct Watch {
    /// The process's CPU (ticks) at the last poll, and at the poll before it.
    last: Option<u64>,
    before_last: Option<u64>,
    writer: Option<u32>,
    /// Process CPU (ticks) read at the poll before the writer was first seen, and at the poll
    /// after the first sight (+ 1 tick: readings are cut to whole ticks).
    start_lo: Option<u64>,
    start_hi: Option<u64>,
    /// The writer's CPU at the last poll that saw it, and when that was.
    writer_ns: Option<(u64, Instant)>,
    /// Process CPU (ticks) at the last poll that saw the writer, and at the poll after the one
    /// that first missed it (+ 1 tick).
    end_lo: Option<u64>,
    end_hi: Option<u64>,
    gone_at: Option<Instant>,
    polls_since_gone: u32,
}

impl Watch {
    fn step(&mut self, pid: u32) {
        let Some(c) = process_ticks(pid) else { return };
        self.before_last = self.last;
        self.last = Some(c);
        if self.start_lo.is_some() && self.start_hi.is_none() && self.writer.is_some() {
            // The poll after the first sight: the start was before this reading.
            self.start_hi = Some(c + 1);
        }
        if self.gone_at.is_some() {
            self.polls_since_gone += 1;
            if self.polls_since_gone == 1 {
                self.end_hi = Some(c + 1);
            }
            return;
        }
        match self.writer {
            None => {
                if let Some(tid) = find_writer(pid) {
                    self.writer = Some(tid);
                    self.start_lo = Some(self.before_last.unwrap_or(0));
                    self.writer_ns = thread_ns(pid, tid).map(|n| (n, Instant::now()));
                    self.end_lo = Some(c);
                }
            }
            Some(tid) => match thread_ns(pid, tid) {
                Some(n) => {
                    self.writer_ns = Some((n, Instant::now()));
                    self.end_lo = Some(c);
                }
                None => self.gone_at = Some(Instant::now()),
            },
        }
    }

    /// The window, once the process was reaped (`reaped_at`, with `total_ns` of CPU time).
    fn window(&self, total_ns: u64, tick: u64, reaped_at: Instant) -> Option<Window> {
        let (writer, seen_at) = self.writer_ns?;
        // After its last reading the writer ran at most until it was missed (or, if no poll
        // missed it, until the process was reaped): no more CPU time than that wall time.
        let gone_at = self.gone_at.unwrap_or(reaped_at);
        let writer_hi = writer + gone_at.duration_since(seen_at).as_nanos() as u64;
        Some(Window {
            start_ns: (
                self.start_lo? * tick,
                self.start_hi.map_or(total_ns, |c| c * tick),
            ),
            end_ns: (
                self.end_lo? * tick,
                self.end_hi.map_or(total_ns, |c| c * tick),
            ),
            writer_ns: (writer, writer_hi),
            total_ns,
        })
    }
}
