//! `go tool pprof` (Debian's `golang-go`) as an independent reader of the pprof export, offline:
//! no symbolization (`-symbolize=none`), no module proxy, and HOME, GOCACHE, GOPATH and
//! PPROF_TMPDIR in a directory of the test's own (times in UTC). Parsers for its `-raw` and `-top`
//! output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::readers::run;

/// The `go` command, ready to run `go tool pprof` offline.
#[derive(Debug, Clone)]
pub struct GoPprof {
    go: PathBuf,
    home: PathBuf,
}

/// `go` on PATH; `None` (with a note on stderr) when it is missing, unless missing tools fail
/// the tests (CI, `JFRNATIVE_REQUIRE_JDKS`): then it panics.
pub fn go_pprof() -> Option<GoPprof> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("go"))
            .find(|p| p.is_file())
    });
    let Some(go) = found else {
        if crate::jdk::jdks_required() {
            panic!("`go` not found (Debian's golang-go; tools/scripts/setup.sh installs it): required in CI");
        }
        eprintln!("note: `go` not found (install golang-go): the go tool pprof checks are skipped");
        return None;
    };
    let home = std::env::temp_dir().join(format!("jfrnative-gohome-{}", std::process::id()));
    // A failure here is no missing tool: the checks must not pass without running.
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{}: {e}", home.display()));
    Some(GoPprof { go, home })
}

impl GoPprof {
    /// `go tool pprof -symbolize=none ARGS FILE`: its standard output, or the error.
    pub fn run(&self, args: &[&str], file: &Path) -> Result<String, String> {
        let mut cmd = Command::new(&self.go);
        cmd.args(["tool", "pprof", "-symbolize=none"])
            .args(args)
            .arg(file)
            .env("HOME", &self.home)
            .env("GOCACHE", self.home.join("cache"))
            .env("GOPATH", self.home.join("path"))
            .env("PPROF_TMPDIR", self.home.join("pprof"))
            .env("GOPROXY", "off")
            .env("GOTOOLCHAIN", "local")
            .env("TZ", "UTC")
            .env("GOFLAGS", "-mod=mod")
            .env_remove("PPROF_BINARY_PATH")
            .env_remove("PPROF_TOOLS");
        run(&mut cmd)
    }
}

/// One line of a location in `-raw`: function, file, line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLine {
    /// Function name.
    pub function: String,
    /// File name as written (empty when unknown).
    pub file: String,
    /// Line (0 when unknown).
    pub line: u64,
}

/// One location of `-raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLocation {
    /// Address (0 for none).
    pub address: u64,
    /// Mapping id, if any.
    pub mapping: Option<u64>,
    /// Lines, innermost first.
    pub lines: Vec<RawLine>,
}

/// One mapping of `-raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawMapping {
    /// Start address.
    pub start: u64,
    /// Limit.
    pub limit: u64,
    /// File offset.
    pub offset: u64,
    /// File name.
    pub file: String,
    /// Build-id (empty when none).
    pub build_id: String,
    /// The `[FN][FL][LN][IN]` flags as written.
    pub flags: String,
}

/// One sample of `-raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSample {
    /// Values, in sample-type order.
    pub values: Vec<u64>,
    /// Location ids, leaf first.
    pub locations: Vec<u64>,
    /// The `thread` label, if any.
    pub thread: Option<String>,
}

/// `go tool pprof -raw` output, parsed.
#[derive(Debug, Clone, Default)]
pub struct Raw {
    /// `PeriodType:` line.
    pub period_type: String,
    /// `Period:`.
    pub period: u64,
    /// The sample types line (`samples/count cpu/nanoseconds[dflt]`).
    pub sample_types: String,
    /// Samples.
    pub samples: Vec<RawSample>,
    /// Locations by id.
    pub locations: BTreeMap<u64, RawLocation>,
    /// Mappings by id.
    pub mappings: BTreeMap<u64, RawMapping>,
}

impl Raw {
    /// The sum of value `index` over the samples.
    pub fn total(&self, index: usize) -> u64 {
        self.samples.iter().map(|s| s.values[index]).sum()
    }
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("not hex: {s}"))
}

