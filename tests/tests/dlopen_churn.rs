//! The agent's memory stays bounded while a library is loaded and unloaded over and over. The
//! `testdata/dlchurn` workload dlopens, calls and dlcloses a small library (`-O2`, with CFI)
//! in a loop, each time from a fresh copy (a new inode) and at varying base addresses, while
//! the agent samples at 1 ms on JDK 17 and JDK 25. Every code-map re-read sees a different set
//! of libraries; the tables, code maps and per-library caches of libraries no longer mapped
//! must be freed, once no handler can read them.
//!
//! Checked: what the agent retains at the end (its summary's `retained:` line: code maps, unwind
//! tables alive wherever held, cached build ids) against the libraries mapped then, and the
//! process's resident set (VmRSS, read by the workload at 25% and at 100% of the run).

use std::path::PathBuf;
use std::sync::OnceLock;

use tests::jdk::{oracle_jdks, Jdk};
use tests::natives::Library;
use tests::readers::{jfr_json, run};
use tests::workload::{build_once, java_with_agent_in, javac, jni_gcc, number_after, run_java};

/// Wall time of the churn.
const SECONDS: f64 = 12.0;
/// Most the resident set may grow from 25% to 100% of the run (measured: 16 to 200 kB; the
/// agent's fixed footprint, ~7 MB with its tables, is in place by 25%).
const MAX_RSS_GROWTH_KB: i64 = 1536;
/// Most code maps alive at the end: the current one and a couple retired ones whose reclaim
/// found a handler reading.
const MAX_CODE_MAPS: usize = 3;
/// Most unwind tables or build ids beyond one per library mapped at the end (held by retired
/// maps, or cached for libraries just unloaded).
const SLACK: usize = 8;
/// Most libraries with code a JVM running the workload maps (~20): more means the per-library
/// cache grew with the churn.
const MAX_LIBRARIES: usize = 40;

/// A directory with `libchurn.so`, `libdlchurn.so` and the `DlChurn` class.
fn workload_dir() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build_once(&BUILT, "dlchurn", |jdk, src, dir| {
        run(jni_gcc(jdk, &["-O2"])
            .arg(src.join("churnlib.c"))
            .arg("-o")
            .arg(dir.join("libchurn.so")))?;
        run(jni_gcc(jdk, &["-O2"])
            .arg(src.join("dlchurn.c"))
            .arg("-o")
            .arg(dir.join("libdlchurn.so"))
            .arg("-ldl"))?;
        javac(jdk, &src.join("DlChurn.java"), dir)
    })
}

/// One JDK's run.
#[derive(Debug)]
struct Run {
    cycles: u64,
    rss_25_kb: i64,
    rss_100_kb: i64,
    /// From the summary's `retained:` line.
    code_maps: usize,
    retired_maps: usize,
    tables: usize,
    table_mb: f64,
    build_ids: usize,
    /// Libraries of the final code map (with and without a table).
    libraries: usize,
    /// Distinct (copy, base) of the churned library the recording names.
    churned_mappings: usize,
}

