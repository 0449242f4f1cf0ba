//! One slot per sampled thread: its identity, its stack bounds and its timer. Slots are made
//! outside the handler and never freed; each has an index in a fixed table ([`slot_at`]), and
//! its timer carries that index (plus one) in `si_value`: the handler maps a signal's value to a
//! slot by a bounds-checked table lookup, never by dereferencing what the signal carries, and
//! accepts the signal only if its timer id is the slot's own (see [`crate::sampling::signal`]).
//!
//! A slot is recycled for a new thread once its thread has ended, its kernel task is gone (no
//! handler can run on it any more, no signal can be delivered to it) and the rings are drained
//! ([`FREE`]); the drain forgets the old thread's state before freeing the slot. A late signal
//! from the old timer cannot arrive: the timer is deleted and the thread it targeted is gone.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::jvmti::JniEnv;
use crate::os::ThreadTimer;
use crate::sampling::pages;
use crate::sampling::perf::{self, PerfCounter};
use crate::sampling::stack::ThreadStack;

/// What signals a thread's samples: the engine's per-thread source.
#[derive(Debug)]
pub enum Sampler {
    /// A POSIX timer on the thread's CPU clock (`engine=timer`).
    Timer(ThreadTimer),
    /// A `task-clock` perf counter (`engine=perf`).
    Perf(PerfCounter),
}

/// Samples the handler could not take, for one reason: their CPU time and how many samples
/// the engine asked for (a timer signal stands for 1 + its overruns).
#[derive(Debug, Default)]
pub struct Lost {
    /// CPU time of the lost samples, ns.
    pub cpu_ns: AtomicU64,
    /// Samples asked for.
    pub samples: AtomicU64,
}

impl Lost {
    /// Counts one lost signal (signal-safe: two atomic adds).
    #[inline]
    pub fn add(&self, cpu_ns: u64, samples: u64) {
        self.cpu_ns.fetch_add(cpu_ns, Ordering::Relaxed);
        self.samples.fetch_add(samples, Ordering::Relaxed);
    }

    /// (CPU ns, samples) so far.
    pub fn get(&self) -> (u64, u64) {
        (
            self.cpu_ns.load(Ordering::Relaxed),
            self.samples.load(Ordering::Relaxed),
        )
    }

    fn reset(&self) {
        self.cpu_ns.store(0, Ordering::Relaxed);
        self.samples.store(0, Ordering::Relaxed);
    }
}

/// Who a slot belongs to, for the drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Java thread name.
    pub name: String,
    /// Java thread id (`Thread.getId()`), 0 if unknown.
    pub java_id: i64,
}

/// A sampled thread.
pub struct Slot {
    /// Place in the slot table, fixed for the life of the process.
    index: u32,
    /// Kernel thread id.
    tid: AtomicI32,
    /// The thread's JNIEnv, for AsyncGetCallTrace.
    env: AtomicPtr<*const crate::jvmti::sys::JniNativeInterface>,
    identity: Mutex<Identity>,
    /// The thread's stack, as far as it may be read and written.
    pub stack: ThreadStack,
    /// Samples dropped: every buffer busy or full.
    pub dropped: Lost,
    /// Samples skipped: too little stack left for the handler.
    pub skipped: Lost,
    /// The CPU time a thread that `threads=all` found after the recording started had used
    /// before its sampling was armed (at most two scans: see [`crate::process_threads`]).
    pub unseen: Lost,
    /// Intervals of CPU time the thread's timer passed whose signal the kernel had not sent
    /// when its sampling ended (see [`Slot::disarm_counting_tail`]).
    pub undelivered: Lost,
    /// The thread has ended (its timer is deleted).
    pub ended: AtomicBool,
    /// The thread's timer or counter, while armed.
    sampler: Mutex<Option<Sampler>>,
    /// The kernel id of the slot's timer (-1: none), for the handler's check.
    timer_id: AtomicI32,
    /// The descriptor of the slot's perf counter (-1: none), for the handler's check.
    perf_fd: AtomicI32,
    /// The thread's CPU time (ns) at its previous perf sample, or when its counter was armed:
    /// written by the handler on the thread itself.
    pub last_cpu_ns: AtomicU64,
    /// The thread's CPU time (ns) when its timer was armed.
    timer_armed_cpu_ns: AtomicU64,
    /// Intervals the timer's signals stood for since it was armed (each 1 + its overruns),
    /// counted by the handler whether or not it took the sample.
    timer_intervals: AtomicU64,
    /// Handlers running on a signal of this slot's counter (see [`Slot::enter_handler`]).
    handlers: AtomicU32,
    /// The stack pointer of a sample taken while the stack bounds were unknown (a thread the
    /// agent found in `/proc/self/task`), for the writer to look its stack up (0: none).
    pub unknown_stack_sp: AtomicU64,
}