/// `name file:line s=N(system)` → function, file, line.
/// One line of a location in `-raw` output: `FUNCTION FILE:LINE s=START` (Go before 1.26) or
/// `FUNCTION FILE:LINE:COLUMN s=START` (Go 1.26: the column is 0 when the profile has none).
fn raw_line(text: &str) -> RawLine {
    let text = text.trim();
    let before_start = text.rfind(" s=").map_or(text, |i| &text[..i]).trim_end();
    let (function, place) = before_start.rsplit_once(' ').unwrap_or(("", before_start));
    let parts: Vec<&str> = place.rsplitn(3, ':').collect();
    let number = |s: &str| s.parse::<i64>().ok();
    let (file, line) = match parts.as_slice() {
        [column, line, file] if number(column).is_some() && number(line).is_some() => {
            (*file, *line)
        }
        [line, rest @ ..] if !rest.is_empty() => {
            (place.strip_suffix(&format!(":{line}")).unwrap_or(""), *line)
        }
        _ => panic!("no line in {text}"),
    };
    RawLine {
        function: function.to_string(),
        file: file.to_string(),
        line: line.parse().unwrap_or_else(|_| panic!("line of {text}")),
    }
}

/// Parses `-raw` output.
pub fn parse_raw(text: &str) -> Raw {
    let mut raw = Raw::default();
    let mut section = "";
    let mut last_location = None;
    for line in text.lines() {
        match line {
            "Samples:" | "Locations" | "Mappings" => {
                section = line;
                continue;
            }
            _ => {}
        }
        if let Some(v) = line.strip_prefix("PeriodType: ") {
            raw.period_type = v.to_string();
        } else if let Some(v) = line.strip_prefix("Period: ") {
            raw.period = v.trim().parse().unwrap_or(0);
        } else if section == "Samples:" {
            if line.contains('/') && raw.sample_types.is_empty() {
                raw.sample_types = line.trim().to_string();
            } else if let Some((values, locations)) = line.split_once(": ").filter(|(v, _)| {
                v.split_whitespace()
                    .all(|n| n.chars().all(|c| c.is_ascii_digit()))
            }) {
                raw.samples.push(RawSample {
                    values: values
                        .split_whitespace()
                        .map(|v| v.parse().unwrap())
                        .collect(),
                    locations: locations
                        .split_whitespace()
                        .map(|v| v.parse().unwrap())
                        .collect(),
                    thread: None,
                });
            } else if let Some(rest) = line.trim().strip_prefix("thread:[") {
                let name = rest.strip_suffix(']').unwrap_or(rest).to_string();
                if let Some(s) = raw.samples.last_mut() {
                    s.thread = Some(name);
                }
            }
        } else if section == "Locations" {
            if line.starts_with("             ") {
                // An inlined caller of the previous location.
                let id = last_location.expect("a line before any location");
                if let Some(l) = raw.locations.get_mut(&id) {
                    l.lines.push(raw_line(line));
                }
                continue;
            }
            let Some((id, rest)) = line.trim_start().split_once(": ") else {
                continue;
            };
            let id: u64 = id.parse().unwrap();
            let (address, mut rest) = rest.split_once(' ').unwrap_or((rest, ""));
            let mut mapping = None;
            if let Some(after) = rest.strip_prefix("M=") {
                let (m, tail) = after.split_once(' ').unwrap_or((after, ""));
                mapping = Some(m.parse().unwrap());
                rest = tail;
            }
            let lines = if rest.trim().is_empty() {
                vec![]
            } else {
                vec![raw_line(rest)]
            };
            raw.locations.insert(
                id,
                RawLocation {
                    address: hex(address),
                    mapping,
                    lines,
                },
            );
            last_location = Some(id);
        } else if section == "Mappings" {
            let Some((id, rest)) = line.split_once(": ") else {
                continue;
            };
            let mut words = rest.split_whitespace();
            let range: Vec<u64> = words.next().unwrap().split('/').map(hex).collect();
            let file = words.next().unwrap_or("").to_string();
            let rest: Vec<&str> = words.collect();
            let (build_id, flags) = match rest.as_slice() {
                [] => (String::new(), String::new()),
                [one] if one.starts_with('[') => (String::new(), one.to_string()),
                [one] => (one.to_string(), String::new()),
                [id, flags, ..] => (id.to_string(), flags.to_string()),
            };
            raw.mappings.insert(
                id.trim().parse().unwrap(),
                RawMapping {
                    start: range[0],
                    limit: range[1],
                    offset: range[2],
                    file,
                    build_id,
                    flags,
                },
            );
        }
    }
    raw
}

