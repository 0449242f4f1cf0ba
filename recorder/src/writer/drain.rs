//! The writer thread: every few milliseconds it empties every thread's ring, turns records into
//! `jdk.CPUTimeSample` events (resolving jmethodIDs through JVMTI), reports drops as
//! `jdk.CPUTimeSamplesLost`, keeps the code map current, writes the `jdk.NativeLibrary` events
//! each chunk needs (see [`crate::writer::library_events`]), and rotates chunks. It may allocate and
//! lock.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use jfr_writer::*;

use crate::hotspot::agct;
use crate::jvmti::Jvmti;
use crate::options::{CStack, NStack, Options};
use crate::os;
use crate::sampling::buffers;
use crate::sampling::record::{
    unpack_frame, unpack_meta, unpack_owner, EPOCH, FLAG_JAVA_CUT, FLAG_VM_WALK,
    RECORD_HEADER_WORDS,
};
use crate::sampling::slots::{slot_at, Slot, FREE, SLOTS, SLOTS_CREATED, SLOTS_REUSED};
use crate::sampling::stats::{self, STATS};
use crate::unwind::codemap::{self, Retained};
use crate::unwind::tables::TableStats;
use crate::unwind::watcher;
use crate::writer::kept_libraries::{Keeper, KeptLibraries};
use crate::writer::library_events::LibraryEvents;
use crate::writer::methods::Methods;
use crate::writer::output::Output;
use crate::writer::segments::Segments;
use crate::writer::status::{self, State};

/// How often the rings are emptied.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(10);

/// How often stopped perf counters are looked for.
const COUNTER_CHECK_PERIOD_NS: i64 = 1_000_000_000;

/// How often the status file (if any) is rewritten.
const STATUS_PERIOD_NS: i64 = 250_000_000;

/// Microsecond ticks: the 5–30 µs between the JDK's sampler and ours on one timer tick stay
/// visible (`compare_jdk_sampler.py` pairs samples by time).
const TICKS_PER_SECOND: u64 = 1_000_000;

/// The recording's start: CLOCK_MONOTONIC in µs as `origin_ticks`, and the wall clock then.
/// The file's ticks count µs from there ([`Drain::new`]), so that a timestamp takes 4 varint
/// bytes for the first 268 s of a recording and 5 up to 9.5 hours; ticks of CLOCK_MONOTONIC
/// itself (time since boot) take 5 bytes from the start, 6 once the machine is up 9.5 hours.
pub fn clock() -> Clock {
    let (mono, wall) = (os::monotonic_ns(), os::realtime_ns());
    Clock {
        ticks_per_second: TICKS_PER_SECOND,
        origin_ticks: mono / 1_000,
        origin_epoch_nanos: wall,
    }
}