/// Slots per page of the table, and pages: room for a million threads over a process's life.
const PAGE_SLOTS: usize = 1024;
const PAGES: usize = 1024;

type Page = [AtomicPtr<Slot>; PAGE_SLOTS];

/// The slot table: pages made on demand (off the handler), never freed.
static TABLE: [AtomicPtr<Page>; PAGES] = [const { AtomicPtr::new(std::ptr::null_mut()) }; PAGES];
/// Slots made so far (the next index).
static NEXT_INDEX: AtomicU32 = AtomicU32::new(0);

/// The slot with table index `index`, if there is one. Signal-safe: two bounds-checked loads.
#[inline]
pub fn slot_at(index: u32) -> Option<&'static Slot> {
    let index = index as usize;
    let page = pages::page(TABLE.get(index / PAGE_SLOTS)?)?;
    let slot = page.get(index % PAGE_SLOTS)?.load(Ordering::Acquire);
    // SAFETY: non-null entries are leaked slots, never freed.
    unsafe { slot.as_ref() }
}

impl Slot {
    /// A new slot for thread `tid`, entered in the table; `None` when the table is full.
    pub fn make(
        tid: i32,
        env: JniEnv,
        identity: Identity,
        stack: ThreadStack,
    ) -> Option<&'static Slot> {
        let index = NEXT_INDEX.fetch_add(1, Ordering::AcqRel);
        let entry = TABLE.get(index as usize / PAGE_SLOTS)?;
        // Another thread may make the page meanwhile: the first is kept.
        let page = pages::page_or_make(entry, || {
            Box::new([const { AtomicPtr::new(std::ptr::null_mut()) }; PAGE_SLOTS])
        })?;
        let slot: &'static Slot = Box::leak(Box::new(Slot {
            index,
            tid: AtomicI32::new(tid),
            env: AtomicPtr::new(env),
            identity: Mutex::new(identity),
            stack,
            dropped: Lost::default(),
            skipped: Lost::default(),
            unseen: Lost::default(),
            undelivered: Lost::default(),
            ended: AtomicBool::new(false),
            sampler: Mutex::new(None),
            timer_id: AtomicI32::new(-1),
            perf_fd: AtomicI32::new(-1),
            last_cpu_ns: AtomicU64::new(0),
            timer_armed_cpu_ns: AtomicU64::new(0),
            timer_intervals: AtomicU64::new(0),
            handlers: AtomicU32::new(0),
            unknown_stack_sp: AtomicU64::new(0),
        }));
        page.get(index as usize % PAGE_SLOTS)?
            .store((slot as *const Slot).cast_mut(), Ordering::Release);
        Some(slot)
    }

    /// The slot's place in the table.
    #[inline]
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The kernel thread id of the thread that owns the slot.
    #[inline]
    pub fn tid(&self) -> i32 {
        self.tid.load(Ordering::Acquire)
    }

    /// The owning thread's JNIEnv (null: not a Java thread, see [`Slot::is_java`]).
    #[inline]
    pub fn env(&self) -> JniEnv {
        self.env.load(Ordering::Acquire)
    }

    /// Whether the slot's thread is a Java thread (it has a JNIEnv), not one of the JVM's own
    /// threads or a native thread (`threads=all`).
    #[inline]
    pub fn is_java(&self) -> bool {
        !self.env().is_null()
    }

    /// Makes the slot a Java thread's (a thread found in `/proc/self/task` before its
    /// ThreadStart), with its JNIEnv and stack.
    pub fn become_java(&self, env: JniEnv, stack: &ThreadStack) {
        self.stack.set(stack);
        self.env.store(env, Ordering::Release);
    }

    /// The kernel id of the slot's armed timer, -1 if none.
    #[inline]
    pub fn timer_id(&self) -> i32 {
        self.timer_id.load(Ordering::Acquire)
    }

    /// The descriptor of the slot's armed perf counter, -1 if none.
    #[inline]
    pub fn perf_fd(&self) -> i32 {
        self.perf_fd.load(Ordering::SeqCst)
    }

    /// Whether a timer or counter of the slot is armed (a recording samples its thread).
    pub fn is_armed(&self) -> bool {
        self.timer_id() >= 0 || self.perf_fd() >= 0
    }

    /// The value the slot's timer carries in `si_value`: its index plus one (0 is never a slot).
    pub fn signal_value(&self) -> u64 {
        u64::from(self.index).saturating_add(1)
    }

    /// The slot a signal value names, if any.
    #[inline]
    pub fn from_signal_value(value: u64) -> Option<&'static Slot> {
        let index = u32::try_from(value.checked_sub(1)?).ok()?;
        slot_at(index)
    }

    /// The owning thread's Java identity.
    pub fn identity(&self) -> Identity {
        self.identity.lock().map(|i| i.clone()).unwrap_or(Identity {
            name: String::new(),
            java_id: 0,
        })
    }

    /// Names the thread anew (a new recording reads names again).
    pub fn set_identity(&self, identity: Identity) {
        if let Ok(mut i) = self.identity.lock() {
            *i = identity;
        }
    }

    /// Gives a free slot to thread `tid`. The caller took it from [`FREE`], so its previous
    /// thread is gone, its timer deleted and the rings drained of it.
    pub fn reuse(&self, tid: i32, env: JniEnv, identity: Identity, stack: &ThreadStack) {
        self.set_identity(identity);
        self.stack.set(stack);
        self.env.store(env, Ordering::Release);
        self.tid.store(tid, Ordering::Release);
        self.unknown_stack_sp.store(0, Ordering::Release);
        self.reset_lost();
        self.ended.store(false, Ordering::Release);
    }

    /// Forgets the samples lost so far (a new recording).
    pub fn reset_lost(&self) {
        self.dropped.reset();
        self.skipped.reset();
        self.unseen.reset();
        self.undelivered.reset();
    }

    /// Counts the intervals a timer signal stands for (signal-safe: one atomic add).
    #[inline]
    pub fn count_timer_intervals(&self, intervals: u64) {
        self.timer_intervals.fetch_add(intervals, Ordering::Relaxed);
    }

    /// [`Slot::disarm`], then for a CPU timer the intervals its thread's CPU time passed
    /// whose signals never came are counted [`Slot::undelivered`]. A CPU timer's expiry is
    /// checked at a scheduler tick that finds the thread running; under contention a thread
    /// may run several intervals between such ticks, which the next signal's overrun counts,
    /// but at the end nothing does. `cpu_now_ns`: the thread's CPU time now. The part of an
    /// interval after the last expiry is no sample and is not counted.
    pub fn disarm_counting_tail(&'static self, interval_ns: u64, cpu_now_ns: impl FnOnce() -> u64) {
        let Some(sampler) = self.detach() else {
            return;
        };
        let timer = matches!(sampler, Sampler::Timer(_));
        retire(vec![(self, sampler)]);
        if !timer {
            return;
        }
        let counted_ns = self
            .timer_intervals
            .load(Ordering::Relaxed)
            .saturating_mul(interval_ns);
        let tail_ns = cpu_now_ns()
            .saturating_sub(self.timer_armed_cpu_ns.load(Ordering::Relaxed))
            .saturating_sub(counted_ns);
        let missed = tail_ns.checked_div(interval_ns).unwrap_or(0);
        if missed > 0 {
            self.undelivered
                .add(missed.saturating_mul(interval_ns), missed);
        }
    }

    /// Makes `sampler` the slot's source of signals (deleting any earlier one) and starts it.
    /// The slot knows the timer's id or the counter's descriptor before its first signal can
    /// arrive; a counter starts from the thread's CPU time `cpu_ns` now.
    pub fn arm(
        &'static self,
        sampler: Sampler,
        interval_ns: u64,
        cpu_ns: u64,
    ) -> std::io::Result<()> {
        self.disarm();
        let Ok(mut armed) = self.sampler.lock() else {
            return Err(std::io::Error::other("slot state lost"));
        };
        let started = match &sampler {
            Sampler::Timer(timer) => {
                self.timer_armed_cpu_ns.store(cpu_ns, Ordering::Relaxed);
                self.timer_intervals.store(0, Ordering::Relaxed);
                self.timer_id.store(timer.id(), Ordering::Release);
                timer.arm(interval_ns)
            }
            Sampler::Perf(counter) => {
                if !perf::bind_fd(counter.fd(), self.index) {
                    Err(std::io::Error::other(
                        "perf counter descriptor beyond the agent's table",
                    ))
                } else {
                    self.last_cpu_ns.store(cpu_ns, Ordering::SeqCst);
                    self.perf_fd.store(counter.fd(), Ordering::SeqCst);
                    counter.start()
                }
            }
        };
        *armed = Some(sampler);
        drop(armed);
        // The thread may have ended meanwhile (its ThreadEnd marks the slot ended, then
        // disarms): whichever comes second disarms.
        if started.is_err() || self.ended.load(Ordering::SeqCst) {
            self.disarm();
        }
        started
    }

    /// Deletes the thread's timer or closes its counter, if armed (idempotent).
    pub fn disarm(&'static self) {
        retire(self.detach().map(|s| (self, s)).into_iter().collect());
    }

    /// Takes the slot's timer or counter away from it: the handler no longer accepts its
    /// signals (nor re-arms the counter). [`retire`] then deletes or closes it.
    pub fn detach(&self) -> Option<Sampler> {
        let sampler = self.sampler.lock().ok().and_then(|mut t| t.take())?;
        match &sampler {
            Sampler::Timer(_) => self.timer_id.store(-1, Ordering::Release),
            Sampler::Perf(counter) => {
                self.perf_fd.store(-1, Ordering::SeqCst);
                perf::unbind_fd(counter.fd());
            }
        }
        Some(sampler)
    }

    /// A handler starts on this slot's counter signal: it then checks [`Slot::perf_fd`], and
    /// [`retire`] waits for it before closing the counter.
    #[inline]
    pub fn enter_handler(&self) -> SlotHandler<'_> {
        self.handlers.fetch_add(1, Ordering::SeqCst);
        SlotHandler(self)
    }

    fn handler_running(&self) -> bool {
        self.handlers.load(Ordering::SeqCst) != 0
    }
}