/// One row of `-top -unit=ns`: flat and cum in ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopRow {
    /// Flat.
    pub flat: u64,
    /// Cum.
    pub cum: u64,
}

/// `-top -unit=ns -nodefraction=0` output, parsed.
#[derive(Debug, Clone, Default)]
pub struct Top {
    /// What the shown nodes account for (all kept samples, with `-nodefraction=0`).
    pub shown: u64,
    /// The profile's total.
    pub total: u64,
    /// Rows by function name (without pprof's `(inline)` mark).
    pub rows: BTreeMap<String, TopRow>,
}

fn ns(text: &str) -> u64 {
    let digits = text.trim_end_matches("ns");
    digits
        .parse()
        .unwrap_or_else(|_| panic!("not a value in ns: {text}"))
}

/// Parses `-top -unit=ns` output.
pub fn parse_top(text: &str) -> Top {
    let mut top = Top::default();
    let mut in_rows = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Showing nodes accounting for ") {
            // "A, P% of T total"
            let (shown, total) = rest
                .split_once(", ")
                .zip(rest.split_once(" of "))
                .unwrap_or_else(|| panic!("{line}"));
            top.shown = ns(shown.0);
            top.total = ns(total.1.trim_end_matches(" total"));
        } else if line.trim_start().starts_with("flat  flat%") {
            in_rows = true;
        } else if in_rows {
            // flat flat% sum% cum cum% name (the name may hold spaces)
            let mut rest = line.trim_start();
            let mut fields = Vec::new();
            for _ in 0..5 {
                let (field, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                fields.push(field);
                rest = tail.trim_start();
            }
            // Functions reached through inlining are marked so; the name is what counts here.
            let name = rest
                .strip_suffix(" (inline)")
                .or_else(|| rest.strip_suffix(" (partial-inline)"))
                .unwrap_or(rest);
            top.rows.insert(
                name.to_string(),
                TopRow {
                    flat: ns(fields[0]),
                    cum: ns(fields[3]),
                },
            );
        }
    }
    assert!(in_rows, "no rows in {text}");
    top
}

impl GoPprof {
    /// `-top -unit=ns -nodefraction=0 ARGS FILE`, parsed; panics if it fails.
    pub fn top(&self, args: &[&str], file: &Path) -> Top {
        let mut all = vec!["-top", "-unit=ns", "-nodefraction=0"];
        all.extend_from_slice(args);
        parse_top(&self.run(&all, file).unwrap_or_else(|e| panic!("{e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_lines_of_go_before_and_from_1_26() {
        let line = |t: &str| {
            let l = raw_line(t);
            (l.function, l.file, l.line)
        };
        let main = ("demo.Main.run".to_string(), "demo.Main".to_string(), 12);
        assert_eq!(line("demo.Main.run demo.Main:12 s=0"), main);
        assert_eq!(
            line("demo.Main.run demo.Main:12:0 s=0(demo.Main.run()V)"),
            main
        );
        assert_eq!(
            line("OptoRuntime::new(Klass*, JavaThread*) x.cpp:7:3 s=0"),
            (
                "OptoRuntime::new(Klass*, JavaThread*)".to_string(),
                "x.cpp".to_string(),
                7
            )
        );
        let none = ("libdemo.so+0x1130".to_string(), String::new(), 0);
        assert_eq!(line("libdemo.so+0x1130 :0 s=0"), none);
        assert_eq!(line("libdemo.so+0x1130 :0:0 s=0"), none);
    }
}