/// A duration as the `interval` option writes it: `10ms`, `250us`, `1500ns`.
fn duration_text(ns: u64) -> String {
    match ns {
        _ if ns % 1_000_000 == 0 => format!("{}ms", ns / 1_000_000),
        _ if ns % 1_000 == 0 => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

/// The file's ticks at CLOCK_MONOTONIC `mono_ns`: µs since `origin_us`, the recording's start
/// (nothing the recording holds happened before it; 0 if something claims to).
fn ticks_at(origin_us: i64, mono_ns: i64) -> i64 {
    (mono_ns / 1_000 - origin_us).max(0)
}

/// Per-thread state of the drain.
struct ThreadState {
    thread: ThreadId,
    /// (CPU ns, samples) already reported lost, by reason ([`LOST_REASONS`]).
    reported_lost: [(u64, u64); 4],
    /// Whether it was a Java thread when named.
    java: bool,
}

/// Why samples were lost, with the `reason` text of `jdk.CPUTimeSamplesLost`.
const LOST_REASONS: [&str; 4] = [
    "sample buffer full",
    "too little stack left",
    "before the agent found the thread",
    "timer expired, no signal before the thread's sampling ended",
];

/// Totals for the summary printed at the end.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Samples written.
    pub samples: u64,
    /// Sum of `samplingPeriod`, ns.
    pub cpu_ns: u64,
    /// Samples lost (the engine asked for them and they were not taken).
    pub lost: u64,
    /// CPU time of the lost samples, ns.
    pub lost_ns: u64,
    /// Records of an earlier recording found in the buffers (left out).
    pub stale: u64,
    /// Samples whose Java stack could not be taken.
    pub failed: u64,
    /// Samples whose Java stack came from the VM walk.
    pub vm_walk: u64,
    /// Of those, the ones AsyncGetCallTrace failed on.
    pub vm_walk_rescued: u64,
    /// Of those, the ones the walk cut short.
    pub vm_walk_cut: u64,
    /// Of those, the ones of a thread outside any Java call (an empty Java stack).
    pub outside_java: u64,
    /// Java frames written.
    pub java_frames: u64,
    /// Samples of a mounted virtual thread (written as that thread).
    pub virtual_thread_samples: u64,
    /// `jfrnative.JvmCode` events written (named stubs, summed over chunks).
    pub jvm_code_events: u64,
    /// Samples taken while a virtual thread was mounted whose whole stack passes no
    /// continuation entry: the carrier's own code (mounting, unmounting), written as the carrier.
    pub mount_transitions: u64,
    /// Of those, the ones with a known type.
    pub typed_frames: u64,
    /// The unwind tables (`cstack=dwarf`).
    pub tables: Option<TableStats>,
    /// The libraries kept beside the recording.
    pub kept: KeptLibraries,
    /// The engine that signalled the samples.
    pub engine: &'static str,
    /// A directory recording's chunk files at the end: (files kept, their bytes, files removed
    /// by `maxsize`/`maxage`).
    pub files: Option<(usize, u64, u64)>,
    /// What the code maps and unwind tables retain at the end.
    pub retained: Retained,
    /// Build ids cached for `jdk.NativeLibrary` events at the end.
    pub build_ids: usize,
    /// Samples of threads that are not Java threads (`threads=all`), and their CPU time, ns.
    pub non_java: (u64, u64),
    /// The process's CPU time (user and system, `getrusage`) from the recording's start to
    /// its end, ns (with `threads=all`, what the samples and lost samples should add up to),
    /// with the writer thread's own CPU time (not sampled), ns.
    pub process_cpu_ns: Option<(u64, u64)>,
    /// Whether every thread was sampled (`threads=all`).
    pub threads_all: bool,
    /// What the writer thread's CPU time went to.
    pub writer_cpu: crate::writer::cpu::WriterCpu,
}

/// What `jdk.OSInformation` and `jdk.CPUInformation` say, read once per recording.
struct System {
    os_version: String,
    cpu_model: String,
    hw_threads: u32,
}

impl System {
    fn read() -> System {
        let os_version = std::fs::read_to_string("/proc/version").unwrap_or_default();
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
            .unwrap_or_default();
        let hw_threads = std::thread::available_parallelism().map_or(0, |n| n.get() as u32);
        System {
            os_version: os_version.trim().to_string(),
            cpu_model,
            hw_threads,
        }
    }
}

/// The drain's state.
pub struct Drain {
    rec: Recording<Output>,
    jvmti: Jvmti,
    options: Options,
    methods: Methods,
    /// By slot index (forgotten when the slot is freed for another thread).
    threads: HashMap<u32, ThreadState>,
    libraries: LibraryEvents,
    /// Copies of the libraries that may not outlive the JVM.
    keeper: Keeper,
    /// CLOCK_MONOTONIC at tick 0 of the file, µs.
    origin_us: i64,
    chunk_start_ns: i64,
    system: System,
    record: Vec<u64>,
    java: Vec<Frame>,
    /// The current sample's native frames between Java frames.
    segments: Segments,
    /// The current sample's native frames, when the VM walk added some.
    native_pcs: Vec<u64>,
    summary: Summary,
    status_written_ns: i64,
    /// Per slot with a perf counter: (descriptor, counted ns, thread CPU ns) at the last check.
    counters: HashMap<u32, (i32, u64, u64)>,
    counters_checked_ns: i64,
    /// The process's CPU time at the start (`threads=all`), ns.
    process_cpu_start_ns: Option<u64>,
}

impl Drain {
    /// Opens the output and writes the first chunk's context. `start` is the recording's
    /// start ([`clock`]); the file's ticks count from there.
    pub fn new(jvmti: Jvmti, options: Options, start: Clock) -> io::Result<Drain> {
        let process_cpu_start_ns = Some(os::process_cpu_ns());
        let output = Output::open(&options)?;
        let origin_us = start.origin_ticks;
        let clock = Clock {
            origin_ticks: 0,
            ..start
        };
        let rec = Recording::new(
            output,
            RecordingOptions {
                clock,
                native_stack_encoding: match options.nstack {
                    NStack::Pooled => NativeStackEncoding::Pooled,
                    NStack::Inline => NativeStackEncoding::Inline,
                },
            },
            ticks_at(origin_us, os::monotonic_ns()),
        )
        .map_err(io::Error::other)?;
        watcher::start(options.cstack == CStack::Dwarf)?;
        let keeper = Keeper::new(options.keep_libs.as_deref(), options.keep_libs_max_bytes);
        if options.keep_libs.is_some() {
            if let Err(e) = crate::unwind::load_hook::install() {
                eprintln!(
                    "jfr-native: libraries the JVM loads are not held open from their dlopen on \
                     ({e}): one deleted right after loading is kept as rebuilt from memory"
                );
            }
        }
        let mut d = Drain {
            rec,
            jvmti,
            options,
            methods: Methods::default(),
            threads: HashMap::new(),
            libraries: LibraryEvents::new(),
            keeper,
            origin_us,
            chunk_start_ns: os::monotonic_ns(),
            system: System::read(),
            record: Vec::new(),
            java: Vec::new(),
            segments: Segments::default(),
            native_pcs: Vec::new(),
            summary: Summary::default(),
            status_written_ns: 0,
            counters: HashMap::new(),
            counters_checked_ns: os::monotonic_ns(),
            process_cpu_start_ns,
        };
        d.keeper.consider(d.libraries.current());
        d.start_chunk(true);
        d.write_status(State::Recording, "");
        Ok(d)
    }

    /// The file's ticks now.
    fn ticks_now(&self) -> i64 {
        ticks_at(self.origin_us, os::monotonic_ns())
    }

    /// Keeps the code map current (see [`watcher`]) and writes `jdk.NativeLibrary` events for
    /// libraries loaded since.
    pub fn refresh_code_map(&mut self) {
        watcher::refresh();
        let now = self.ticks_now();
        if self.libraries.refresh(&mut self.rec, now) {
            self.keeper.consider(self.libraries.current());
        }
    }

    /// What every chunk repeats: the recording, its settings, the system; the libraries of
    /// the first chunk.
    fn start_chunk(&mut self, first: bool) {
        let now = self.ticks_now();
        let sample_type = self.rec.event_type_id(EventType::CpuTimeSample) as i64;
        self.rec.write(&ActiveRecording {
            start_ticks: now,
            id: 1,
            name: "jfr-native",
            destination: Some(&self.options.file),
            disk: true,
            max_age_ms: self
                .options
                .repository
                .and_then(|r| r.max_age_ns)
                .map_or(0, |ns| (ns / 1_000_000) as i64),
            flush_interval_ms: (self.options.chunk.duration_ns / 1_000_000) as i64,
            max_size_bytes: self
                .options
                .repository
                .map_or(0, |r| r.max_size_bytes as i64),
            recording_start_ms: self.rec.options().clock.origin_epoch_nanos / 1_000_000,
            recording_duration_ms: 0,
        });
        // The interval and the engine in effect (perf may have been refused), given or not, so
        // that readers know them; then the other options as given.
        let effective = [
            (
                "interval".to_string(),
                duration_text(self.options.interval_ns),
            ),
            (
                "engine".to_string(),
                crate::sampling::engine::current()
                    .engine()
                    .name()
                    .to_string(),
            ),
        ];
        let given = self
            .options
            .given
            .iter()
            .filter(|(k, _)| k != "engine" && k != "interval")
            .cloned();
        for (name, value) in effective.into_iter().chain(given) {
            self.rec.write(&ActiveSetting {
                start_ticks: now,
                event_type_id: sample_type,
                name: &name,
                value: &value,
            });
        }
        self.rec.write(&OsInformation {
            start_ticks: now,
            os_version: &self.system.os_version,
        });
        self.rec.write(&CpuInformation {
            start_ticks: now,
            cpu: std::env::consts::ARCH,
            description: &self.system.cpu_model,
            sockets: 0,
            cores: 0,
            hw_threads: self.system.hw_threads,
        });
        self.libraries.start_chunk(&mut self.rec, now, first);
    }

    /// Before a chunk is finished: the libraries and the JVM-generated code its native stacks
    /// reach, each described in the chunk itself.
    fn finish_chunk_descriptions(&mut self) {
        self.libraries.finish_chunk(&mut self.rec);
        let now = self.ticks_now();
        self.summary.jvm_code_events +=
            crate::writer::jvm_code_events::finish_chunk(&mut self.rec, now) as u64;
    }

    fn thread_id(&mut self, slot: &'static Slot) -> ThreadId {
        match self.threads.get(&slot.index()) {
            // Named anew once a thread the `threads=all` scan found first announces itself as
            // a Java thread.
            Some(t) if t.java == slot.is_java() => return t.thread,
            _ => {}
        }
        let reported_lost = self
            .threads
            .get(&slot.index())
            .map_or([(0, 0); 4], |t| t.reported_lost);
        let identity = slot.identity();
        let name: Box<str> = identity.name.as_str().into();
        // A thread that is not a Java thread is written as the JDK writes its VM thread: an OS
        // name and id, no Java name, Java thread id 0.
        let java_name = slot.is_java().then(|| name.clone());
        let thread = self.rec.thread(Thread {
            os_name: Some(name),
            os_thread_id: i64::from(slot.tid()),
            java_name,
            java_thread_id: identity.java_id,
            group: None,
            is_virtual: false,
        });
        self.threads.insert(
            slot.index(),
            ThreadState {
                thread,
                reported_lost,
                java: slot.is_java(),
            },
        );
        thread
    }

    /// A virtual thread, by its `threadId()`. Its name is not known to the agent (it would have
    /// to be read from the Java object in the signal handler): written as null, as is its OS
    /// thread (it runs on changing carriers).
    fn virtual_thread_id(&mut self, java_id: i64) -> ThreadId {
        self.rec.thread(Thread {
            os_name: None,
            os_thread_id: 0,
            java_name: None,
            java_thread_id: java_id,
            group: None,
            is_virtual: true,
        })
    }

    /// Empties the rings, reports lost weight, then recycles the slots of threads that are
    /// gone.
    pub fn drain_all(&mut self) {
        let slots: Vec<&'static Slot> = SLOTS.lock().map(|s| s.clone()).unwrap_or_default();
        // Read before draining: if the task is gone now, nothing can be pushed for it after
        // the drain below.
        let gone: Vec<&'static Slot> = slots
            .iter()
            .copied()
            .filter(|s| s.ended.load(Ordering::Acquire) && !os::thread_exists(s.tid()))
            .collect();
        if let Some(buffers) = buffers::current() {
            let epoch = EPOCH.load(Ordering::SeqCst);
            let mut record = std::mem::take(&mut self.record);
            for ring in 0..buffers.ring_count() {
                while buffers.pop(ring, &mut record) {
                    let (index, record_epoch) = unpack_owner(record.get(3).copied().unwrap_or(0));
                    match slot_at(index) {
                        Some(slot) if record_epoch == epoch => {
                            let vthread = record.get(4).copied().unwrap_or(0);
                            let carrier = self.thread_id(slot);
                            let mounted =
                                (vthread != 0).then(|| self.virtual_thread_id(vthread as i64));
                            self.write_sample(carrier, mounted, &record);
                        }
                        _ => self.summary.stale += 1,
                    }
                }
            }
            self.record = record;
        }
        for slot in slots {
            let lost = [
                slot.dropped.get(),
                slot.skipped.get(),
                slot.unseen.get(),
                slot.undelivered.get(),
            ];
            if lost == [(0, 0); 4] && !self.threads.contains_key(&slot.index()) {
                continue;
            }
            let thread = self.thread_id(slot);
            for (reason, (cpu_ns, samples)) in lost.into_iter().enumerate() {
                let Some(state) = self.threads.get_mut(&slot.index()) else {
                    break;
                };
                let Some(reported) = state.reported_lost.get_mut(reason) else {
                    break;
                };
                let (new_ns, new_samples) = (
                    cpu_ns.saturating_sub(reported.0),
                    samples.saturating_sub(reported.1),
                );
                if new_samples == 0 {
                    continue;
                }
                *reported = (cpu_ns, samples);
                self.summary.lost += new_samples;
                self.summary.lost_ns += new_ns;
                self.rec.write(&CpuTimeSamplesLost {
                    start_ticks: self.ticks_now(),
                    lost_samples: i32::try_from(new_samples).unwrap_or(i32::MAX),
                    thread: Some(thread),
                    reason: LOST_REASONS.get(reason).copied().unwrap_or_default(),
                    lost_cpu_ns: new_ns,
                });
            }
        }
        if !gone.is_empty() {
            for slot in &gone {
                self.threads.remove(&slot.index());
            }
            if let Ok(mut slots) = SLOTS.lock() {
                slots.retain(|s| !gone.iter().any(|g| std::ptr::eq(*s, *g)));
            }
            if let Ok(mut free) = FREE.lock() {
                free.extend(gone);
            }
        }
    }

    /// Writes one record as a sample of the platform thread `carrier`, or of the virtual thread
    /// `mounted` on it: a virtual thread's Java stack ends at its continuation's entry
    /// (`Continuation.enterSpecial`, kept), as the JDK writes it; the frames below are the
    /// carrier's. A whole stack that passes no continuation entry is the carrier's own (a
    /// carrier mounting or unmounting the virtual thread), and is written as the carrier's.
    fn write_sample(&mut self, carrier: ThreadId, mounted: Option<ThreadId>, r: &[u64]) {
        let is_virtual = mounted.is_some();
        let (Some(&time_ns), Some(&weight), Some(&meta)) = (r.first(), r.get(1), r.get(2)) else {
            return;
        };
        let (agct_code, stop, native_count, flags) = unpack_meta(meta);
        let pcs = r
            .get(RECORD_HEADER_WORDS..RECORD_HEADER_WORDS + native_count)
            .unwrap_or_default();
        let java_words = r
            .get(RECORD_HEADER_WORDS + native_count..)
            .unwrap_or_default();
        self.java.clear();
        self.segments.clear();
        let mut at_continuation_entry = false;
        for pair in java_words.chunks_exact(2) {
            let (kind, bci) = unpack_frame(pair[0]);
            if self.segments.take(kind, pair[1]) {
                continue;
            }
            self.segments.close(self.java.len());
            let frame =
                self.methods
                    .frame(&self.jvmti, &mut self.rec, bci, pair[1] as *mut _, kind);
            self.summary.java_frames += 1;
            self.summary.typed_frames += u64::from(frame.frame_type != FrameType::Unknown);
            self.java.push(frame);
            if is_virtual && self.methods.is_continuation_entry(pair[1] as *mut _) {
                at_continuation_entry = true;
                break;
            }
        }
        self.segments.finish(self.java.len());
        let from_vm = flags & FLAG_VM_WALK != 0;
        let not_java = agct_code == agct::NOT_JAVA_THREAD;
        let failed = agct_code < 0 && !from_vm && !not_java;
        let cut = flags & FLAG_JAVA_CUT != 0;
        let truncated = cut || (!at_continuation_entry && self.java.len() >= self.options.depth);
        let stack_trace = (!failed).then(|| self.rec.stack_trace(&self.java, truncated));
        let thread = match mounted {
            Some(_) if !failed && !truncated && !at_continuation_entry => {
                self.summary.mount_transitions += 1;
                carrier
            }
            Some(virtual_thread) => {
                self.summary.virtual_thread_samples += 1;
                virtual_thread
            }
            None => carrier,
        };
        self.summary.vm_walk += u64::from(from_vm);
        self.summary.vm_walk_rescued += u64::from(from_vm && agct::failed(agct_code));
        self.summary.vm_walk_cut += u64::from(from_vm && cut);
        self.summary.outside_java += u64::from(from_vm && self.java.is_empty());
        // The native frames above the first Java frame: the native walk's, then those the VM
        // walk found past a stub the sample was taken in (its native callers).
        let (more, more_gap) = self.segments.top();
        let segments = self.segments.written();
        let native = if more.is_empty() && !more_gap {
            self.rec
                .native_stack_trace_with_segments(pcs, stop.truncated(), &segments)
        } else {
            self.native_pcs.clear();
            self.native_pcs.extend_from_slice(pcs);
            self.native_pcs.extend_from_slice(more);
            let truncated = more_gap || (more.is_empty() && stop.truncated());
            self.rec
                .native_stack_trace_with_segments(&self.native_pcs, truncated, &segments)
        };
        // The sample's CPU weight, ns: the timer's interval × (1 + overruns), or the thread's
        // CPU time since its previous perf sample.
        let period_ns = weight;
        self.rec.write(&CpuTimeSample {
            start_ticks: ticks_at(self.origin_us, time_ns as i64),
            stack_trace,
            thread: Some(thread),
            failed,
            sampling_period_ticks: period_ns / 1_000,
            biased: false,
            native_stack_trace: Some(native),
        });
        self.summary.samples += 1;
        self.summary.cpu_ns += period_ns;
        self.summary.failed += u64::from(failed);
        if not_java {
            self.summary.non_java.0 += 1;
            self.summary.non_java.1 += period_ns;
        }
    }

    /// Once a second: starts again the perf counters that stopped without their signal (the
    /// signal was lost: the thread used CPU, the counter did not count), and closes retired
    /// counters whose handler has finished.
    pub fn check_counters(&mut self) {
        crate::sampling::slots::close_deferred();
        let now_ns = os::monotonic_ns();
        if now_ns - self.counters_checked_ns < COUNTER_CHECK_PERIOD_NS {
            return;
        }
        self.counters_checked_ns = now_ns;
        let slots: Vec<&'static Slot> = SLOTS.lock().map(|s| s.clone()).unwrap_or_default();
        let mut seen = HashMap::new();
        for (slot, fd) in crate::sampling::slots::perf_counters(&slots) {
            let (Some(counted), cpu) = (
                crate::sampling::perf::count(fd),
                crate::sampling::engine::thread_cpu_ns(slot.tid()),
            ) else {
                continue;
            };
            if let Some(&(old_fd, old_counted, old_cpu)) = self.counters.get(&slot.index()) {
                let stopped = old_fd == fd
                    && counted == old_counted
                    && cpu.saturating_sub(old_cpu) > 2 * self.options.interval_ns;
                if stopped && slot.perf_fd() == fd && crate::sampling::perf::rearm(fd) {
                    stats::inc(&STATS.perf_restarted);
                }
            }
            seen.insert(slot.index(), (fd, counted, cpu));
        }
        self.counters = seen;
    }

    /// Rotates the chunk if it is old or large enough.
    pub fn maybe_rotate(&mut self) -> jfr_writer::Result<()> {
        let now_ns = os::monotonic_ns();
        let policy = self.options.chunk;
        let old =
            policy.duration_ns > 0 && (now_ns - self.chunk_start_ns) as u64 >= policy.duration_ns;
        let large =
            policy.size_bytes > 0 && self.rec.chunk_event_bytes() as u64 >= policy.size_bytes;
        if old || large {
            self.rotate_at(now_ns)?;
        }
        Ok(())
    }

    fn rotate_at(&mut self, now_ns: i64) -> jfr_writer::Result<()> {
        self.finish_chunk_descriptions();
        self.rec.rotate(ticks_at(self.origin_us, now_ns))?;
        self.chunk_start_ns = now_ns;
        self.start_chunk(false);
        Ok(())
    }

    /// Serves the pending dump requests ([`crate::writer::dump`]): the samples drained so far
    /// go into a finished chunk, then the finished chunks into each request's file.
    pub fn serve_dumps(&mut self) -> jfr_writer::Result<()> {
        let requests = crate::writer::dump::take_pending();
        if requests.is_empty() {
            return Ok(());
        }
        self.drain_all();
        self.rotate_at(os::monotonic_ns())?;
        for request in requests {
            crate::writer::dump::serve(request, self.rec.output());
        }
        Ok(())
    }

    /// Rewrites the status file if it is due.
    pub fn maybe_write_status(&mut self) {
        let now_ns = os::monotonic_ns();
        if now_ns - self.status_written_ns >= STATUS_PERIOD_NS {
            self.write_status(State::Recording, "");
        }
    }

    /// Rewrites the status file (if the options name one) with the current counters.
    pub fn write_status(&mut self, state: State, message: &str) {
        self.status_written_ns = os::monotonic_ns();
        if let Some(path) = &self.options.status {
            status::write(path, state, &self.counts(self.rec.totals().chunks), message);
        }
    }

    fn counts(&self, chunks: u64) -> status::Counts {
        status::Counts {
            samples: self.summary.samples,
            lost: self.summary.lost,
            failed: self.summary.failed,
            cpu_ns: self.summary.cpu_ns,
            chunks,
        }
    }

    /// Writes the last chunk and the final status; returns the summary and the file's totals.
    pub fn finish(mut self) -> (Summary, jfr_writer::Result<Totals>) {
        self.drain_all();
        let mut summary = Summary {
            tables: watcher::table_stats(),
            engine: crate::sampling::engine::current().describe(),
            retained: codemap::retained(),
            build_ids: self.libraries.build_ids(),
            kept: self.keeper.kept().clone(),
            threads_all: self.options.threads == crate::options::Threads::All,
            process_cpu_ns: self.process_cpu_start_ns.map(|start| {
                (
                    os::process_cpu_ns().saturating_sub(start),
                    os::thread_cpu_ns().max(0) as u64,
                )
            }),
            ..self.summary
        };
        let status_path = self.options.status.clone();
        let counts = self.counts(self.rec.totals().chunks);
        self.finish_chunk_descriptions();
        let now = self.ticks_now();
        let result = self.rec.finish_with_totals(now).map(|(output, totals)| {
            summary.files = output.kept();
            totals
        });
        if let Some(path) = status_path {
            match &result {
                Ok(totals) => status::write(
                    &path,
                    State::Finished,
                    &status::Counts {
                        chunks: totals.chunks,
                        ..counts
                    },
                    "",
                ),
                Err(e) => status::write(&path, State::Failed, &counts, &e.to_string()),
            }
        }
        (summary, result)
    }
}

/// The summary's lines on CPU time: the writer thread's share of the process's, and with
/// `threads=all` what the samples stand for of the process's.
fn cpu_summary(text: &mut String, s: &Summary) {
    let Some((process_ns, writer_ns)) = s.process_cpu_ns else {
        return;
    };
    text.push_str(&format!(
        "\n  the agent's writer thread used {:.3} CPU-s, {:.1} % of the process's {:.2} \
         CPU-s during the recording: {}",
        writer_ns as f64 / 1e9,
        writer_ns as f64 * 100.0 / process_ns.max(1) as f64,
        process_ns as f64 / 1e9,
        s.writer_cpu.describe().join(", ")
    ));
    if !s.threads_all {
        return;
    }
    let recorded = s.cpu_ns + s.lost_ns;
    let others = process_ns.saturating_sub(writer_ns).max(1);
    text.push_str(&format!(
        "\n  threads=all: {} samples ({:.2} CPU-s) of threads that are not Java threads; \
         the process used {:.2} CPU-s during the recording (getrusage), {:.2} of them in \
         threads other than the agent's writer ({:.2}, not sampled); the samples and lost \
         samples stand for {:.2} CPU-s ({:.1} % of those)",
        s.non_java.0,
        s.non_java.1 as f64 / 1e9,
        process_ns as f64 / 1e9,
        others as f64 / 1e9,
        writer_ns as f64 / 1e9,
        recorded as f64 / 1e9,
        recorded as f64 * 100.0 / others as f64
    ));
}

/// The summary's line on the libraries kept beside the recording.
fn kept_summary(text: &mut String, k: &KeptLibraries) {
    let (Some(dir), false) = (&k.dir, k.kept.is_empty() && k.left_out.is_empty()) else {
        return;
    };
    let rebuilt = k.kept.iter().filter(|l| l.from_memory).count();
    let bytes: u64 = k.kept.iter().map(|l| l.bytes).sum();
    text.push_str(&format!(
        "\n  libraries that may not outlive the JVM, kept in {dir}: {} ({:.1} MB; {} copied \
         whole, {rebuilt} rebuilt from memory: their files were gone), in {:.1} ms of CPU; \
         libraries held open from their dlopen on: {}",
        k.kept.len(),
        bytes as f64 / 1e6,
        k.kept.len() - rebuilt,
        k.cpu_ns as f64 / 1e6,
        crate::unwind::load_hook::LOADS_HELD.load(Ordering::Relaxed)
    ));
    for (path, why) in &k.left_out {
        text.push_str(&format!("\n  not kept: {path}: {why}"));
    }
}

/// The summary printed to stderr when recording ends.
/// The summary's lines on Java stacks: the VM walk, virtual threads and their frozen frames.
fn java_summary(text: &mut String, s: &Summary) {
    if s.vm_walk > 0 || s.java_frames > 0 {
        text.push_str(&format!(
            "\n  Java stacks from HotSpot's frame descriptions: {} ({} where AsyncGetCallTrace \
             failed, {} cut short, {} empty: native code outside any Java call); Java frames \
             with a known type: {} of {}; where AsyncGetCallTrace walked too (where the VM walk \
             was not whole, and 1 in {} of the others), both walks agree on every frame of {} \
             of {} samples",
            s.vm_walk,
            s.vm_walk_rescued,
            s.vm_walk_cut,
            s.outside_java,
            s.typed_frames,
            s.java_frames,
            crate::hotspot::sample::AGREEMENT_PERIOD,
            STATS.vm_walk_agreed.load(Ordering::Relaxed),
            STATS.vm_walk_compared.load(Ordering::Relaxed)
        ));
    }
    if s.virtual_thread_samples > 0 {
        text.push_str(&format!(
            "\n  samples of virtual threads (written as the virtual thread): {} (and {} of a \
             carrier mounting or unmounting one, written as the carrier)",
            s.virtual_thread_samples, s.mount_transitions
        ));
    }
    let outcomes = named_counts(
        &crate::hotspot::continuation::OUTCOME_COUNTS,
        &crate::hotspot::continuation::OUTCOMES,
    );
    if !outcomes.is_empty() {
        text.push_str(&format!(
            "\n  virtual threads' frozen frames (stack chunks): {}",
            outcomes.join(", ")
        ));
    }
}

pub fn summary_text(file: &str, s: &Summary, chunks: u64) -> String {
    let mut text = format!(
        "jfr-native: wrote {file}: {} samples ({:.1} CPU-s) in {chunks} chunks; lost {:.1} CPU-s \
         ({} samples); Java stack failed {}; native stack truncated {}; thread slots created {}, \
         reused {}",
        s.samples,
        s.cpu_ns as f64 / 1e9,
        s.lost_ns as f64 / 1e9,
        s.lost,
        s.failed,
        STATS.native_truncated.load(Ordering::Relaxed),
        SLOTS_CREATED.load(Ordering::Relaxed),
        SLOTS_REUSED.load(Ordering::Relaxed),
    );
    let skipped: Vec<String> = [
        (
            STATS.low_stack.load(Ordering::Relaxed),
            "too little stack left",
        ),
        (STATS.no_buffer.load(Ordering::Relaxed), "no free buffer"),
        (
            STATS.dropped_ring_full.load(Ordering::Relaxed),
            "buffers full",
        ),
        (
            STATS.off_stack.load(Ordering::Relaxed),
            "off the thread's stack (pc only)",
        ),
        (
            STATS.foreign_signals.load(Ordering::Relaxed),
            "signals not from the agent's timers (ignored)",
        ),
        (
            STATS.stale_signals.load(Ordering::Relaxed),
            "signals of perf counters closed meanwhile (ignored)",
        ),
        (
            STATS.perf_restarted.load(Ordering::Relaxed),
            "perf counters restarted after a lost signal",
        ),
        (
            crate::sampling::perf::SIGIO_RECEIVED.load(Ordering::Relaxed),
            "counter signals received as SIGIO (signal queue full)",
        ),
        (
            crate::sampling::engine::TIMER_FALLBACKS.load(Ordering::Relaxed),
            "threads sampled with a CPU timer (no perf counter)",
        ),
        (
            crate::fault::RECOVERED.load(Ordering::Relaxed),
            "faulting reads recovered",
        ),
        (s.stale, "records of an earlier recording (left out)"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{what}: {n}"))
    .collect();
    if !skipped.is_empty() {
        text.push_str(&format!("\n  {}", skipped.join("; ")));
    }
    cpu_summary(&mut text, s);
    if let Some((kept, bytes, removed)) = s.files {
        text.push_str(&format!(
            "\n  chunk files: {kept} kept ({:.1} MB), {removed} removed by maxsize/maxage",
            bytes as f64 / 1e6
        ));
    }
    text.push_str(&format!("\n  engine: {}", s.engine));
    for (what, quantile) in [
        (
            "native walk time",
            stats::walk_time_quantile_ns as fn(f64) -> Option<u64>,
        ),
        ("sample handler time", stats::handler_time_quantile_ns),
    ] {
        if let (Some(p50), Some(p99)) = (quantile(0.5), quantile(0.99)) {
            text.push_str(&format!(
                "\n  {what}: p50 <= {:.2} us, p99 <= {:.2} us",
                p50 as f64 / 1e3,
                p99 as f64 / 1e3
            ));
        }
    }
    if let Some(t) = &s.tables {
        text.push_str(&format!(
            "\n  unwind tables: {} libraries ({} without, {} from memory), {} rows, {:.2} MB, built in {:.1} ms of CPU",
            t.libraries,
            t.without,
            t.from_memory,
            t.rows,
            t.bytes as f64 / 1e6,
            t.build_cpu_ns as f64 / 1e6
        ));
    }
    kept_summary(&mut text, &s.kept);
    java_summary(&mut text, s);
    let entered = STATS.other_handler_entered.load(Ordering::Relaxed);
    if entered > 0 {
        text.push_str(&format!(
            "\n  another signal handler at its entry: {entered} samples taken from the code its signal interrupted"
        ));
    }
    leaf_call_summary(&mut text);
    let stubs = STATS.vm_stub_frames.load(Ordering::Relaxed);
    if stubs > 0 {
        text.push_str(&format!(
            "\n  JVM stubs as native frames: {stubs} samples (arraycopy, vtable/itable stubs, adapters, runtime stubs); {} jfrnative.JvmCode events name them",
            s.jvm_code_events
        ));
    }
    text.push_str(&format!(
        "\n  code map read again {} times ({} for pcs in no known range alone)",
        crate::unwind::watcher::MAPS_READ[0].load(Ordering::Relaxed),
        crate::unwind::watcher::MAPS_READ[1].load(Ordering::Relaxed)
    ));
    let r = &s.retained;
    text.push_str(&format!(
        "\n  retained: {} code maps ({} retired), {} unwind tables ({:.2} MB), {} library build ids",
        r.code_maps,
        r.retired_maps,
        r.tables,
        r.table_bytes as f64 / 1e6,
        s.build_ids
    ));
    for (i, c) in STATS.agct_errors.iter().enumerate() {
        let n = c.load(Ordering::Relaxed);
        if n > 0 {
            let code = if i < stats::AGCT_CODES - 1 {
                -(i as i32) - 1
            } else {
                0
            };
            text.push_str(&format!(
                "\n  AsyncGetCallTrace {code} ({}): {n}",
                stats::agct_reason(code)
            ));
        }
    }
    text
}

/// `NAME N` for each counter of `counts` above zero, named by `names` (the same order).
fn named_counts(counts: &[AtomicU64], names: &[&str]) -> Vec<String> {
    counts
        .iter()
        .zip(names)
        .map(|(c, name)| (c.load(Ordering::Relaxed), name))
        .filter(|&(n, _)| n > 0)
        .map(|(n, name)| format!("{name} {n}"))
        .collect()
}

/// The summary's line on compiled callers of leaf calls without debug information
/// ([`crate::hotspot::scopes::LEAF_CALLS`]), if there were any.
fn leaf_call_summary(text: &mut String) {
    if crate::hotspot::sample::USE_VM_WALK.load(Ordering::Acquire) {
        text.push_str(&format!(
            "\n  debug information between safepoints (inlined scopes at any pc): {}",
            crate::hotspot::scopes::non_safepoints().unwrap_or(
                "off (give the JVM -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints)"
            )
        ));
    }
    let leaf_calls = named_counts(
        &crate::hotspot::scopes::LEAF_CALL_COUNTS,
        &crate::hotspot::scopes::LEAF_CALLS,
    );
    if !leaf_calls.is_empty() {
        text.push_str(&format!(
            "\n  compiled callers of leaf calls (arraycopy stubs, ...) without debug information: {}",
            leaf_calls.join(", ")
        ));
    }
}
