//! Complete native stacks through code without frame pointers, with `cstack=dwarf` on every JDK
//! of the matrix (11, 17, 21, 25): a JNI call chain whose leaf has no frame (built with plain `-O2`, with and without
//! frame pointers), the system zlib (through JNI and through the JDK's `Deflater`), libc's
//! memcpy/memset, qsort with a frameless comparator, malloc/free, and the vDSO. All modes run as
//! threads of one JVM per JDK (the `testdata/cstack` workload); each test checks its threads'
//! samples against `nm` of the libraries and the recording's `jdk.NativeLibrary` ranges.
//!
//! A frame-pointer walk fails these checks (it loses the caller of a frameless leaf, and stops
//! at the first frame of code that keeps data in rbp), except the JDK 25 Deflater's: Temurin
//! bundles a zlib built with frame pointers.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use tests::golden::SampleView;
use tests::jdk::{matrix_jdks, Jdk};
use tests::natives::{
    cstack_dir, frame_instructions, run_cstack, ChainBuild, Frame, Symbols, CHAIN, CHAIN_BUILDS,
    MODES_LIBRARY,
};
use tests::readers::{cpu_sample_events, jfr_json};
use tests::workload::jfr_symbolize;

/// CPU time each mode's thread runs for.
const SECONDS: f64 = 1.0;
/// The agent options besides `file`.
const OPTIONS: &str = "cstack=dwarf,interval=2ms";
/// The workload's modes besides the chains.
const MODES: [&str; 7] = [
    "libz",
    "jdkdeflate",
    "memcpy",
    "qsort",
    "malloc",
    "vdso",
    "nanotime",
];
/// Fewest samples a check of system code needs for its share to mean something.
const MIN_SAMPLES: usize = 40;
/// Fewest samples in the chain a check of it needs.
const MIN_CHAIN_SAMPLES: usize = 50;

/// One JDK's recording of every mode.
struct Recording {
    jdk: Jdk,
    file: PathBuf,
    samples: Vec<SampleView>,
    symbols: Symbols,
}

impl Recording {
    fn of_thread<'a>(&'a self, thread: &'a str) -> impl Iterator<Item = &'a SampleView> + 'a {
        self.samples.iter().filter(move |s| s.thread == thread)
    }
}

