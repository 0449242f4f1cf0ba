//! What the boundary tests and the `boundaries` measurement count on a group of samples (one
//! thread, or the virtual threads of one depth): how many have the whole Java stack down to the
//! thread's root, how many have none, how many are cut short but written as complete, how the
//! native-leaf samples fare, how many upcall samples show the native frames of the code that
//! made the upcall in their place, and, for virtual threads, how many are written as the virtual
//! thread that ran them. And a comparison with the JDK's own sampler, tick by tick.

use std::collections::{BTreeMap, BTreeSet};

use crate::boundary_stacks::{Frame, Sample};

/// The bottom frame of a platform thread's stack (`Thread.run`, on JDK 17 and 25 alike).
pub const THREAD_ROOT: (&str, &str) = ("java.lang.Thread", "run");

/// The bottom frame of a virtual thread's stack as the JDK's sampler writes it: its
/// continuation's entry (the carrier's frames below are not the virtual thread's).
pub const VIRTUAL_ROOT: (&str, &str) = ("jdk.internal.vm.Continuation", "enterSpecial");

/// Whether the sample's Java stack ends at `root`.
pub fn reaches(s: &Sample, root: (&str, &str)) -> bool {
    s.java.last().is_some_and(|f| f.is(root.0, root.1))
}

/// An upcall: Java code called from native code that Java code called.
#[derive(Debug, Clone, Copy)]
pub struct Upcall {
    /// The Java callback's own frames (the comparator).
    pub callback: fn(&Frame) -> bool,
    /// The frames of the boundary the callback was entered through (the upcall stub, the
    /// callback proxy): below every callback frame.
    pub entry: fn(&Frame) -> bool,
    /// The Java method that called the native code (`sortOnce`, which calls qsort).
    pub caller: (&'static str, &'static str),
}

impl Upcall {
    /// Whether a frame is on the upcall's side of the boundary.
    fn side(&self, f: &Frame) -> bool {
        (self.callback)(f) || (self.entry)(f)
    }
}

/// A native frame of libc's sort (`qsort`, `qsort_r`, `msort_with_tmp`, ...).
pub fn libc_sort(f: &Frame) -> bool {
    f.in_library("libc.so") && f.method.contains("sort")
}

/// Whether the sample's stack (the symbolized one, leaf first) has, in this order: the
/// upcall's frames with an entry frame below every callback frame, libc's sort frames, the Java
/// caller, and the thread's root at the bottom.
pub fn sort_frames_in_place(s: &Sample, upcall: &Upcall, root: (&str, &str)) -> bool {
    let frames = s.stack();
    let Some(deepest_side) = frames.iter().rposition(|f| upcall.side(f)) else {
        return false;
    };
    if !(upcall.entry)(&frames[deepest_side]) {
        return false;
    }
    let below = &frames[deepest_side + 1..];
    let Some(sort) = below.iter().position(libc_sort) else {
        return false;
    };
    below[sort + 1..]
        .iter()
        .any(|f| f.is(upcall.caller.0, upcall.caller.1))
        && frames.last().is_some_and(|f| f.is(root.0, root.1))
}

/// Whether the sample was taken while its thread starts or exits, outside the code the thread
/// runs, and written as complete: no Java frame and a symbolized native stack that reaches the
/// thread's first frame (`start_thread`, `clone3`), or a Java stack whose bottom is
/// `Thread.exit` (which the JVM calls after `run` returned). Such a sample has no root to
/// reach, and is honest.
pub fn at_thread_edge(s: &Sample) -> bool {
    let native_only = s.java.is_empty()
        && s.symbolized.last().is_some_and(|f| {
            f.in_library("libc.so") && (f.method.contains("clone") || f.method == "start_thread")
        });
    let exiting = s
        .java
        .last()
        .is_some_and(|f| f.is("java.lang.Thread", "exit"));
    s.truncated == Some(false) && (native_only || exiting)
}

