//! The symbolizer's test libraries (`testdata/symbolize`), built once per test process in
//! every variant the resolution rules care about, and the reference tools' answers for them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use symbolize::LibraryRef;

use crate::readers::run;

/// Where the tests pretend each test library was mapped.
pub const BASE: u64 = 0x7f12_3400_0000;

/// `path` as a recording would list it, mapped at [`BASE`] from file offset 0.
pub fn library(path: &Path, build_id: Option<String>) -> LibraryRef {
    LibraryRef {
        path: path.display().to_string(),
        base: BASE,
        top: BASE + 0x10_0000,
        build_id,
        file_offset: 0,
    }
}

/// Every variant of the test library.
#[derive(Debug, Clone)]
pub struct SymLibs {
    /// Where they are.
    pub dir: PathBuf,
    /// `-O2 -g`.
    pub dwarf: PathBuf,
    /// `-O2`, no DWARF (`.symtab` only).
    pub nodebug: PathBuf,
    /// `dwarf` after `strip --strip-all` (`.dynsym` only; same build-id as `dwarf`).
    pub stripped: PathBuf,
    /// `stripped` plus a `.gnu_debuglink` to `libsym-link.debug` in the same directory.
    pub linked: PathBuf,
    /// A root holding `.build-id/xx/yyyy.debug` for `dwarf`'s build-id.
    pub debug_root: PathBuf,
    /// `dwarf` with zlib-compressed DWARF.
    pub zlib: PathBuf,
    /// `dwarf` with zstd-compressed DWARF.
    pub zstd: PathBuf,
    /// `stripped` plus MiniDebugInfo (`.gnu_debugdata`), made as Fedora's `find-debuginfo`
    /// makes it: the debug file's function symbols that `.dynsym` lacks, in an ELF file of
    /// symbols only, xz-compressed.
    pub mini: PathBuf,
    /// The build-id of `dwarf`, hex.
    pub build_id: String,
}

fn sh(cmd: &mut Command) -> Result<String, String> {
    run(cmd)
}

/// Builds the variants (once).
pub fn sym_libs() -> &'static SymLibs {
    static BUILT: OnceLock<Result<SymLibs, String>> = OnceLock::new();
    BUILT
        .get_or_init(build)
        .as_ref()
        .unwrap_or_else(|e| panic!("building the symbolizer's test libraries: {e}"))
}

fn build() -> Result<SymLibs, String> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/symbolize");
    let dir = std::env::temp_dir().join(format!("jfrnative-symlibs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let flags = [
        "-O2",
        "-fPIC",
        "-fno-reorder-functions",
        // Packed functions: a call that ends a function returns to the next one's first byte.
        "-falign-functions=1",
    ];
    let link = |debug: bool, out: &Path| -> Result<(), String> {
        let g: &[&str] = if debug { &["-g"] } else { &[] };
        let mut objects = Vec::new();
        for (compiler, source, ext) in [("gcc", "sym.c", "c.o"), ("g++", "demangle.cpp", "cpp.o")] {
            let obj = out.with_extension(ext);
            sh(Command::new(compiler)
                .args(flags)
                .args(g)
                .arg("-c")
                .arg(src.join(source))
                .arg("-o")
                .arg(&obj))?;
            objects.push(obj);
        }
        sh(Command::new("g++")
            .args(["-shared", "-Wl,--build-id"])
            .args(&objects)
            .arg("-o")
            .arg(out))?;
        Ok(())
    };
    let dwarf = dir.join("libsym-dwarf.so");
    let nodebug = dir.join("libsym-nodebug.so");
    link(true, &dwarf)?;
    link(false, &nodebug)?;
    let build_id = build_id(&dwarf)?;
    let stripped = dir.join("libsym-stripped.so");
    sh(Command::new("strip")
        .arg("--strip-all")
        .arg(&dwarf)
        .arg("-o")
        .arg(&stripped))?;
    let debug_root = dir.join("debug-root");
    let by_id = debug_root
        .join(".build-id")
        .join(&build_id[..2])
        .join(format!("{}.debug", &build_id[2..]));
    std::fs::create_dir_all(by_id.parent().unwrap_or(&debug_root)).map_err(|e| e.to_string())?;
    sh(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&dwarf)
        .arg(&by_id))?;
    let linked_dir = dir.join("linked");
    std::fs::create_dir_all(&linked_dir).map_err(|e| e.to_string())?;
    let link_debug = linked_dir.join("libsym-link.debug");
    std::fs::copy(&by_id, &link_debug).map_err(|e| e.to_string())?;
    let linked = linked_dir.join("libsym-linked.so");
    sh(Command::new("objcopy")
        .arg(format!("--add-gnu-debuglink={}", link_debug.display()))
        .arg(&stripped)
        .arg(&linked))?;
    let zlib = dir.join("libsym-zlib.so");
    let zstd = dir.join("libsym-zstd.so");
    for (kind, out) in [("zlib", &zlib), ("zstd", &zstd)] {
        sh(Command::new("objcopy")
            .arg(format!("--compress-debug-sections={kind}"))
            .arg(&dwarf)
            .arg(out))?;
    }
    let mini = dir.join("libsym-mini.so");
    add_mini_debuginfo(&stripped, &by_id, &dir.join("mini-work"), &mini)?;
    Ok(SymLibs {
        dir,
        dwarf,
        nodebug,
        stripped,
        linked,
        debug_root,
        zlib,
        zstd,
        mini,
        build_id,
    })
}