fn record(jdk: &Jdk) -> Result<Recording, String> {
    let dir = std::env::temp_dir().join(format!("jfrnative-cstack-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join(format!("jdk{}.jfr", jdk.major));
    let modes: Vec<&str> = CHAIN_BUILDS.iter().map(|b| b.mode).chain(MODES).collect();
    let options = format!("file={},{OPTIONS}", file.display());
    let start = Instant::now();
    run_cstack(jdk, &options, SECONDS, &modes)?;
    eprintln!(
        "{}: the workload ran for {:.1} s",
        jdk.name(),
        start.elapsed().as_secs_f64()
    );
    let reading = jfr_json(jdk, &file)?;
    Ok(Recording {
        jdk: jdk.clone(),
        file,
        symbols: Symbols::new(&reading),
        samples: reading.samples,
    })
}

/// The recordings, one per JDK: made once per test process, whichever test asks first.
fn recordings() -> &'static [Recording] {
    static RECORDINGS: OnceLock<Result<Vec<Recording>, String>> = OnceLock::new();
    RECORDINGS
        .get_or_init(|| matrix_jdks().iter().map(record).collect())
        .as_deref()
        .unwrap_or_else(|e| panic!("recording the cstack workload: {e}"))
}

/// Whether `counted` has at least `min` samples and at least `percent`% of them pass `check`;
/// prints the share. The error names the first failing sample.
fn share(
    rec: &Recording,
    what: &str,
    (counted, min): (&[&SampleView], usize),
    percent: usize,
    check: impl Fn(&SampleView) -> bool,
) -> Result<(), String> {
    let failing: Vec<&&SampleView> = counted.iter().filter(|s| !check(s)).collect();
    let passed = counted.len() - failing.len();
    let share = 100.0 * passed as f64 / counted.len().max(1) as f64;
    let jdk = rec.jdk.name();
    eprintln!(
        "{jdk}: {what}: {passed} of {} samples ({share:.1}%)",
        counted.len()
    );
    if counted.len() < min {
        return Err(format!("{jdk}: {what}: only {} samples", counted.len()));
    }
    if passed * 100 < counted.len() * percent {
        return Err(format!(
            "{jdk}: {what}: {passed} of {} samples ({share:.1}%, want {percent}%); first failing: {}",
            counted.len(),
            failing.first().map_or(String::new(), |s| rec.symbols.describe(s))
        ));
    }
    Ok(())
}

/// Runs `check` on every recording, then fails with all its errors.
fn on_every_jdk(check: impl Fn(&Recording) -> Vec<Result<(), String>>) {
    let errors: Vec<String> = recordings()
        .iter()
        .flat_map(check)
        .filter_map(Result::err)
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

// ---------------------------------------------------------------- the chain

/// Where the leaf of `frames` is in the chain of `build`, if it is.
fn chain_position(build: &ChainBuild, frames: &[Frame]) -> Option<usize> {
    let leaf = frames.first()?;
    CHAIN.iter().position(|f| leaf.is(build.library, f))
}

/// The sample carries the chain of `build` exactly from its leaf: every function in order,
/// nothing missing or extra, then the JNI function, then the native method's Java frame.
fn exact_chain(rec: &Recording, build: &ChainBuild, s: &SampleView) -> bool {
    let frames = rec.symbols.frames(s);
    let Some(start) = chain_position(build, &frames) else {
        return false;
    };
    let jni = build.jni_function();
    let expected: Vec<&str> = CHAIN[start..]
        .iter()
        .copied()
        .chain([jni.as_str()])
        .collect();
    frames.len() == expected.len()
        && frames
            .iter()
            .zip(&expected)
            .all(|(f, e)| f.is(build.library, e))
        && s.native_truncated == Some(false)
        && s.java.first() == Some(&format!("{}.burn:-1:Native", build.class))
}

/// At least 99% of the samples of `build`'s thread with the leaf in the chain (at least
/// [`MIN_CHAIN_SAMPLES`]) carry the exact chain.
fn check_chain(build: &ChainBuild) {
    on_every_jdk(|rec| {
        let counted: Vec<&SampleView> = rec
            .of_thread(build.mode)
            .filter(|s| chain_position(build, &rec.symbols.frames(s)).is_some())
            .collect();
        let what = format!("{} ({}): exact chain", build.mode, build.flags.join(" "));
        vec![share(rec, &what, (&counted, MIN_CHAIN_SAMPLES), 99, |s| {
            exact_chain(rec, build, s)
        })]
    });
}

#[test]
fn chain_built_with_plain_o2_is_exact() {
    check_chain(&CHAIN_BUILDS[0]);
}

#[test]
fn chain_built_with_frame_pointers_is_exact_despite_its_frameless_leaf() {
    check_chain(&CHAIN_BUILDS[1]);
}

#[test]
fn chain_built_without_frame_pointers_is_exact() {
    check_chain(&CHAIN_BUILDS[2]);
}

/// The hard cases hold in the binaries: the chain's leaf and the qsort comparator neither make
/// a frame nor touch the stack in any build, and the flags took effect (only the
/// `-fno-omit-frame-pointer` build gives `chain_middle` a frame pointer).
#[test]
fn leaves_have_no_frame_and_builds_differ_as_flagged() {
    let dir = cstack_dir();
    let frame_use = |lib: &str, function: &str| {
        frame_instructions(&dir.join(lib), function).unwrap_or_else(|e| panic!("{e}"))
    };
    for (lib, leaf) in CHAIN_BUILDS
        .iter()
        .map(|b| (b.library, "chain_leaf"))
        .chain([(MODES_LIBRARY, "cmp_int")])
    {
        let used = frame_use(lib, leaf);
        assert!(used.is_empty(), "{lib}: {leaf} has a frame: {used:?}");
    }
    for b in CHAIN_BUILDS {
        let frame_pointer = frame_use(b.library, "chain_middle")
            .iter()
            .any(|i| i.split_whitespace().collect::<Vec<_>>() == ["mov", "%rsp,%rbp"]);
        let flagged = b.flags.contains(&"-fno-omit-frame-pointer");
        assert_eq!(
            frame_pointer, flagged,
            "{}: chain_middle sets up rbp: {frame_pointer}",
            b.library
        );
    }
}

// ---------------------------------------------------------------- system code

/// What complete stacks look like for a mode whose time goes into system code.
struct Reach {
    /// The mode, and its thread.
    mode: &'static str,
    /// The samples checked, for messages.
    leaves: &'static str,
    /// Whether a sample is checked, by its leaf frame.
    leaf: fn(&Frame) -> bool,
    /// The frames before the last native one, leaf first.
    below: fn(&[Frame]) -> bool,
    /// The last native frame.
    last: fn(&Frame) -> bool,
    /// The Java frames, if the check covers them.
    java: Option<fn(&[String]) -> bool>,
    /// Whether no checked sample may be marked truncated at all.
    never_truncated: bool,
}

fn libc(f: &Frame) -> bool {
    f.in_library("libc.so")
}

fn libz(f: &Frame) -> bool {
    f.in_library("libz.so")
}

fn libzip(f: &Frame) -> bool {
    f.in_library("libzip.so")
}

fn libjvm(f: &Frame) -> bool {
    f.in_library("libjvm.so")
}

fn vdso(f: &Frame) -> bool {
    f.library.as_deref() == Some("[vdso]")
}

/// The sample reaches Java through the frames `reach` expects, and is not marked truncated.
fn reaches(rec: &Recording, reach: &Reach, s: &SampleView) -> bool {
    let frames = rec.symbols.frames(s);
    let Some((last, below)) = frames.split_last() else {
        return false;
    };
    (reach.last)(last)
        && (reach.below)(below)
        && s.native_truncated == Some(false)
        && reach.java.is_none_or(|java| java(&s.java))
}

/// At least 95% of `reach`'s samples (at least [`MIN_SAMPLES`]) reach Java; with
/// `never_truncated`, none is marked truncated.
fn check_reach(reach: &Reach) {
    on_every_jdk(|rec| {
        let counted: Vec<&SampleView> = rec
            .of_thread(reach.mode)
            .filter(|s| {
                s.pcs
                    .first()
                    .is_some_and(|&pc| (reach.leaf)(&rec.symbols.frame(pc)))
            })
            .collect();
        let what = format!("{}: leaf in {}: complete", reach.mode, reach.leaves);
        let counted = (counted.as_slice(), MIN_SAMPLES);
        let mut results = vec![share(rec, &what, counted, 95, |s| reaches(rec, reach, s))];
        if reach.never_truncated {
            let what = format!("{}: leaf in {}: not truncated", reach.mode, reach.leaves);
            results.push(share(rec, &what, counted, 100, |s| {
                s.native_truncated != Some(true)
            }));
        }
        results
    });
}

#[test]
fn jni_compress2_in_system_zlib_reaches_its_jni_function() {
    check_reach(&Reach {
        mode: "libz",
        leaves: "libz.so",
        leaf: libz,
        below: |f| f.iter().all(libz),
        last: |f| f.is(MODES_LIBRARY, "Java_Cstack_libz"),
        java: Some(|j| j.first().is_some_and(|f| f == "Cstack.libz:-1:Native")),
        never_truncated: true,
    });
}

/// On JDK 17 (Debian) the Deflater runs in the system libz; on JDK 25 (Temurin) in the zlib
/// bundled into libzip.so.
#[test]
fn jdk_deflater_reaches_its_native_method() {
    check_reach(&Reach {
        mode: "jdkdeflate",
        leaves: "zlib (libz.so or libzip.so)",
        leaf: |f| libz(f) || libzip(f),
        below: |f| f.iter().all(|f| libz(f) || libzip(f)),
        last: libzip,
        java: Some(|j| {
            j.first()
                .is_some_and(|f| f.starts_with("java.util.zip.Deflater.") && f.ends_with(":Native"))
        }),
        never_truncated: true,
    });
}

#[test]
fn memcpy_and_memset_keep_their_caller() {
    check_reach(&Reach {
        mode: "memcpy",
        leaves: "libc",
        leaf: libc,
        below: |f| f.iter().all(libc),
        last: |f| f.is(MODES_LIBRARY, "Java_Cstack_memcpy"),
        java: Some(|j| j.first().is_some_and(|f| f == "Cstack.memcpy:-1:Native")),
        never_truncated: false,
    });
}

#[test]
fn qsort_with_a_frameless_comparator_keeps_its_caller() {
    check_reach(&Reach {
        mode: "qsort",
        leaves: "libc or the comparator",
        leaf: |f| libc(f) || f.is(MODES_LIBRARY, "cmp_int"),
        // Leaf first: the comparator or libc, then libc's sort, at least one frame of it.
        below: |f| f.iter().skip(1).all(libc) && f.iter().any(libc),
        last: |f| f.is(MODES_LIBRARY, "Java_Cstack_qsort"),
        java: Some(|j| j.first().is_some_and(|f| f == "Cstack.qsort:-1:Native")),
        never_truncated: false,
    });
}

#[test]
fn malloc_and_free_keep_their_caller() {
    check_reach(&Reach {
        mode: "malloc",
        leaves: "libc",
        leaf: libc,
        below: |f| f.iter().all(libc),
        last: |f| f.is(MODES_LIBRARY, "Java_Cstack_malloc"),
        java: Some(|j| j.first().is_some_and(|f| f == "Cstack.malloc:-1:Native")),
        never_truncated: false,
    });
}

#[test]
fn vdso_clock_gettime_keeps_its_jni_caller() {
    check_reach(&Reach {
        mode: "vdso",
        leaves: "[vdso]",
        leaf: vdso,
        below: |f| f.iter().all(|f| vdso(f) || libc(f)),
        last: |f| f.is(MODES_LIBRARY, "Java_Cstack_vdso"),
        java: Some(|j| j.first().is_some_and(|f| f == "Cstack.vdso:-1:Native")),
        never_truncated: false,
    });
}

/// The symbolized file names the vDSO's frames with the class `vdso`, not `[vdso]`: JDK Mission
/// Control takes a class name that starts with `[` for an array type and fails on it (its
/// parser threw on every demo recording at 1 ms that had a vDSO sample). The JDK's reader
/// shows the frames under that class, and every class name passes the readers' rules.
#[test]
fn vdso_frames_symbolize_under_a_class_name_jmc_reads() {
    for rec in recordings() {
        let jdk = rec.jdk.name();
        let output = rec.file.with_extension("symbolized.jfr");
        let out = jfr_symbolize(&[rec.file.to_str().unwrap(), "-o", output.to_str().unwrap()]);
        assert!(out.status.success(), "{jdk}: {out:?}");
        let names = tests::format_rules::check_class_names(&output);
        assert!(names.iter().any(|n| n == "vdso"), "{jdk}: no class vdso");
        tests::format_rules::check_reader_rules(&output);
        let events = cpu_sample_events(&rec.jdk, &output).unwrap();
        let vdso_frames = events
            .iter()
            .filter(|e| e["values"]["eventThread"]["javaName"] == "vdso")
            .filter_map(|e| e["values"]["stackTrace"]["frames"].as_array())
            .flatten()
            .filter(|f| f["method"]["type"]["name"] == "vdso")
            .inspect(|f| {
                let name = f["method"]["name"].as_str().unwrap_or("");
                assert!(name.contains("clock_gettime"), "{jdk}: vdso frame {f}");
                assert_eq!(f["type"], "Native", "{jdk}: {f}");
            })
            .count();
        eprintln!("{jdk}: {vdso_frames} vdso frames in the symbolized file");
        assert!(
            vdso_frames >= MIN_SAMPLES,
            "{jdk}: {vdso_frames} vdso frames"
        );
    }
}

/// `System.nanoTime()` calls `clock_gettime` from the JVM (os::javaTimeNanos): the stack must
/// reach that libjvm frame, which a frame-pointer walk skips behind libc's frameless wrapper.
/// The Java part is AsyncGetCallTrace's business here, not the unwinder's.
#[test]
fn nanotime_through_the_vdso_keeps_its_jvm_caller() {
    check_reach(&Reach {
        mode: "nanotime",
        leaves: "[vdso]",
        leaf: vdso,
        below: |f| f.iter().all(|f| vdso(f) || libc(f) || libjvm(f)),
        last: libjvm,
        java: None,
        never_truncated: false,
    });
}
