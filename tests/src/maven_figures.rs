//! What the Maven-library test counts per library (`tests/tests/maven_libs.rs`), from the
//! agent's raw recording (program counters, `jdk.NativeLibrary` ranges, Java stacks) and a
//! symbolized copy of it, both read with the JDK's `jfr print --json`; and what `nm` says the
//! functions at those program counters are, in the library's file taken from its jar (an
//! independent reader: the symbolizer's names are checked against it, never hard-coded).
//!
//! A sample reaches a library when one of its raw pcs lies in the library's recorded range. It
//! is *nameable* when `nm` (`.symtab` and `.dynsym`) has a sized function symbol at each of
//! those pcs (the leaf as it is, the others less 1); *named* when the symbolized stack has a
//! frame of the library for each of them, in order, each named as `nm` names it; *innermost
//! named* when the first of them is. A named frame that `nm` names otherwise is *wrong*. A
//! Java thread's sample is *whole* when its Java stack is not truncated and ends in
//! `java.lang.Thread.run` (or, on the main thread, which loads the libraries, `NativeLibs.main`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::jdk::Jdk;
use crate::mavenlibs::{library_of, Built, MavenLib};

/// One sample: the raw file's part and the symbolized copy's native frames.
#[derive(Debug, Clone)]
pub struct Sample {
    /// `eventThread.javaName` (`None` for a thread that is not a Java thread).
    pub java_thread: Option<String>,
    /// The Java stack is not truncated and ends in a thread's first frame (`is_root`).
    pub whole: bool,
    /// Raw pcs, leaf first.
    pub pcs: Vec<u64>,
    /// The symbolized stack's native frames, leaf first: (library file name, function).
    pub native: Vec<(String, String)>,
}

/// A `jdk.NativeLibrary` event.
#[derive(Debug, Clone)]
pub struct Range {
    /// The recorded path.
    pub path: String,
    /// `baseAddress`.
    pub base: u64,
    /// `topAddress`.
    pub top: u64,
    /// `fileOffset`: the file offset mapped at `base`.
    pub offset: u64,
}

fn jfr_print(jdk: &Jdk, file: &Path, events: &str) -> Vec<Value> {
    let out = Command::new(jdk.tool("jfr"))
        .args([
            "print",
            "--json",
            "--stack-depth",
            "1024",
            "--events",
            events,
        ])
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("jfr print {}: {e}", file.display()));
    assert!(
        out.status.success(),
        "jfr print {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut doc: Value = serde_json::from_slice(&out.stdout).expect("jfr print --json");
    match doc["recording"]["events"].take() {
        Value::Array(events) => events,
        _ => Vec::new(),
    }
}