fn churn(jdk: &Jdk) -> Result<Run, String> {
    let dir = workload_dir();
    let copies = dir.join(format!("copies-jdk{}", jdk.major));
    std::fs::create_dir_all(&copies).map_err(|e| e.to_string())?;
    let file = dir.join(format!("jdk{}.jfr", jdk.major));
    let options = format!("file={},interval=1ms", file.display());
    let mut java = java_with_agent_in(jdk, &options, &[], &dir);
    java.arg("DlChurn")
        .arg(SECONDS.to_string())
        .arg(dir.join("libchurn.so"))
        .arg(&copies);
    let out = run_java(jdk, &mut java)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|n| n.trim().parse::<i64>().ok())
            .ok_or_else(|| format!("{}: no '{prefix}' line in: {stdout}", jdk.name()))
    };
    let retained = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("retained: "))
        .ok_or_else(|| {
            format!(
                "{}: no 'retained:' line in the summary: {stderr}",
                jdk.name()
            )
        })?;
    let tables_line = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("unwind tables: "))
        .ok_or_else(|| format!("{}: no 'unwind tables:' line: {stderr}", jdk.name()))?;
    let field = |text: &str, prefix: &str| {
        number_after(text, prefix)
            .ok_or_else(|| format!("{}: no '{prefix}' in '{text}'", jdk.name()))
    };
    let reading = jfr_json(jdk, &file)?;
    let mut churned: Vec<(String, u64)> = reading
        .libraries
        .iter()
        .filter_map(|l| Library::parse(l))
        .filter(|l| l.file_name().starts_with("libchurn-"))
        .map(|l| (l.path, l.base))
        .collect();
    churned.sort();
    churned.dedup();
    Ok(Run {
        cycles: line("CYCLES ")? as u64,
        rss_25_kb: line("RSS 25 ")?,
        rss_100_kb: line("RSS 100 ")?,
        code_maps: field(retained, "")? as usize,
        retired_maps: field(retained, "code maps (")? as usize,
        tables: field(retained, "retired), ")? as usize,
        table_mb: field(retained, "unwind tables (")?,
        build_ids: field(retained, "MB), ")? as usize,
        libraries: field(tables_line, "")? as usize + field(tables_line, "libraries (")? as usize,
        churned_mappings: churned.len(),
    })
}

/// The runs, one per JDK, made once per test process.
fn runs() -> &'static [(Jdk, Run)] {
    static RUNS: OnceLock<Result<Vec<(Jdk, Run)>, String>> = OnceLock::new();
    RUNS.get_or_init(|| {
        oracle_jdks()
            .into_iter()
            .map(|jdk| {
                let run = churn(&jdk)?;
                eprintln!("{}: {run:?}", jdk.name());
                Ok((jdk, run))
            })
            .collect()
    })
    .as_deref()
    .unwrap_or_else(|e| panic!("running the dlchurn workload: {e}"))
}

/// Runs `check` on every run (whose churn must have happened and been seen), then fails with
/// all its errors.
fn on_every_jdk(check: impl Fn(&Run) -> Result<(), String>) {
    let errors: Vec<String> = runs()
        .iter()
        .map(|(jdk, run)| {
            if run.cycles < 1000 || run.churned_mappings < 20 {
                return Err(format!(
                    "{}: too little churn seen: {} cycles, {} mappings of the copies recorded",
                    jdk.name(),
                    run.cycles,
                    run.churned_mappings
                ));
            }
            check(run).map_err(|e| format!("{}: {e}; {run:?}", jdk.name()))
        })
        .filter_map(Result::err)
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn dlopen_churn_leaves_no_code_maps_or_unwind_tables_behind() {
    on_every_jdk(|run| {
        if run.libraries > MAX_LIBRARIES {
            return Err(format!(
                "the final map's table cache has {} libraries",
                run.libraries
            ));
        }
        if run.code_maps > MAX_CODE_MAPS || run.retired_maps >= run.code_maps.max(1) {
            return Err(format!(
                "{} code maps alive ({} retired)",
                run.code_maps, run.retired_maps
            ));
        }
        if run.tables > run.libraries + SLACK {
            return Err(format!(
                "{} unwind tables ({:.2} MB) alive for {} libraries mapped",
                run.tables, run.table_mb, run.libraries
            ));
        }
        Ok(())
    });
}

#[test]
fn dlopen_churn_leaves_no_build_ids_behind() {
    on_every_jdk(|run| {
        if run.build_ids > run.libraries + SLACK {
            return Err(format!(
                "{} build ids cached for {} libraries mapped",
                run.build_ids, run.libraries
            ));
        }
        Ok(())
    });
}

#[test]
fn dlopen_churn_does_not_grow_the_resident_set() {
    on_every_jdk(|run| {
        let growth = run.rss_100_kb - run.rss_25_kb;
        eprintln!(
            "VmRSS {} kB at 25%, {} kB at 100%: {growth:+} kB over {} cycles",
            run.rss_25_kb, run.rss_100_kb, run.cycles
        );
        if growth > MAX_RSS_GROWTH_KB {
            return Err(format!(
                "VmRSS grew by {growth} kB from 25% to 100% of the run (want <= {MAX_RSS_GROWTH_KB} kB)"
            ));
        }
        Ok(())
    });
}