/// A handler running on a slot's counter signal (see [`Slot::enter_handler`]).
pub struct SlotHandler<'a>(&'a Slot);

impl Drop for SlotHandler<'_> {
    fn drop(&mut self) {
        self.0.handlers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counters whose slot still had a handler running when they were retired: disabled, closed
/// later by [`close_deferred`] (their descriptor number must not be reused while that handler
/// may still re-arm it).
static DEFERRED: Mutex<Vec<(&'static Slot, PerfCounter)>> = Mutex::new(Vec::new());

/// Deletes detached timers and closes detached counters. A counter is closed once no handler
/// runs on its slot (a handler that took its signal before the counter was detached could
/// still re-arm it); one whose handler is still running after 1 s (a stopped or starved thread)
/// is disabled and closed later, by [`close_deferred`].
pub fn retire(detached: Vec<(&'static Slot, Sampler)>) {
    let start = std::time::Instant::now();
    for (slot, sampler) in detached {
        match sampler {
            Sampler::Timer(timer) => timer.delete(),
            Sampler::Perf(counter) => {
                while slot.handler_running() && start.elapsed() < std::time::Duration::from_secs(1)
                {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                if slot.handler_running() {
                    counter.disable();
                    if let Ok(mut deferred) = DEFERRED.lock() {
                        deferred.push((slot, counter));
                    }
                } else {
                    counter.close();
                }
            }
        }
    }
}

/// Closes the deferred counters whose slot has no handler running any more (the writer calls
/// it every period).
pub fn close_deferred() {
    let Ok(mut deferred) = DEFERRED.lock() else {
        return;
    };
    let (done, waiting): (Vec<_>, Vec<_>) = deferred
        .drain(..)
        .partition(|(slot, _)| !slot.handler_running());
    *deferred = waiting;
    for (_, counter) in done {
        counter.close();
    }
}

/// The perf counter descriptors of the slots armed now, for the writer's check of stopped
/// counters: (slot, descriptor).
pub fn perf_counters(slots: &[&'static Slot]) -> Vec<(&'static Slot, i32)> {
    slots
        .iter()
        .filter_map(|&s| {
            let fd = s.perf_fd();
            (fd >= 0).then_some((s, fd))
        })
        .collect()
}

/// The slots of threads that may still be sampled or drained (for the drain thread and
/// ThreadEnd; never touched by the handler).
pub static SLOTS: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());

/// Slots whose thread is gone and whose records are drained, ready for new threads.
pub static FREE: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());

/// Slots allocated and slots reused, for the summary.
pub static SLOTS_CREATED: AtomicU64 = AtomicU64::new(0);
/// See [`SLOTS_CREATED`].
pub static SLOTS_REUSED: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn identity() -> Identity {
        Identity {
            name: "t".into(),
            java_id: 1,
        }
    }

    #[test]
    fn a_timer_disarmed_counts_the_whole_intervals_no_signal_stood_for() {
        const S: u64 = 1_000_000_000;
        let tid = crate::os::gettid();
        let slot = Slot::make(
            tid,
            std::ptr::null_mut(),
            identity(),
            ThreadStack::unknown(),
        )
        .unwrap();
        // A 1 s timer on this thread's CPU clock, with a signal ignored by default: it does not
        // fire while the test runs, the CPU times below are the test's.
        let timer = ThreadTimer::create(tid, libc::SIGWINCH, slot.signal_value()).unwrap();
        slot.arm(Sampler::Timer(timer), S, 5 * S).unwrap();
        // Two signals: one alone, one with an overrun of 2.
        slot.count_timer_intervals(1);
        slot.count_timer_intervals(3);
        // Armed at 5 s, 4 intervals signalled: 9 s accounted; at 12.5 s, 3 more intervals
        // passed without a signal, and half of one is no sample.
        slot.disarm_counting_tail(S, || 12 * S + S / 2);
        assert_eq!(slot.undelivered.get(), (3 * S, 3));
        assert!(!slot.is_armed());
        // Disarmed already: nothing more is counted.
        slot.disarm_counting_tail(S, || 20 * S);
        assert_eq!(slot.undelivered.get(), (3 * S, 3));
        // Every interval signalled: nothing counted.
        let timer = ThreadTimer::create(tid, libc::SIGWINCH, slot.signal_value()).unwrap();
        slot.reset_lost();
        slot.arm(Sampler::Timer(timer), S, 0).unwrap();
        slot.count_timer_intervals(7);
        slot.disarm_counting_tail(S, || 7 * S + S / 3);
        assert_eq!(slot.undelivered.get(), (0, 0));
    }

    #[test]
    fn signal_values_name_slots_only_through_the_table() {
        let a = Slot::make(1, std::ptr::null_mut(), identity(), ThreadStack::unknown()).unwrap();
        let b = Slot::make(2, std::ptr::null_mut(), identity(), ThreadStack::unknown()).unwrap();
        assert!(std::ptr::eq(
            Slot::from_signal_value(a.signal_value()).unwrap(),
            a
        ));
        assert!(std::ptr::eq(
            Slot::from_signal_value(b.signal_value()).unwrap(),
            b
        ));
        assert!(Slot::from_signal_value(0).is_none());
        assert!(Slot::from_signal_value(u64::from(u32::MAX)).is_none());
        assert!(Slot::from_signal_value(a as *const Slot as u64).is_none());
        assert!(Slot::from_signal_value(u64::MAX).is_none());
    }
}
