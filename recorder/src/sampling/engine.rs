//! Which engine signals the samples of the running recording (`engine=perf|timer`), chosen
//! when it starts, and the per-thread source of signals it arms. Both engines share everything
//! after the signal (see [`crate::sampling::signal`]): only how a signal is told to be the agent's and how
//! its CPU weight is known differ.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use crate::options::Engine;
use crate::os::{self, ThreadTimer};
use crate::sampling::perf::{self, PerfCounter, Scope};
use crate::sampling::slots::Sampler;

/// The engine in effect: what the recording asked for, unless perf was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effective {
    /// Per-thread CPU timers.
    Timer,
    /// Per-thread perf counters of this scope.
    Perf(Scope),
}

impl Effective {
    /// How the summary and the recording's settings name it.
    pub fn describe(self) -> &'static str {
        match self {
            Effective::Timer => "timer",
            Effective::Perf(Scope::UserAndKernel) => "perf (task-clock, user and kernel time)",
            Effective::Perf(Scope::User) => {
                "perf (task-clock, user time; weights hold kernel time)"
            }
        }
    }

    /// The `engine` option value it stands for.
    pub fn engine(self) -> Engine {
        match self {
            Effective::Timer => Engine::Timer,
            Effective::Perf(_) => Engine::Perf,
        }
    }
}

const TIMER: u8 = 0;
const PERF_ALL: u8 = 1;
const PERF_USER: u8 = 2;

static CURRENT: AtomicU8 = AtomicU8::new(TIMER);
/// Whether a thread that could not get a counter was said (once per recording).
static THREAD_FALLBACK_SAID: AtomicBool = AtomicBool::new(false);
/// Threads of the recording that got a CPU timer because their counter could not be opened.
pub static TIMER_FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// The engine in effect for the running (or last) recording.
pub fn current() -> Effective {
    match CURRENT.load(Ordering::Acquire) {
        PERF_ALL => Effective::Perf(Scope::UserAndKernel),
        PERF_USER => Effective::Perf(Scope::User),
        _ => Effective::Timer,
    }
}

/// Chooses the engine of a recording that asks for `wanted`: perf if this process may open
/// counters (tried on the calling thread, nothing armed), else timer, with the one message to
/// print.
pub fn choose(wanted: Engine, interval_ns: u64) -> (Effective, Option<String>) {
    THREAD_FALLBACK_SAID.store(false, Ordering::Release);
    TIMER_FALLBACKS.store(0, Ordering::Release);
    let (effective, message) = match wanted {
        Engine::Timer => (Effective::Timer, None),
        Engine::Perf => match perf::probe(interval_ns) {
            Ok(scope) => (Effective::Perf(scope), None),
            Err(e) => (Effective::Timer, Some(refused_message(&e))),
        },
    };
    let code = match effective {
        Effective::Timer => TIMER,
        Effective::Perf(Scope::UserAndKernel) => PERF_ALL,
        Effective::Perf(Scope::User) => PERF_USER,
    };
    CURRENT.store(code, Ordering::Release);
    (effective, message)
}

/// Why perf was refused, and what the recording does instead.
fn refused_message(e: &io::Error) -> String {
    let why = match e.raw_os_error() {
        Some(libc::EACCES) => {
            let level = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|l| l.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            format!(
                "perf_event_paranoid is {level}; 2 or less lets a process profile its own threads"
            )
        }
        Some(libc::EPERM) => {
            "refused by a security policy (a container's seccomp filter blocks perf_event_open)"
                .to_string()
        }
        Some(libc::ENOENT) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => {
            "this kernel has no perf software events".to_string()
        }
        _ => "refused".to_string(),
    };
    format!(
        "jfr-native: engine=perf: perf_event_open failed ({e}): {why}; sampling with per-thread \
         CPU timers (engine=timer), at most one real sample per scheduler tick per thread"
    )
}

/// The source of signals for thread `tid` under the current engine: a perf counter, or a CPU
/// timer where the engine is timer or the thread's counter cannot be opened (too many open
/// files, for example: said once per recording). `slot_value` is the slot's timer value.
pub fn sampler_for(
    tid: i32,
    signal: i32,
    interval_ns: u64,
    slot_value: u64,
) -> io::Result<Sampler> {
    if let Effective::Perf(scope) = current() {
        match PerfCounter::open(tid, signal, interval_ns, scope) {
            Ok(counter) => return Ok(Sampler::Perf(counter)),
            Err(e) => {
                TIMER_FALLBACKS.fetch_add(1, Ordering::Relaxed);
                if !THREAD_FALLBACK_SAID.swap(true, Ordering::AcqRel) {
                    let why = if e.raw_os_error() == Some(libc::EMFILE) {
                        " (the agent keeps a quarter of the descriptor limit, and 1,024 \
                         descriptors, to the application)"
                    } else {
                        ""
                    };
                    eprintln!(
                        "jfr-native: cannot open a perf counter for thread {tid} ({e}){why}; \
                         such threads are sampled with a CPU timer"
                    );
                }
            }
        }
    }
    ThreadTimer::create(tid, signal, slot_value).map(Sampler::Timer)
}

/// The CPU time of thread `tid` of this process, ns (0 if it cannot be read).
pub fn thread_cpu_ns(tid: i32) -> u64 {
    os::thread_cpu_ns_of(tid).max(0) as u64
}
