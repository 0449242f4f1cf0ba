//! The signal handler: one sample of the interrupted thread, in named steps, each in the module
//! that owns its concern: source check and weight ([`source`]), headroom ([`crate::sampling::stack`]),
//! native walk ([`crate::unwind::native_step`]), Java walk ([`crate::hotspot::sample`]), record
//! ([`crate::sampling::record`]). Allowed here: atomics, clock_gettime, reads inside the thread's stack bounds,
//! AsyncGetCallTrace, writes into preallocated buffers. No allocation, locks, logging, JVMTI/JNI,
//! TLS or panics.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::hotspot::sample::{self as java_step, JavaStack, Thread};
use crate::os;
use crate::sampling::buffers::{self, Scratch};
use crate::sampling::record::{pack_meta, pack_owner, JavaFrames, Record, EPOCH};
use crate::sampling::record::{FLAG_JAVA_CUT, FLAG_VM_WALK};
use crate::sampling::slots::Slot;
use crate::sampling::source::{self, Weight};
use crate::sampling::stack::StackBounds;
use crate::sampling::stats::{self, STATS};
use crate::sampling::ucontext;
use crate::unwind::codemap::{self, CodeMap};
use crate::unwind::{self, CodeMapWalk, Sample, Stop};

/// Handlers running now (between their first check and their last write).
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Waits (up to `limit`) until no handler is running; after `RECORDING` was cleared and the
/// timers deleted, no new one starts a sample, so every record of the recording is in the
/// rings when this returns true.
pub fn wait_for_handlers(limit: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    while IN_HANDLER.load(Ordering::SeqCst) != 0 {
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    true
}

/// Leaves `IN_HANDLER` when the sample is done, on every path.
struct InHandler;

impl InHandler {
    fn enter() -> InHandler {
        IN_HANDLER.fetch_add(1, Ordering::SeqCst);
        InHandler
    }
}

impl Drop for InHandler {
    fn drop(&mut self) {
        IN_HANDLER.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Adds the handler's run time to the statistics when it returns, on every path; declared
/// first, so that it is dropped last (after a perf counter's re-arm).
struct HandlerTime {
    start_ns: i64,
}

impl HandlerTime {
    fn start() -> HandlerTime {
        HandlerTime {
            start_ns: os::monotonic_ns(),
        }
    }
}

impl Drop for HandlerTime {
    fn drop(&mut self) {
        let ns = os::monotonic_ns().saturating_sub(self.start_ns).max(0) as u64;
        if let Some(bucket) = STATS.handler_ns.get(stats::walk_time_bucket(ns)) {
            stats::inc(bucket);
        }
    }
}

/// The `SA_SIGINFO` handler for the timers' and counters' signal.
pub(crate) extern "C" fn on_sample(_signal: i32, info: *mut libc::siginfo_t, uc: *mut c_void) {
    // An address in this frame: how deep the handler already is on the thread's stack.
    let here = 0u8;
    let here = std::ptr::addr_of!(here) as u64;
    let _errno = os::ErrnoGuard::save();
    let _time = HandlerTime::start();
    if info.is_null() || uc.is_null() {
        return;
    }
    let _in_handler = InHandler::enter();
    // 1. Source check: one of the agent's own signals, for this thread, while recording.
    // SAFETY: `info` is the kernel's siginfo for this SA_SIGINFO handler.
    let (slot, source) = match unsafe { source::of(info) } {
        source::Origin::Agent(slot, source) => (slot, source),
        source::Origin::Stale => {
            stats::inc(&STATS.stale_signals);
            return;
        }
        source::Origin::Foreign => {
            stats::inc(&STATS.foreign_signals);
            return;
        }
    };
    // Counted before the slot's counter is checked below: closing the counter waits for it.
    let _slot_handler = slot.enter_handler();
    if !source::is_due(slot) {
        return;
    }
    // 2. Weight: the CPU time the sample stands for (and a perf counter's re-arm, on return).
    let Some((weight, _rearm)) = source::weigh(slot, source) else {
        return;
    };
    // 3. Headroom: enough stack below the handler for the walks and AsyncGetCallTrace.
    if slot.stack.lacks_headroom(here) {
        slot.skipped.add(weight.cpu_ns, weight.asked);
        stats::inc(&STATS.low_stack);
        return;
    }
    let Some(buffers) = buffers::current() else {
        return;
    };
    let hint = slot.index() as usize;
    let Some(mut scratch) = buffers.scratch(hint) else {
        slot.dropped.add(weight.cpu_ns, weight.asked);
        stats::inc(&STATS.no_buffer);
        return;
    };
    let scratch = scratch.get();
    let time_ns = os::monotonic_ns();
    // SAFETY: `uc` is the kernel's ucontext for this handler.
    let regs = unsafe { ucontext::regs(uc) };
    let bounds = slot.stack.bounds_from(regs.sp);
    if bounds.is_none() && !slot.is_java() {
        // A thread found in /proc/self/task, whose stack the writer looks up from this.
        slot.unknown_stack_sp.store(regs.sp, Ordering::Relaxed);
    }
    // One code map for both walks.
    let (native, java) = codemap::with_current(|map| {
        // 4. Native walk.
        let native = native_walk(regs, map, bounds.as_ref(), &mut scratch.pcs, time_ns);
        // 5. Java walk.
        let java = java_walk(slot, map, bounds, &native, uc, scratch);
        // 6. The JVM's stub the native walk stopped at, kept as a native frame.
        let native = with_vm_stub(regs.pc, native, &java, &mut scratch.pcs);
        (native, java)
    });
    // 7. Record.
    let sample = SampleOf {
        slot,
        pc: regs.pc,
        time_ns,
        weight,
        native: &native,
        java: &java,
    };
    record(buffers, hint, &sample, scratch);
}

/// The native step, timed; counts samples taken off the thread's own stack.
fn native_walk(
    regs: unwind::Regs,
    map: Option<&CodeMap>,
    bounds: Option<&StackBounds>,
    pcs: &mut [u64],
    start_ns: i64,
) -> Sample {
    if bounds.is_none() {
        stats::inc(&STATS.off_stack);
    }
    let native = unwind::native_step(regs, map, bounds, pcs);
    let walk_ns = os::monotonic_ns().saturating_sub(start_ns).max(0) as u64;
    if let Some(bucket) = STATS.walk_ns.get(stats::walk_time_bucket(walk_ns)) {
        stats::inc(bucket);
    }
    native
}

/// Where the native walk stopped at JVM-generated code that is no Java frame (the interrupted
/// pc in an arraycopy, vtable or itable stub, an adapter; or the return address into a
/// runtime stub that called the VM), that pc becomes the last native frame: the writer names
/// it (`jfrnative.JvmCode`), and the Java walk went on below it. A sample no Java walk could
/// leave keeps its pc alone, as before ([`Stop::JvmCode`]).
fn with_vm_stub(pc: u64, native: Sample, java: &JavaStack, pcs: &mut [u64]) -> Sample {
    if native.stop != Stop::ReachedJava || java.count == 0 {
        return native;
    }
    let stub_pc = match (native.count, native.java_entry) {
        (0, _) if native.context.is_none() => pc,
        (n, Some(entry)) if n > 0 => entry.pc,
        _ => return native,
    };
    if !crate::hotspot::in_vm_stub(stub_pc) {
        return native;
    }
    match pcs.get_mut(native.count) {
        Some(slot) => {
            *slot = stub_pc;
            stats::inc(&STATS.vm_stub_frames);
            Sample {
                count: native.count.saturating_add(1),
                ..native
            }
        }
        None => native,
    }
}

/// The Java step, from the context the native walk found the sample in; counts how often the
/// two Java walks agree.
fn java_walk(
    slot: &Slot,
    map: Option<&CodeMap>,
    bounds: Option<StackBounds>,
    native: &Sample,
    uc: *mut c_void,
    scratch: &mut Scratch,
) -> JavaStack {
    if !slot.is_java() {
        return JavaStack {
            agct_code: crate::hotspot::agct::NOT_JAVA_THREAD,
            count: 0,
            from_vm: false,
            cut: false,
            vthread_id: 0,
            compared: None,
        };
    }
    // Our signal came with another one whose handler had not started: the sample is of the
    // code that signal interrupted, Java stack included.
    let uc = match native.context {
        Some(inner) => {
            stats::inc(&STATS.other_handler_entered);
            inner as *mut c_void
        }
        None => uc,
    };
    // SAFETY: `uc` is the kernel's ucontext, or one the native walk checked to lie on this
    // thread's stack, which stays mapped and unchanged while this handler runs above it.
    let mut at = unsafe { ucontext::interrupted(uc, native.java_entry) };
    // A virtual thread's thaw whose native frames show it has not changed the continuation
    // yet: the Java walk crosses the continuation stub it was called from.
    // Tested only where the native walk entered from a continuation stub.
    at.thaw_not_started = native.java_entry.is_some_and(|entry| {
        crate::hotspot::stubs::find(entry.pc)
            .is_some_and(|s| s.kind == crate::hotspot::stubs::StubKind::Continuation)
    }) && crate::hotspot::continuation::layout().is_some_and(|c| {
        c.thaw_start
            .holds(scratch.pcs.get(..native.count).unwrap_or_default())
    });
    let stack = bounds.map(|b| slot.stack.bounds_from(at.regs.sp).unwrap_or(b));
    let between = CodeMapWalk {
        mem: stack.as_ref(),
        map,
    };
    let thread = Thread {
        env: slot.env(),
        stack: stack.as_ref(),
        uc,
        at,
        native: &between,
    };
    let out = java_step::Out {
        agct: &mut scratch.frames,
        kinds: &mut scratch.kinds,
        vm: &mut scratch.java,
    };
    // SAFETY: in this handler, on the slot's own thread (checked by `source::is_due`), after
    // the agent primed AsyncGetCallTrace (it arms timers only after that), with enough stack
    // left (the headroom step); `uc` as above.
    let java = unsafe { java_step::take(&thread, native.stop, out) };
    if let Some(agreed) = java.compared {
        stats::inc(&STATS.vm_walk_compared);
        if agreed {
            stats::inc(&STATS.vm_walk_agreed);
        }
    }
    java
}

/// What one sample found, for its record.
struct SampleOf<'a> {
    slot: &'a Slot,
    /// The interrupted pc.
    pc: u64,
    time_ns: i64,
    weight: Weight,
    native: &'a Sample,
    java: &'a JavaStack,
}

/// The record step: writes the sample into a ring, or counts it lost.
fn record(buffers: &buffers::Buffers, hint: usize, sample: &SampleOf<'_>, scratch: &Scratch) {
    let SampleOf {
        slot, native, java, ..
    } = *sample;
    let flags =
        if java.from_vm { FLAG_VM_WALK } else { 0 } | if java.cut { FLAG_JAVA_CUT } else { 0 };
    let frames = if java.from_vm {
        JavaFrames::Vm(scratch.java.get(..java.count).unwrap_or_default())
    } else {
        JavaFrames::Agct(
            scratch.frames.get(..java.count).unwrap_or_default(),
            scratch.kinds.get(..java.count).unwrap_or_default(),
        )
    };
    // Interrupted in JVM-generated code that no walk could leave: its pc, alone, says where.
    let (pcs, stop) = if native.count == 0 && java.count == 0 && native.stop == Stop::ReachedJava {
        (std::slice::from_ref(&sample.pc), Stop::JvmCode)
    } else {
        let pcs = scratch.pcs.get(..native.count).unwrap_or_default();
        (pcs, native.stop)
    };
    let record = Record {
        time_ns: sample.time_ns,
        weight_ns: sample.weight.cpu_ns,
        meta: pack_meta(java.agct_code, stop, pcs.len(), flags),
        owner: pack_owner(slot.index(), EPOCH.load(Ordering::Relaxed)),
        vthread_id: java.vthread_id,
        pcs,
        java: frames,
    };
    let len = record.words();
    let pushed = buffers
        .ring(hint, len)
        .is_some_and(|mut ring| ring.get().push(len, |i| record.word(i)));
    if !pushed {
        slot.dropped.add(sample.weight.cpu_ns, sample.weight.asked);
        stats::inc(&STATS.dropped_ring_full);
        return;
    }
    stats::inc(&STATS.samples);
    if stop.truncated() {
        stats::inc(&STATS.native_truncated);
    }
    if crate::hotspot::agct::failed(java.agct_code) {
        stats::inc(stats::agct_error(java.agct_code));
    }
    if java.from_vm {
        stats::inc(&STATS.vm_walk_used);
    }
}
