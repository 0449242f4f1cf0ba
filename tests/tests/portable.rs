//! The portable build runs on glibc 2.17 and later (issue 41). `tools/scripts/build-portable.sh`
//! links the agent and both CLIs against glibc 2.17's symbol versions. None of the files it
//! leaves in `target/portable/linux-x86_64/` may need a newer one.
//!
//! The versions come from each file's `.gnu.version_r`: the dynamic loader checks these before
//! any code runs, and refuses the file ("version `GLIBC_2.34' not found") if one is missing.
//! Each version is listed with the symbols bound to it. Where binutils' `readelf` is installed,
//! its `--dyn-syms` must list the same symbols and versions. The same reader applied to the
//! normal build, linked against this machine's glibc, must find a newer version: proof that the
//! check can fail.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use object::elf;
use object::read::elf::{FileHeader, SectionTable, Sym};
use object::Endianness;
use tests::readers::run;
use tests::workload::{agent_library, repo, tool_binary};

/// The oldest glibc the portable files must run on.
const BASELINE: [u32; 2] = [2, 17];

/// The files the portable build ships.
const FILES: [&str; 3] = ["libjfrnative.so", "jfrnative", "jfr-symbolize"];

/// One glibc symbol version a file needs, with the symbols bound to it.
#[derive(Debug)]
struct Need {
    /// The library that must define it: `libc.so.6`, `libpthread.so.0`, ...
    library: String,
    /// `GLIBC_2.17`, `GLIBC_PRIVATE`, ...
    version: String,
    /// A weak need (`VER_FLG_WEAK`): the loader accepts a glibc without it.
    weak: bool,
    /// The undefined dynamic symbols bound to this version.
    symbols: Vec<String>,
}

impl Need {
    /// `GLIBC_2.2.5` as `[2, 2, 5]`; `None` for a version without a number (`GLIBC_PRIVATE`).
    fn number(&self) -> Option<Vec<u32>> {
        let digits = self.version.strip_prefix("GLIBC_")?;
        digits.split('.').map(|d| d.parse().ok()).collect()
    }

    /// Whether a glibc of the baseline may lack it (newer, or private to glibc).
    fn beyond_baseline(&self) -> bool {
        self.number()
            .is_none_or(|n| n.as_slice() > BASELINE.as_slice())
    }
}

/// The glibc versions (`GLIBC_*`) that the ELF file at `path` needs, read from its version needs
/// (`SHT_GNU_VERNEED`) and its dynamic symbols' versions (`SHT_GNU_VERSYM`).
fn glibc_needs(path: &Path) -> Result<Vec<Need>, String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |e: object::read::Error| format!("{}: {e}", path.display());
    let header = elf::FileHeader64::<Endianness>::parse(&*data).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let sections: SectionTable<'_, _, &[u8]> = header.sections(endian, &*data).map_err(bad)?;

    // Each needed version and the index that symbols refer to it by (`vna_other`).
    let mut needs = Vec::new();
    if let Some((mut files, link)) = sections.gnu_verneed(endian, &*data).map_err(bad)? {
        let strings = sections.strings(endian, &*data, link).map_err(bad)?;
        while let Some((file, mut versions)) = files.next().map_err(bad)? {
            let library = file.file(endian, strings).map_err(bad)?;
            while let Some(version) = versions.next().map_err(bad)? {
                let name = version.name(endian, strings).map_err(bad)?;
                if !name.starts_with(b"GLIBC_") {
                    continue;
                }
                let need = Need {
                    library: String::from_utf8_lossy(library).into_owned(),
                    version: String::from_utf8_lossy(name).into_owned(),
                    weak: version.vna_flags.get(endian) & elf::VER_FLG_WEAK != 0,
                    symbols: Vec::new(),
                };
                needs.push((version.vna_other.get(endian), need));
            }
        }
    }
    // The symbols: `versym[i]` is the version index of dynamic symbol `i`.
    let symbols = sections
        .symbols(endian, &*data, elf::SHT_DYNSYM)
        .map_err(bad)?;
    if let Some((versyms, _)) = sections.gnu_versym(endian, &*data).map_err(bad)? {
        for (symbol, versym) in symbols.symbols().iter().zip(versyms) {
            let index = versym.0.get(endian) & elf::VERSYM_VERSION;
            if let Some((_, need)) = needs.iter_mut().find(|(i, _)| *i == index) {
                let name = symbol.name(endian, symbols.strings()).map_err(bad)?;
                need.symbols
                    .push(String::from_utf8_lossy(name).into_owned());
            }
        }
    }
    Ok(needs.into_iter().map(|(_, need)| need).collect())
}

/// The highest numbered glibc version among `needs`, as its name.
fn highest(needs: &[Need]) -> Option<&str> {
    needs
        .iter()
        .filter_map(|n| Some((n.number()?, n.version.as_str())))
        .max()
        .map(|(_, name)| name)
}

/// The needs of `path` beyond the baseline, one line each, naming the symbols.
fn beyond_baseline(path: &Path, needs: &[Need]) -> Vec<String> {
    let file = path.file_name().unwrap_or_default().to_string_lossy();
    needs
        .iter()
        .filter(|n| n.beyond_baseline())
        .map(|n| {
            let weak = if n.weak { " (weak)" } else { "" };
            format!(
                "{file} needs {}{weak} from {} for: {}",
                n.version,
                n.library,
                n.symbols.join(", ")
            )
        })
        .collect()
}