/// The counts of one group of samples.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    /// Samples taken while the thread starts or exits ([`at_thread_edge`]): not counted below.
    pub at_thread_edge: u64,
    /// Samples in the group (but those at the thread's edges).
    pub samples: u64,
    /// With the whole Java stack (down to the root, and for virtual threads with the whole
    /// chain).
    pub whole: u64,
    /// Without any Java frame.
    pub without_stack: u64,
    /// Not whole, but written with `truncated` false: a lie.
    pub cut_as_complete: u64,
    /// With the leaf in a native library ([`Sample::native_leaf`]), but those taken while
    /// HotSpot deoptimizes a frame ([`Sample::in_deoptimization`]), thaws a virtual thread
    /// ([`Sample::in_thaw`]), runs a C1 `monitorexit` slow path
    /// ([`Sample::in_unwalkable_monitor_exit`]) or other VM code
    /// ([`Sample::in_vm_transition`]) without a Java stack: counted apart.
    pub native_leaf: u64,
    /// Samples taken while HotSpot deoptimized a frame.
    pub in_deoptimization: u64,
    /// Samples taken while HotSpot thawed a virtual thread's frames, without a Java stack
    /// ([`Sample::in_thaw`]).
    pub in_thaw: u64,
    /// Samples in a C1 `monitorexit` slow path, without a Java stack
    /// ([`Sample::in_unwalkable_monitor_exit`], counted apart from native leaves).
    pub in_unwalkable_monitor_exit: u64,
    /// Other samples in HotSpot's own code with no Java stack ([`Sample::in_vm_transition`]).
    pub in_vm_transition: u64,
    /// Of those, whole.
    pub native_leaf_whole: u64,
    /// Upcall samples: with a frame of the upcall's side, or not whole (where such a sample
    /// was cannot be told, and it cannot show the frames in their place).
    pub upcall: u64,
    /// Of those, with libc's sort frames in place ([`sort_frames_in_place`]).
    pub upcall_in_place: u64,
    /// Written as the virtual thread that ran them (virtual threads only).
    pub labelled: u64,
    /// Whole and labelled.
    pub whole_labelled: u64,
    /// The first sample that is not whole, cut as complete, and upcall sample without the
    /// frames in place, for messages.
    pub examples: BTreeMap<&'static str, String>,
}