fn number(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_i64().map(|i| i as u64))
        .unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Whether a Java stack's bottom frame is a thread's first: `Thread.run` (the workload's
/// threads), or `NativeLibs.main` (the main thread, which loads the libraries).
fn is_root((class, method, _): &(String, String, bool)) -> bool {
    matches!(
        (class.as_str(), method.as_str()),
        ("java/lang/Thread", "run") | ("NativeLibs", "main")
    )
}

/// A frame's (class, method, whether the symbolizer made it from a pc: type `Native`, a class
/// without a package, descriptor `()V`, modifiers `native` alone).
fn frame(f: &Value) -> (String, String, bool) {
    let m = &f["method"];
    let class = m["type"]["name"].as_str().unwrap_or("?").to_string();
    let method = m["name"].as_str().unwrap_or("?").to_string();
    let native = f["type"] == "Native"
        && m["type"]["package"].is_null()
        && m["descriptor"] == "()V"
        && m["modifiers"] == 0x100;
    (class, method, native)
}

/// The samples of `raw` with the native frames of `symbolized` (the same samples in the same
/// order: checked), and the recorded library ranges.
pub fn read(jdk: &Jdk, raw: &Path, symbolized: &Path) -> (Vec<Sample>, Vec<Range>) {
    let mut samples = Vec::new();
    let mut ranges = Vec::new();
    for e in jfr_print(jdk, raw, "jdk.CPUTimeSample,jdk.NativeLibrary") {
        let v = &e["values"];
        if e["type"] == "jdk.NativeLibrary" {
            ranges.push(Range {
                path: v["name"].as_str().unwrap_or("").to_string(),
                base: number(&v["baseAddress"]),
                top: number(&v["topAddress"]),
                offset: number(&v["fileOffset"]),
            });
            continue;
        }
        let frames = v["stackTrace"]["frames"].as_array();
        let bottom = frames.and_then(|f| f.last()).map(frame);
        let java_thread = (number(&v["eventThread"]["javaThreadId"]) > 0)
            .then(|| v["eventThread"]["javaName"].as_str().map(str::to_string))
            .flatten();
        samples.push(Sample {
            java_thread,
            whole: v["stackTrace"]["truncated"] == false && bottom.as_ref().is_some_and(is_root),
            pcs: v["nativeStackTrace"]["frames"]
                .as_array()
                .map(|f| f.iter().map(|p| number(&p["pc"])).collect())
                .unwrap_or_default(),
            native: Vec::new(),
        });
    }
    let named = jfr_print(jdk, symbolized, "jdk.CPUTimeSample");
    assert_eq!(
        named.len(),
        samples.len(),
        "{} and {}",
        raw.display(),
        symbolized.display()
    );
    for (s, e) in samples.iter_mut().zip(&named) {
        let frames = e["values"]["stackTrace"]["frames"].as_array();
        s.native = frames
            .into_iter()
            .flatten()
            .map(frame)
            .filter(|(_, _, native)| *native)
            .map(|(c, m, _)| (c, m))
            .collect();
    }
    (samples, ranges)
}

/// `nm -S -C --defined-only [-D]`: (start, end, name) of each sized function symbol.
fn nm(file: &Path, dynamic: bool) -> Vec<(u64, u64, String)> {
    let mut cmd = Command::new("nm");
    cmd.args(["-S", "-C", "--defined-only"]);
    if dynamic {
        cmd.arg("-D");
    }
    let out = cmd.arg(file).output().expect("nm");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.splitn(4, ' ').collect();
            let [start, size, kind, name] = w.as_slice() else {
                return None;
            };
            "tTwWiI".contains(*kind).then_some(())?;
            let start = u64::from_str_radix(start, 16).ok()?;
            Some((
                start,
                start + u64::from_str_radix(size, 16).ok()?,
                name.to_string(),
            ))
        })
        .collect()
}

/// The function symbols of each library's file, from its jar: `.symtab` and `.dynsym`.
pub fn symbol_tables(
    built: &Built,
    libs: &[&MavenLib],
) -> BTreeMap<&'static str, Vec<(u64, u64, String)>> {
    libs.iter()
        .map(|l| {
            let file = built.library_file(l);
            let mut all = nm(&file, false);
            all.extend(nm(&file, true));
            assert!(
                !all.is_empty(),
                "nm finds no function in {}",
                file.display()
            );
            (l.key, all)
        })
        .collect()
}

/// The names `nm` gives the function at `address` (aliases: several).
fn nm_names(table: &[(u64, u64, String)], address: u64) -> Vec<&str> {
    table
        .iter()
        .filter(|(s, e, _)| *s <= address && address < *e)
        .map(|(_, _, n)| n.as_str())
        .collect()
}

/// Whether the symbolizer's `name` is one of `nm`'s names. The two demanglers write C++
/// signatures differently (spaces; a template's integer argument `48ul` for `nm`,
/// `(unsigned long)48` for the symbolizer), so names also match by their [`base_name`]s.
fn same_name(name: &str, nm_names: &[&str]) -> bool {
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    nm_names
        .iter()
        .any(|n| squeeze(n) == squeeze(name) || base_name(n) == base_name(name))
}

/// A demangled C++ name without its template arguments and its parameters:
/// `bssl::f<48ul>(int) const` is `bssl::f`; `(anonymous namespace)` is kept.
fn base_name(name: &str) -> String {
    let name = name.replace("(anonymous namespace)", "{anonymous}");
    let mut out = String::new();
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 => break,
            c if depth == 0 && !c.is_whitespace() => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether the symbolizer gave `name` as a function's name, not a position: `0xOFFSET`,
/// `lib+0xOFFSET` or `symbol+0xOFFSET` are positions.
pub fn is_a_name(name: &str) -> bool {
    !(name.starts_with("0x") || name.contains("+0x"))
}

/// The counts of one library, on one side (Java threads, or the other threads).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Figures {
    /// Samples with a pc in the library.
    pub reach: u64,
    /// Of those, nameable by `nm`.
    pub nameable: u64,
    /// Of those, with every frame of the library named as `nm` names it.
    pub named: u64,
    /// Of the nameable, with the innermost frame of the library named as `nm` names it.
    pub innermost_named: u64,
    /// Frames given a name that `nm` does not give the function there.
    pub wrong: u64,
    /// Java threads' samples with the whole Java stack.
    pub whole: u64,
}