/// `(symbol, GLIBC_version)` of every versioned undefined glibc symbol, as read here.
fn pairs(needs: &[Need]) -> BTreeSet<(String, String)> {
    needs
        .iter()
        .flat_map(|n| n.symbols.iter().map(|s| (s.clone(), n.version.clone())))
        .collect()
}

/// The same pairs as binutils' `readelf --dyn-syms` prints them (`pthread_create@GLIBC_2.2.5
/// (3)`), or `None` without readelf.
fn readelf_pairs(path: &Path) -> Option<BTreeSet<(String, String)>> {
    let text = run(Command::new("readelf").args(["--dyn-syms", "-W"]).arg(path)).ok()?;
    let pairs = text
        .lines()
        .filter(|line| line.contains(" UND "))
        .filter_map(|line| {
            let field = line.split_whitespace().nth(7)?;
            let (symbol, version) = field.split_once('@')?;
            let version = version.trim_start_matches('@');
            version
                .starts_with("GLIBC_")
                .then(|| (symbol.to_owned(), version.to_owned()))
        })
        .collect();
    Some(pairs)
}

/// Cross-checks the reader against readelf on `path`, when readelf is installed.
fn agrees_with_readelf(path: &Path, needs: &[Need]) {
    let Some(theirs) = readelf_pairs(path) else {
        tests::jdk::missing("readelf (binutils)", "the portable test's cross-check");
        return;
    };
    let ours = pairs(needs);
    assert_eq!(
        ours,
        theirs,
        "{}: the version reader and readelf --dyn-syms disagree\nonly here: {:?}\nonly in readelf: {:?}",
        path.display(),
        ours.difference(&theirs).collect::<Vec<_>>(),
        theirs.difference(&ours).collect::<Vec<_>>()
    );
}

/// `target/portable/linux-x86_64`, brought up to date by the build script once per test process
/// (incremental: a second when nothing changed).
fn portable_dir() -> PathBuf {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let script = repo().join("tools/scripts/build-portable.sh");
    let built = BUILT.get_or_init(|| {
        let out = Command::new("bash")
            .arg(&script)
            .output()
            .map_err(|e| format!("running {}: {e}", script.display()))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "{} failed ({}):\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    });
    if let Err(e) = built {
        panic!("{e}");
    }
    repo().join("target/portable/linux-x86_64")
}

#[test]
fn portable_files_need_glibc_2_17_at_most() {
    let dir = portable_dir();
    let mut failures = Vec::new();
    for file in FILES {
        let path = dir.join(file);
        let needs = glibc_needs(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !needs.is_empty(),
            "{}: no glibc version needs at all (not a dynamically linked glibc file?)",
            path.display()
        );
        agrees_with_readelf(&path, &needs);
        eprintln!("{file}: highest {}", highest(&needs).unwrap_or("none"));
        failures.extend(beyond_baseline(&path, &needs));
    }
    assert!(
        failures.is_empty(),
        "the portable build must run on glibc {}.{}:\n{}",
        BASELINE[0],
        BASELINE[1],
        failures.join("\n")
    );
}

#[test]
fn portable_cli_names_its_version_and_commit() {
    let version = run(Command::new(portable_dir().join("jfrnative")).arg("--version")).unwrap();
    let expected = format!("jfrnative {} (", env!("CARGO_PKG_VERSION"));
    assert!(version.starts_with(&expected), "{version}");
    assert!(!version.contains("unknown commit"), "{version}");
}

/// The machine's glibc as `[major, minor]` (`getconf GNU_LIBC_VERSION`: "glibc 2.36").
fn host_glibc() -> Option<Vec<u32>> {
    let text = run(Command::new("getconf").arg("GNU_LIBC_VERSION")).ok()?;
    let number = text.split_whitespace().nth(1)?;
    number.split('.').map(|d| d.parse().ok()).collect()
}

/// The check can fail: the normal build (`target/release`), linked against a glibc newer than
/// 2.17, needs its newer versions, and the reader says which symbols.
#[test]
fn normal_build_needs_a_newer_glibc() {
    let host = host_glibc();
    let Some(host) = host else {
        tests::jdk::missing(
            "getconf GNU_LIBC_VERSION",
            "the proof that the glibc check can fail",
        );
        return;
    };
    if host.as_slice() <= BASELINE.as_slice() {
        tests::jdk::missing(
            &format!("a glibc newer than 2.17 on this machine (it has {host:?})"),
            "the proof that the glibc check can fail",
        );
        return;
    }
    for path in [agent_library(), tool_binary("jfrnative")] {
        let needs = glibc_needs(&path).unwrap_or_else(|e| panic!("{e}"));
        agrees_with_readelf(&path, &needs);
        let failures = beyond_baseline(&path, &needs);
        eprintln!("{}", failures.join("\n"));
        assert!(
            !failures.is_empty() && failures.iter().all(|f| !f.ends_with("for: ")),
            "{}: expected needs beyond glibc 2.17 with their symbols, found highest {:?}",
            path.display(),
            highest(&needs)
        );
    }
}