/// Writes `out`: `stripped` with a `.gnu_debugdata` section made from `debug` (its debug
/// file), with `work` for the intermediate files.
fn add_mini_debuginfo(
    stripped: &Path,
    debug: &Path,
    work: &Path,
    out: &Path,
) -> Result<(), String> {
    use std::collections::BTreeSet;
    std::fs::create_dir_all(work).map_err(|e| e.to_string())?;
    // Names `.dynsym` defines (posix format: the name first).
    let exported: BTreeSet<String> = sh(Command::new("nm")
        .args(["-D", "--format=posix", "--defined-only"])
        .arg(stripped))?
    .lines()
    .filter_map(|l| l.split_whitespace().next().map(str::to_string))
    .collect();
    // Function symbols of the debug file (sysv format: `name|value|class|type|...`).
    let functions: BTreeSet<String> = sh(Command::new("nm")
        .args(["--format=sysv", "--defined-only"])
        .arg(debug))?
    .lines()
    .filter_map(|l| {
        let fields: Vec<&str> = l.split('|').map(str::trim).collect();
        (fields.len() > 3 && fields[3] == "FUNC").then(|| fields[0].to_string())
    })
    .collect();
    let keep: Vec<&str> = functions
        .difference(&exported)
        .map(String::as_str)
        .collect();
    if keep.is_empty() {
        return Err(format!(
            "{}: no function symbol missing from .dynsym",
            debug.display()
        ));
    }
    let keep_file = work.join("keep_symbols");
    std::fs::write(&keep_file, keep.join("\n") + "\n").map_err(|e| e.to_string())?;
    let symbols_only = work.join("mini_debuginfo");
    sh(Command::new("objcopy")
        .args([
            "-S",
            "--remove-section",
            ".gdb_index",
            "--remove-section",
            ".comment",
        ])
        .arg(format!("--keep-symbols={}", keep_file.display()))
        .arg(debug)
        .arg(&symbols_only))?;
    sh(Command::new("xz").arg("-f").arg(&symbols_only))?;
    sh(Command::new("objcopy")
        .arg(format!(
            "--add-section=.gnu_debugdata={}.xz",
            symbols_only.display()
        ))
        .arg(stripped)
        .arg(out))?;
    Ok(())
}

/// The GNU build-id of `elf`, hex, from `readelf -n`.
pub fn build_id(elf: &Path) -> Result<String, String> {
    let notes = sh(Command::new("readelf").arg("-n").arg(elf))?;
    notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .map(|s| s.trim().to_string())
        .ok_or_else(|| format!("{}: no build-id", elf.display()))
}