/// `part` of `whole` in percent (0 of 0 is 0%).
pub fn percent(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

impl Figures {
    /// The figures in one line.
    pub fn line(&self) -> String {
        let n = self.samples;
        let mut line = format!(
            "{n} samples: whole {} ({:.1}%), no stack {} ({:.1}%), cut but written as complete {} \
             ({:.1}%); native leaf {}, whole {} ({:.1}%)",
            self.whole,
            percent(self.whole, n),
            self.without_stack,
            percent(self.without_stack, n),
            self.cut_as_complete,
            percent(self.cut_as_complete, n),
            self.native_leaf,
            self.native_leaf_whole,
            percent(self.native_leaf_whole, self.native_leaf),
        );
        // The samples counted apart, each named once, when there are any.
        for (count, what) in [
            (self.in_deoptimization, "while HotSpot deoptimized a frame"),
            (
                self.in_thaw,
                "while HotSpot thawed the frames, no Java stack",
            ),
            (
                self.in_vm_transition,
                "in another VM transition (libjvm only), no Java stack",
            ),
            (
                self.in_unwalkable_monitor_exit,
                "in a C1 monitorexit slow path, no Java stack",
            ),
        ] {
            if count > 0 {
                line += &format!("; {what} {count}");
            }
        }
        if self.upcall > 0 {
            line += &format!(
                "; upcall samples {}, libc's sort frames in place {} ({:.1}%)",
                self.upcall,
                self.upcall_in_place,
                percent(self.upcall_in_place, self.upcall)
            );
        }
        if self.at_thread_edge > 0 {
            line += &format!(
                "; at the thread's start or exit (not counted) {}",
                self.at_thread_edge
            );
        }
        if self.labelled > 0 || self.whole_labelled > 0 {
            line += &format!(
                "; labelled as their virtual thread {} ({:.1}%), whole and labelled {} ({:.1}%)",
                self.labelled,
                percent(self.labelled, n),
                self.whole_labelled,
                percent(self.whole_labelled, n)
            );
        }
        line
    }

    /// The example samples, one per line.
    pub fn examples(&self) -> String {
        self.examples
            .iter()
            .map(|(what, s)| format!("  first {what}: {s}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// How one group is judged.
pub struct Judge<'a> {
    /// Whether a sample has the whole stack.
    pub whole: &'a dyn Fn(&Sample) -> bool,
    /// Whether a sample is written as the virtual thread that ran it (`None`: not a virtual
    /// thread group).
    pub labelled: Option<&'a dyn Fn(&Sample) -> bool>,
    /// The group's upcall, if it makes one.
    pub upcall: Option<Upcall>,
    /// The root of the group's stacks.
    pub root: (&'static str, &'static str),
}

/// Counts `samples` by `judge`.
pub fn measure(samples: &[&Sample], judge: &Judge<'_>) -> Figures {
    let mut f = Figures::default();
    for s in samples {
        if at_thread_edge(s) {
            f.at_thread_edge += 1;
            continue;
        }
        f.samples += 1;
        let whole = (judge.whole)(s);
        f.whole += u64::from(whole);
        f.without_stack += u64::from(s.java.is_empty());
        let lie = !whole && s.truncated == Some(false);
        f.cut_as_complete += u64::from(lie);
        if s.in_deoptimization() {
            f.in_deoptimization += 1;
        } else if s.in_unwalkable_monitor_exit() {
            f.in_unwalkable_monitor_exit += 1;
        } else if s.in_thaw() {
            f.in_thaw += 1;
        } else if s.in_vm_transition() {
            f.in_vm_transition += 1;
        } else if s.native_leaf() {
            f.native_leaf += 1;
            f.native_leaf_whole += u64::from(whole);
        }
        if !whole {
            f.examples
                .entry("not whole")
                .or_insert_with(|| s.describe());
        }
        if lie {
            f.examples
                .entry("cut but written as complete")
                .or_insert_with(|| s.describe());
        }
        if let Some(upcall) = &judge.upcall {
            if !whole || s.stack().iter().any(|f| upcall.side(f)) {
                f.upcall += 1;
                let in_place = sort_frames_in_place(s, upcall, judge.root);
                f.upcall_in_place += u64::from(in_place);
                if !in_place {
                    f.examples
                        .entry("upcall sample without the sort frames in place")
                        .or_insert_with(|| s.describe());
                }
            }
        }
        if let Some(labelled) = judge.labelled {
            let labelled = labelled(s);
            f.labelled += u64::from(labelled);
            f.whole_labelled += u64::from(labelled && whole);
        }
    }
    f
}

/// The agent's samples beside the JDK's, tick by tick.
#[derive(Debug, Default, Clone)]
pub struct TickComparison {
    /// The JDK's samples of the group that are not `biased`.
    pub jdk_samples: u64,
    /// Of those, with a sample of the agent of the same thread on the same tick.
    pub pairs: u64,
    /// Pairs with the same Java stack, methods in order (hidden frames left out).
    pub same_stack: u64,
    /// Pairs where the JDK's stack is whole.
    pub jdk_whole: u64,
    /// Of those, where the agent's is whole too.
    pub both_whole: u64,
    /// The first pair whose stacks differ, for messages.
    pub first_difference: Option<String>,
}

impl TickComparison {
    /// The comparison in one line.
    pub fn line(&self) -> String {
        format!(
            "{} of {} unbiased JDK samples paired with the agent's sample of the same tick and \
             thread; same stack {} ({:.1}%); the JDK's whole {}, the agent's whole too {} \
             ({:.1}%)",
            self.pairs,
            self.jdk_samples,
            self.same_stack,
            percent(self.same_stack, self.pairs),
            self.jdk_whole,
            self.both_whole,
            percent(self.both_whole, self.jdk_whole)
        )
    }
}

/// Largest gap between the JDK's sample and the agent's sample of the same timer tick: both
/// samplers arm a CPU timer of the thread, the kernel fires both on one scheduler tick, and the
/// agent's handler runs 5–30 µs after the JDK's (see `tools/scripts/compare_jdk_sampler.py`).
pub const PAIR_GAP_NS: i64 = 500_000;

fn visible_names(s: &Sample, hidden: &BTreeSet<String>) -> Vec<String> {
    s.java
        .iter()
        .map(Frame::name)
        .filter(|n| !hidden.contains(n))
        .collect()
}

/// Pairs each sample of the JDK's in the group (`member`, not `biased`) with the agent's sample
/// of the same Java thread id that follows it within [`PAIR_GAP_NS`], and compares them. Hidden
/// methods (marked hidden in either file) are left out of both stacks, as
/// `compare_jdk_sampler.py` does.
pub fn compare_ticks(
    ours: &[Sample],
    jdk: &[Sample],
    member: &dyn Fn(&Sample) -> bool,
    whole: &dyn Fn(&Sample) -> bool,
) -> TickComparison {
    let hidden: BTreeSet<String> = ours
        .iter()
        .chain(jdk)
        .flat_map(|s| s.java.iter().filter(|f| f.hidden).map(Frame::name))
        .collect();
    let mut by_thread: BTreeMap<i64, Vec<&Sample>> = BTreeMap::new();
    for s in ours.iter().filter(|s| member(s)) {
        if let Some(id) = s.java_thread_id {
            by_thread.entry(id).or_default().push(s);
        }
    }
    for list in by_thread.values_mut() {
        list.sort_by_key(|s| s.start_ns);
    }
    let mut c = TickComparison::default();
    for j in jdk.iter().filter(|s| member(s) && !s.biased) {
        c.jdk_samples += 1;
        let Some(list) = j.java_thread_id.and_then(|id| by_thread.get(&id)) else {
            continue;
        };
        let at = list.partition_point(|s| s.start_ns < j.start_ns);
        let Some(o) = list
            .get(at)
            .filter(|o| o.start_ns - j.start_ns <= PAIR_GAP_NS)
        else {
            continue;
        };
        c.pairs += 1;
        let same = visible_names(j, &hidden) == visible_names(o, &hidden);
        c.same_stack += u64::from(same);
        if !same && c.first_difference.is_none() {
            c.first_difference = Some(format!("JDK: {}\n  ours: {}", j.describe(), o.describe()));
        }
        if whole(j) {
            c.jdk_whole += 1;
            c.both_whole += u64::from(whole(o));
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn java(class: &str, method: &str) -> Frame {
        Frame {
            class: class.into(),
            method: method.into(),
            kind: "JIT compiled".into(),
            hidden: false,
            symbolized_native: false,
        }
    }

    fn native(library: &str, function: &str) -> Frame {
        Frame {
            class: library.into(),
            method: function.into(),
            kind: "Native".into(),
            hidden: false,
            symbolized_native: true,
        }
    }

    /// `samples` measured with "whole" = the Java stack reaches the thread's root.
    fn measure_to_thread_root(samples: &[&Sample]) -> Figures {
        let whole = |s: &Sample| reaches(s, THREAD_ROOT);
        let judge = Judge {
            whole: &whole,
            labelled: None,
            upcall: None,
            root: THREAD_ROOT,
        };
        measure(samples, &judge)
    }

    fn sample(stack: Vec<Frame>) -> Sample {
        Sample {
            start_ns: 0,
            thread: Some("t".into()),
            is_virtual: false,
            java_thread_id: Some(1),
            biased: false,
            truncated: Some(false),
            java: stack
                .iter()
                .filter(|f| !f.symbolized_native)
                .cloned()
                .collect(),
            native_pcs: 0,
            symbolized: stack,
        }
    }

    const UPCALL: Upcall = Upcall {
        callback: |f| f.is("C", "compare"),
        entry: |f| f.class == "Stub",
        caller: ("C", "sortOnce"),
    };

    #[test]
    fn sort_frames_must_be_between_the_upcall_and_its_caller() {
        let whole = sample(vec![
            java("C", "compare"),
            java("Stub", "invoke"),
            native("libc.so.6", "msort_with_tmp"),
            native("libc.so.6", "qsort"),
            java("C", "sortOnce"),
            java("java.lang.Thread", "run"),
        ]);
        assert!(sort_frames_in_place(&whole, &UPCALL, THREAD_ROOT));
        // Today's shape: the native frames are not between the Java segments.
        let java_only = sample(vec![
            java("C", "compare"),
            java("Stub", "invoke"),
            java("C", "sortOnce"),
            java("java.lang.Thread", "run"),
        ]);
        assert!(!sort_frames_in_place(&java_only, &UPCALL, THREAD_ROOT));
        // The callback below its entry: the order is wrong.
        let wrong = sample(vec![
            java("Stub", "invoke"),
            java("C", "compare"),
            native("libc.so.6", "qsort"),
            java("C", "sortOnce"),
            java("java.lang.Thread", "run"),
        ]);
        assert!(!sort_frames_in_place(&wrong, &UPCALL, THREAD_ROOT));
        // Cut: no root.
        let cut = sample(vec![
            java("C", "compare"),
            java("Stub", "invoke"),
            native("libc.so.6", "qsort"),
            java("C", "sortOnce"),
        ]);
        assert!(!sort_frames_in_place(&cut, &UPCALL, THREAD_ROOT));
    }

    #[test]
    fn samples_at_a_threads_start_or_exit_are_not_counted() {
        let exiting = sample(vec![
            java("java.lang.ThreadGroup", "threadTerminated"),
            java("java.lang.Thread", "exit"),
        ]);
        let starting = sample(vec![
            native("libjvm.so", "JavaCalls::call_virtual"),
            native("libc.so.6", "start_thread"),
            native("libc.so.6", "clone3"),
        ]);
        let mut cut = sample(vec![java("C", "compare"), native("libc.so.6", "clone3")]);
        assert!(at_thread_edge(&exiting) && at_thread_edge(&starting));
        assert!(!at_thread_edge(&cut));
        cut.truncated = Some(true);
        let mut failed = starting.clone();
        failed.truncated = None;
        assert!(!at_thread_edge(&failed));
        let f = measure_to_thread_root(&[&exiting, &starting, &cut]);
        assert_eq!((f.at_thread_edge, f.samples, f.cut_as_complete), (2, 1, 0));
    }

    #[test]
    fn a_cut_stack_written_as_complete_is_counted() {
        let mut cut = sample(vec![java("C", "compare"), java("Stub", "invoke")]);
        let whole = |s: &Sample| reaches(s, THREAD_ROOT);
        let judge = Judge {
            whole: &whole,
            labelled: None,
            upcall: Some(UPCALL),
            root: THREAD_ROOT,
        };
        let f = measure(&[&cut], &judge);
        assert_eq!(
            (f.samples, f.whole, f.cut_as_complete, f.upcall),
            (1, 0, 1, 1)
        );
        cut.truncated = Some(true);
        let f = measure(&[&cut], &judge);
        assert_eq!((f.cut_as_complete, f.upcall_in_place), (0, 0));
    }

    #[test]
    fn samples_in_deoptimization_are_counted_apart_from_native_leaves() {
        let mut deopt = sample(vec![
            native(
                "libjvm.so",
                "Deoptimization::fetch_unroll_info(JavaThread*, int)",
            ),
            native("libjvm.so", "Deoptimization::fetch_unroll_info_helper"),
            java("C", "compare"),
            java("java.lang.Thread", "run"),
        ]);
        deopt.native_pcs = 2;
        let mut in_libc = sample(vec![
            native("libc.so.6", "msort_with_tmp"),
            java("C", "sortOnce"),
            java("java.lang.Thread", "run"),
        ]);
        in_libc.native_pcs = 1;
        let mut in_stub = sample(vec![native("unknown", "0x7f00dead0000")]);
        in_stub.native_pcs = 1;
        let mut in_named_stub = sample(vec![
            native("jvm-generated", "StubRoutines::jbyte_disjoint_arraycopy"),
            java("C", "sortOnce"),
        ]);
        in_named_stub.native_pcs = 1;
        assert!(
            !in_named_stub.native_leaf(),
            "JVM code is no native library"
        );
        // A Deoptimization:: function below a Java frame is not the leaf's transition.
        let later = sample(vec![
            native("libc.so.6", "qsort"),
            java("C", "sortOnce"),
            native("libjvm.so", "Deoptimization::unpack_frames"),
        ]);
        assert!(deopt.in_deoptimization() && !in_libc.in_deoptimization());
        assert!(!later.in_deoptimization());
        assert!(in_libc.native_leaf() && !in_stub.native_leaf());
        let f = measure_to_thread_root(&[&deopt, &in_libc, &in_stub]);
        assert_eq!(
            (
                f.samples,
                f.in_deoptimization,
                f.native_leaf,
                f.native_leaf_whole
            ),
            (3, 1, 1, 1)
        );
    }

    #[test]
    fn c1_monitor_exit_samples_without_a_java_stack_are_counted_apart_from_native_leaves() {
        let exit = |java_below: bool| {
            let mut stack = vec![
                native("libjvm.so", "ObjectMonitor::exit(JavaThread*, bool)"),
                native(
                    "libjvm.so",
                    "SharedRuntime::monitor_exit_helper(oopDesc*, BasicLock*, JavaThread*)",
                ),
            ];
            if java_below {
                stack.push(java("C", "work"));
                stack.push(java("java.lang.Thread", "run"));
            }
            let mut s = sample(stack);
            s.native_pcs = 2;
            s.truncated = java_below.then_some(false);
            s
        };
        let (unwalked, walked) = (exit(false), exit(true));
        assert!(unwalked.in_unwalkable_monitor_exit() && unwalked.native_leaf());
        // Walked (C2's slow path): an ordinary native leaf.
        assert!(!walked.in_unwalkable_monitor_exit());
        // Monitor code with no Java stack but not from monitor_exit_helper: another VM
        // transition, counted apart too.
        let mut other = sample(vec![native(
            "libjvm.so",
            "ObjectMonitor::exit(JavaThread*, bool)",
        )]);
        other.native_pcs = 1;
        assert!(!other.in_unwalkable_monitor_exit() && other.in_vm_transition());
        let f = measure_to_thread_root(&[&unwalked, &walked, &other]);
        assert_eq!(
            (
                f.samples,
                f.in_unwalkable_monitor_exit,
                f.in_vm_transition,
                f.native_leaf,
                f.native_leaf_whole,
                f.without_stack
            ),
            (3, 1, 1, 1, 1, 2)
        );
        assert!(f
            .line()
            .contains("in a C1 monitorexit slow path, no Java stack 1"));
    }

    #[test]
    fn samples_in_a_thaw_without_a_java_stack_are_counted_apart() {
        let thaw = |leaf: &str| {
            let mut s = sample(vec![
                native("libjvm.so", leaf),
                native("libjvm.so", "ThawBase::thaw_slow(stackChunkOopDesc*, bool)"),
                native(
                    "libjvm.so",
                    "long* thaw<Config<(oop_kind)1, ZBarrierSet> >(JavaThread*, int)",
                ),
            ]);
            s.native_pcs = 3;
            s.truncated = None;
            s
        };
        let in_thaw = thaw("OopMapStream::find_next()");
        let mut prepare = sample(vec![native(
            "libjvm.so",
            "Continuation::prepare_thaw(JavaThread*, bool)",
        )]);
        prepare.native_pcs = 1;
        // With Java frames below, a thaw's leaf is not counted apart (the stack was walked).
        let mut walked = sample(vec![
            native("libjvm.so", "ThawBase::thaw_slow(stackChunkOopDesc*, bool)"),
            java("C", "work"),
            java("java.lang.Thread", "run"),
        ]);
        walked.native_pcs = 1;
        assert!(in_thaw.in_thaw() && prepare.in_thaw() && !walked.in_thaw());
        let f = measure_to_thread_root(&[&in_thaw, &prepare, &walked]);
        assert_eq!(
            (f.samples, f.in_thaw, f.native_leaf, f.native_leaf_whole),
            (3, 2, 1, 1)
        );
        assert!(f
            .line()
            .contains("while HotSpot thawed the frames, no Java stack 2"));
    }

    #[test]
    fn other_samples_in_hotspot_code_without_a_java_stack_are_counted_apart() {
        let mut barrier = sample(vec![
            native(
                "libjvm.so",
                "BarrierSetNMethod::set_guard_value(nmethod*, int)",
            ),
            native(
                "libjvm.so",
                "BarrierSetNMethod::nmethod_stub_entry_barrier(unsigned char**)",
            ),
        ]);
        barrier.native_pcs = 2;
        barrier.truncated = None;
        // A JNI library's frames below libjvm: a boundary sample, not a VM transition.
        let mut jni = sample(vec![
            native("libjvm.so", "jni_NewObject"),
            native("libjnidispatch.system.so", "dispatch"),
        ]);
        jni.native_pcs = 2;
        jni.truncated = None;
        let mut in_libz = sample(vec![native("libz.so.1", "crc32_z")]);
        in_libz.native_pcs = 1;
        in_libz.truncated = None;
        assert!(barrier.in_vm_transition());
        assert!(!jni.in_vm_transition() && !in_libz.in_vm_transition());
        let f = measure_to_thread_root(&[&barrier, &jni, &in_libz]);
        assert_eq!(
            (
                f.samples,
                f.in_vm_transition,
                f.native_leaf,
                f.native_leaf_whole
            ),
            (3, 1, 2, 0)
        );
    }
}