impl Figures {
    /// One line for messages.
    pub fn line(&self) -> String {
        let share = |n: u64, d: u64| {
            if d == 0 {
                f64::NAN
            } else {
                n as f64 / d as f64
            }
        };
        format!(
            "{} samples reach it; {} ({:.3}) nameable by nm; named {} ({:.3} of the nameable), \
             innermost named {}; {} frames named otherwise than nm; whole Java stack {} ({:.3})",
            self.reach,
            self.nameable,
            share(self.nameable, self.reach),
            self.named,
            share(self.named, self.nameable),
            self.innermost_named,
            self.wrong,
            self.whole,
            share(self.whole, self.reach)
        )
    }
}

/// Per library key, the figures of the Java threads' samples and of the other threads'.
pub fn figures(
    samples: &[Sample],
    ranges: &[Range],
    tables: &BTreeMap<&'static str, Vec<(u64, u64, String)>>,
) -> BTreeMap<(&'static str, bool), Figures> {
    let mut all: BTreeMap<(&'static str, bool), Figures> = BTreeMap::new();
    for s in samples {
        let mut by_lib: BTreeMap<&'static str, Vec<u64>> = BTreeMap::new();
        for (i, &pc) in s.pcs.iter().enumerate() {
            let Some(r) = ranges.iter().find(|r| r.base <= pc && pc < r.top) else {
                continue;
            };
            if let Some(lib) = library_of(&r.path) {
                let address = pc - r.base + r.offset - u64::from(i > 0);
                by_lib.entry(lib.key).or_default().push(address);
            }
        }
        for (key, addresses) in by_lib {
            let Some(table) = tables.get(key) else {
                continue;
            };
            let f = all.entry((key, s.java_thread.is_some())).or_default();
            count(f, s, key, &addresses, table);
        }
    }
    all
}

fn count(f: &mut Figures, s: &Sample, key: &str, addresses: &[u64], table: &[(u64, u64, String)]) {
    f.reach += 1;
    f.whole += u64::from(s.java_thread.is_some() && s.whole);
    let expected: Vec<Vec<&str>> = addresses.iter().map(|&a| nm_names(table, a)).collect();
    let frames: Vec<&str> = s
        .native
        .iter()
        .filter(|(class, _)| library_of(class).is_some_and(|l| l.key == key))
        .map(|(_, m)| m.as_str())
        .collect();
    let right = |i: usize| {
        frames
            .get(i)
            .is_some_and(|n| is_a_name(n) && same_name(n, &expected[i]))
    };
    if expected.iter().all(|names| !names.is_empty()) {
        f.nameable += 1;
        f.named += u64::from(frames.len() == expected.len() && (0..expected.len()).all(right));
        f.innermost_named += u64::from(right(0));
    }
    // A frame given a name (not a position) must be the function nm finds there.
    if frames.len() == expected.len() {
        f.wrong += (0..frames.len())
            .filter(|&i| is_a_name(frames[i]) && !same_name(frames[i], &expected[i]))
            .count() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demanglers_differences_aside_names_match() {
        let nm = "bssl::derive(bssl::InplaceVector<unsigned char, 48ul>*, std::string_view)";
        let ours = "bssl::derive(bssl::InplaceVector<unsigned char, (unsigned long)48>*, \
                    std::string_view)";
        assert!(same_name(ours, &[nm]));
        assert!(same_name(
            "mlkem::(anonymous namespace)::scalar_ntt",
            &["mlkem::(anonymous namespace)::scalar_ntt(mlkem::scalar*)"]
        ));
        assert!(same_name("crc32_z", &["crc32", "crc32_z"]));
        assert!(!same_name("bssl::other(int)", &[nm]));
        assert!(!same_name(
            "mlkem::(anonymous namespace)::scalar_add",
            &["mlkem::(anonymous namespace)::scalar_ntt(mlkem::scalar*)"]
        ));
        assert!(!is_a_name("0x7af4c") && !is_a_name("deflateEnd+0x3f0"));
        assert!(is_a_name("ZSTD_RowFindBestMatch_noDict_4_4.lto_priv.0"));
    }
}