/// The compression type (`ch_type`: 1 zlib, 2 zstd) of `.debug_info` in `elf`, read from the
/// section's `Elf64_Chdr` (x86_64 ELF layout); `None` if the section is not compressed.
pub fn debug_info_compression(elf: &Path) -> Option<u32> {
    let d = std::fs::read(elf).ok()?;
    let u16_at = |o: usize| Some(u16::from_le_bytes(d.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(d.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(d.get(o..o + 8)?.try_into().ok()?));
    let shoff = u64_at(0x28)? as usize;
    let (entsize, count, strndx) = (
        u16_at(0x3a)? as usize,
        u16_at(0x3c)? as usize,
        u16_at(0x3e)? as usize,
    );
    let strtab = u64_at(shoff + strndx * entsize + 0x18)? as usize;
    (0..count).find_map(|i| {
        let sh = shoff + i * entsize;
        let name_at = strtab + u32_at(sh)? as usize;
        let name = d.get(name_at..)?.split(|&b| b == 0).next()?;
        let flags = u64_at(sh + 8)?;
        let offset = u64_at(sh + 0x18)? as usize;
        (name == b".debug_info" && flags & 0x800 != 0).then(|| u32_at(offset))?
    })
}

/// One frame of a reference tool's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefFrame {
    /// Function, demangled; "??" if unknown.
    pub function: String,
    /// File name (last path component), if known.
    pub file: Option<String>,
    /// Line, if known (0 = unknown).
    pub line: u32,
}

fn parse_location(loc: &str) -> (Option<String>, u32) {
    // "path/file.c:12:3", "path/file.c:12 (discriminator 1)", "??:0", "??:?"
    let loc = loc.split(" (").next().unwrap_or(loc);
    let mut parts = loc.rsplitn(3, ':').collect::<Vec<_>>();
    parts.reverse();
    let (file, line) = match parts.as_slice() {
        [file, line, _col] if line.parse::<u32>().is_ok() => (*file, *line),
        [file, line] | [_, file, line] => (*file, *line),
        _ => ("??", "0"),
    };
    let file = (file != "??").then(|| {
        Path::new(file)
            .file_name()
            .map_or(file.to_string(), |n| n.to_string_lossy().into_owned())
    });
    (file, line.parse().unwrap_or(0))
}

/// `llvm-symbolizer --inlining -C` on `addresses` (ELF addresses) of `elf`: one inline chain
/// per address, innermost first.
pub fn llvm_symbolizer(elf: &Path, addresses: &[u64]) -> Result<Vec<Vec<RefFrame>>, String> {
    let mut cmd = Command::new("llvm-symbolizer");
    cmd.arg(format!("--obj={}", elf.display()))
        .args(["--inlining", "--demangle"]);
    for a in addresses {
        cmd.arg(format!("{a:#x}"));
    }
    let out = sh(&mut cmd)?;
    let mut all = Vec::new();
    for block in out.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let lines: Vec<&str> = block.lines().collect();
        let frames = lines
            .chunks(2)
            .map(|pair| {
                let (file, line) = parse_location(pair.get(1).copied().unwrap_or("??:0"));
                RefFrame {
                    function: pair[0].to_string(),
                    file,
                    line,
                }
            })
            .collect();
        all.push(frames);
    }
    Ok(all)
}

/// binutils `addr2line -a -f -i -C` on `addresses` of `elf`.
pub fn binutils_addr2line(elf: &Path, addresses: &[u64]) -> Result<Vec<Vec<RefFrame>>, String> {
    let mut cmd = Command::new("addr2line");
    cmd.args(["-a", "-f", "-i", "-C", "-e"]).arg(elf);
    for a in addresses {
        cmd.arg(format!("{a:#x}"));
    }
    let out = sh(&mut cmd)?;
    let mut all: Vec<Vec<RefFrame>> = Vec::new();
    let mut lines = out.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("0x") {
            all.push(Vec::new());
            continue;
        }
        let location = lines.next().unwrap_or("??:0");
        let (file, line_no) = parse_location(location);
        if let Some(last) = all.last_mut() {
            last.push(RefFrame {
                function: line.to_string(),
                file,
                line: line_no,
            });
        }
    }
    Ok(all)
}
