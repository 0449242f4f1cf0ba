//! Prints what the agent makes of Java stacks across boundaries: for each case of
//! `testdata/boundaries` (JNA callbacks on JDK 17 and 25, FFM downcalls and upcalls on JDK 25,
//! virtual threads remounted 40 and 120 frames deep under G1 and generational ZGC on JDK 21 and
//! 25, and beside the JDK's own sampler on JDK 25; three threads contending for one lock on JDK
//! 17 and 25, in C2 code and in C1 code only), per thread or group of threads: samples,
//! whole Java stacks, no stack, cut but written as complete, native-leaf samples whole, upcall
//! samples with libc's sort frames in place, virtual-thread samples labelled as their thread,
//! samples in C1's `monitorexit` slow path without a Java stack (crossed since issue 30).
//!
//! Also allocation-heavy threads (`alloc`: G1, Parallel and generational ZGC, JDK 17, 21, 25)
//! and javac's main thread (`javac`: G1 and ZGC, JDK 17 and 25, 1 ms).
//!
//! Usage: `boundaries [jna] [ffm] [vthreads] [compare] [monitors] [alloc] [javac]` (all cases without arguments). The agent
//! is the workspace's release build, or the library `JFRNATIVE_AGENT` names; the recordings are
//! kept and their paths printed. `tools/scripts/boundaries.sh` runs it; `tools/scripts/arm64.sh
//! boundaries` runs it with the JVMs under qemu-user on aarch64 JDKs ([`tests::emulation`]).

use tests::boundaries::{
    alloc_figures, ffm_figures, javac_figures, jna_figures, jna_installed, monitor_figures,
    printed_vthreads, record_alloc, record_ffm, record_javac, record_jna, record_monitors,
    record_vthreads, vthread_figures, vthread_whole, Gc, Recorded, INTERVAL,
};
use tests::boundary_measures::{compare_ticks, Figures};
use tests::boundary_stacks::Sample;
use tests::emulation;
use tests::jdk::{find, virtual_thread_jdks, Jdk};
use tests::workload::agent_library;

fn print(rec: &Recorded, figures: &[(String, Figures)]) {
    println!("== {}", rec.what);
    println!("   {}", rec.summary);
    println!(
        "   files: {} (the JVM ran {:.1} s, symbolizing and reading took {:.1} s)",
        rec.dir.display(),
        rec.seconds.0,
        rec.seconds.1
    );
    for (group, f) in figures {
        println!("   {group}: {}", f.line());
        if !f.examples.is_empty() {
            println!("{}", f.examples());
        }
    }
}

fn jdks(majors: &[u32]) -> Vec<Jdk> {
    majors
        .iter()
        .filter_map(|&m| {
            if !emulation::runs(m) {
                println!("(JDK {m}: none emulated, skipped)");
                return None;
            }
            let jdk = find(m);
            if jdk.is_none() {
                println!("(JDK {m} not found: skipped)");
            }
            jdk
        })
        .collect()
}

fn jna() {
    if !jna_installed() {
        println!("(Debian's libjna-java is not installed: JNA skipped)");
        return;
    }
    for jdk in jdks(&[17, 25]) {
        match record_jna(&jdk) {
            Ok(rec) => print(&rec, &jna_figures(&rec)),
            Err(e) => println!("JNA on {}: {e}", jdk.name()),
        }
    }
}

fn ffm() {
    for jdk in jdks(&[25]) {
        match record_ffm(&jdk) {
            Ok(rec) => print(&rec, &ffm_figures(&rec)),
            Err(e) => println!("FFM on {}: {e}", jdk.name()),
        }
    }
}

fn vthreads() {
    for jdk in virtual_thread_jdks()
        .into_iter()
        .filter(|jdk| emulation::runs(jdk.major))
    {
        for gc in [Gc::G1, Gc::GenerationalZ] {
            match record_vthreads(&jdk, gc, false) {
                Ok(rec) => print(&rec, &vthread_figures(&rec)),
                Err(e) => println!("virtual threads on {} ({}): {e}", jdk.name(), gc.name()),
            }
        }
    }
}

fn monitors() {
    for jdk in jdks(&[17, 25]) {
        for c1_only in [false, true] {
            match record_monitors(&jdk, c1_only) {
                Ok(rec) => print(&rec, &monitor_figures(&rec)),
                Err(e) => println!("monitors on {}: {e}", jdk.name()),
            }
        }
    }
}

fn alloc() {
    for jdk in jdks(&[17, 21, 25]) {
        for gc in [Gc::G1, Gc::Parallel, Gc::GenerationalZ] {
            if gc == Gc::GenerationalZ && jdk.major < 21 {
                continue;
            }
            match record_alloc(&jdk, gc) {
                Ok(rec) => print(&rec, &alloc_figures(&rec)),
                Err(e) => println!("allocation storm on {} ({}): {e}", jdk.name(), gc.name()),
            }
        }
    }
}

fn javac() {
    for jdk in jdks(&[17, 25]) {
        for gc in [Gc::G1, Gc::GenerationalZ] {
            match record_javac(&jdk, gc) {
                Ok(Some(rec)) => print(&rec, &javac_figures(&rec)),
                Ok(None) => println!("javac on {}: no src.zip or javac", jdk.name()),
                Err(e) => println!("javac on {} ({}): {e}", jdk.name(), gc.name()),
            }
        }
    }
}

fn compare() {
    for jdk in jdks(&[25]) {
        let rec = match record_vthreads(&jdk, Gc::G1, true) {
            Ok(rec) => rec,
            Err(e) => {
                println!("virtual threads beside the JDK's sampler: {e}");
                continue;
            }
        };
        print(&rec, &vthread_figures(&rec));
        let printed = printed_vthreads(&rec.stdout);
        let member = |s: &Sample| s.is_virtual;
        let whole = |s: &Sample| {
            let depth = s.java_thread_id.and_then(|id| printed.get(&id).copied());
            vthread_whole(s, depth)
        };
        let jdk_figures = {
            let all: Vec<&Sample> = rec.jdk_samples.iter().filter(|s| s.is_virtual).collect();
            let whole_jdk = all.iter().filter(|s| whole(s)).count();
            format!(
                "{} samples of virtual threads, whole {whole_jdk}",
                all.len()
            )
        };
        println!("   the JDK's sampler, same run: {jdk_figures}");
        let ticks = compare_ticks(&rec.samples, &rec.jdk_samples, &member, &whole);
        println!("   tick by tick: {}", ticks.line());
        if let Some(d) = &ticks.first_difference {
            println!("  first difference:\n  {d}");
        }
    }
}

fn main() {
    let cases: Vec<String> = std::env::args().skip(1).collect();
    let wanted = |c: &str| cases.is_empty() || cases.iter().any(|a| a == c);
    println!("agent: {} (interval {INTERVAL})", agent_library().display());
    if wanted("jna") {
        jna();
    }
    if wanted("ffm") {
        ffm();
    }
    if wanted("vthreads") {
        vthreads();
    }
    if wanted("compare") {
        compare();
    }
    if wanted("monitors") {
        monitors();
    }
    if wanted("alloc") {
        alloc();
    }
    if wanted("javac") {
        javac();
    }
}
