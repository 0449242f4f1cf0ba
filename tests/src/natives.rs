//! The native-unwinding workload (`testdata/cstack`): a call chain with a frameless leaf, built
//! three ways, and JNI functions that spend their time in system code without frame pointers
//! (zlib, libc, the vDSO). Built once per test process; runs of it with the agent; and the
//! mapping of recorded program counters to (library, function) through the recording's
//! `jdk.NativeLibrary` events and `nm`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::golden::SampleView;
use crate::jdk::{find, Jdk};
use crate::readers::{run, Reading};
use crate::workload::{functions, java_with_agent_in, javac, jni_gcc, repo, run_java};

/// One build of the chain (`testdata/cstack/chain.c`).
#[derive(Debug, Clone, Copy)]
pub struct ChainBuild {
    /// The workload mode, and the name of the thread that runs it.
    pub mode: &'static str,
    /// The Java class whose native method `burn` the build implements.
    pub class: &'static str,
    /// The library's file name.
    pub library: &'static str,
    /// The compiler flags.
    pub flags: &'static [&'static str],
}

impl ChainBuild {
    /// The JNI function: `Java_<class>_burn`.
    pub fn jni_function(&self) -> String {
        format!("Java_{}_burn", self.class)
    }
}

/// The three builds of the chain.
pub const CHAIN_BUILDS: [ChainBuild; 3] = [
    ChainBuild {
        mode: "chain-plain",
        class: "ChainPlain",
        library: "libchainplain.so",
        flags: &["-O2"],
    },
    ChainBuild {
        mode: "chain-fp",
        class: "ChainFp",
        library: "libchainfp.so",
        flags: &["-O2", "-fno-omit-frame-pointer"],
    },
    ChainBuild {
        mode: "chain-nofp",
        class: "ChainNofp",
        library: "libchainnofp.so",
        flags: &["-O2", "-fomit-frame-pointer"],
    },
];

/// The chain's functions below its JNI function, leaf first.
pub const CHAIN: [&str; 3] = ["chain_leaf", "chain_middle", "chain_outer"];

/// The library of the other JNI modes (`testdata/cstack/cstack.c`), built with
/// `-O2 -fno-omit-frame-pointer`: every frame an unwinder loses there is lost in system code.
pub const MODES_LIBRARY: &str = "libcstack.so";

/// A directory with the chain libraries, [`MODES_LIBRARY`] and the `Cstack` classes.
pub fn cstack_dir() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(build)
        .clone()
        .unwrap_or_else(|e| panic!("building the cstack workload: {e}"))
}

fn build() -> Result<PathBuf, String> {
    let jdk = find(17).or_else(|| find(25)).ok_or("no JDK")?;
    let dir = std::env::temp_dir().join(format!("jfrnative-cstack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = repo().join("testdata/cstack");
    for b in CHAIN_BUILDS {
        run(jni_gcc(&jdk, b.flags)
            .arg(format!("-DCHAIN_CLASS={}", b.class))
            .arg(src.join("chain.c"))
            .arg("-o")
            .arg(dir.join(b.library)))?;
    }
    run(jni_gcc(&jdk, &["-O2", "-fno-omit-frame-pointer"])
        .arg(src.join("cstack.c"))
        .arg("-o")
        .arg(dir.join(MODES_LIBRARY))
        .arg("-lz"))?;
    javac(&jdk, &src.join("Cstack.java"), &dir)?;
    Ok(dir)
}

/// Runs `Cstack SECONDS modes` with the agent to completion; an error with its output if it
/// fails.
pub fn run_cstack(
    jdk: &Jdk,
    agent_options: &str,
    seconds: f64,
    modes: &[&str],
) -> Result<Output, String> {
    let mut java = java_with_agent_in(jdk, agent_options, &[], &cstack_dir());
    java.arg("Cstack")
        .arg(seconds.to_string())
        .arg(modes.join(","));
    run_java(jdk, &mut java)
}

/// The instructions of `function` in `elf` that make or use a frame: any that names `%rsp` or
/// `%rbp`, or calls. None means the return address stays at `[rsp]` and `rbp` keeps the
/// caller's value all through the function. An error if `objdump` finds no such function.
pub fn frame_instructions(elf: &Path, function: &str) -> Result<Vec<String>, String> {
    let text = run(Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--disassemble={function}"))
        .arg(elf))?;
    // Instruction lines are "  addr:\tmnemonic operands".
    let instructions: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once(":\t").map(|(_, insn)| insn.trim()))
        .collect();
    if instructions.is_empty() {
        return Err(format!("no {function} in {}", elf.display()));
    }
    Ok(instructions
        .into_iter()
        .filter(|i| i.contains("%rsp") || i.contains("%rbp") || i.starts_with("call"))
        .map(str::to_string)
        .collect())
}

/// A `jdk.NativeLibrary` event.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Library {
    /// The path as mapped (`[vdso]` for the vDSO).
    pub path: String,
    /// `baseAddress`.
    pub base: u64,
    /// `topAddress`.
    pub top: u64,
    /// `fileOffset`: the file offset mapped at `base`.
    pub file_offset: u64,
    /// `buildId`, hex.
    pub build_id: Option<String>,
}

impl Library {
    /// Parses the [`library_line`](crate::golden::library_line) text of a [`Reading`].
    pub fn parse(line: &str) -> Option<Library> {
        // "<path> <base>-<top> build_id=<id> offset=<offset>"; the path may contain spaces.
        let mut words = line.rsplitn(4, ' ');
        let offset = words.next()?.strip_prefix("offset=")?;
        let build_id = words.next()?.strip_prefix("build_id=")?;
        let (base, top) = words.next()?.split_once('-')?;
        let hex = |s: &str| u64::from_str_radix(s.strip_prefix("0x")?, 16).ok();
        Some(Library {
            path: words.next()?.to_string(),
            base: hex(base)?,
            top: hex(top)?,
            file_offset: hex(offset)?,
            build_id: (build_id != "null").then(|| build_id.to_string()),
        })
    }

    /// The file name: `libc.so.6`, `[vdso]`.
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// [`functions`] of the library, else of its separate debug file (found by build-id
    /// under `/usr/lib/debug`, where Debian's `-dbg` packages put them).
    pub fn functions(&self) -> Vec<(u64, u64, String)> {
        let own = functions(Path::new(&self.path));
        match &self.build_id {
            Some(id) if own.is_empty() && id.len() > 2 => {
                let (dir, file) = id.split_at(2);
                functions(
                    &Path::new("/usr/lib/debug/.build-id").join(format!("{dir}/{file}.debug")),
                )
            }
            _ => own,
        }
    }
}

/// A program counter, with the library mapped at it and the function `nm` finds there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The recorded pc.
    pub pc: u64,
    /// The file name of its library, if the recording maps it.
    pub library: Option<String>,
    /// The ELF virtual address of `pc` in that library.
    pub address: u64,
    /// The function containing `address`, if the library's `.symtab` has one.
    pub function: Option<String>,
}

impl Frame {
    /// Whether the frame is in a library whose file name starts with `prefix`.
    pub fn in_library(&self, prefix: &str) -> bool {
        self.library
            .as_deref()
            .is_some_and(|l| l.starts_with(prefix))
    }

    /// Whether the frame is `function` of library `library` (a file name).
    pub fn is(&self, library: &str, function: &str) -> bool {
        self.library.as_deref() == Some(library) && self.function.as_deref() == Some(function)
    }
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.library, &self.function) {
            (Some(l), Some(func)) => write!(f, "{l}:{func}"),
            (Some(l), None) => write!(f, "{l}+{:#x}", self.address),
            (None, _) => write!(f, "{:#x}", self.pc),
        }
    }
}

/// Maps the program counters of one recording to [`Frame`]s.
#[derive(Debug, Clone)]
pub struct Symbols {
    libraries: Vec<Library>,
    /// [`Library::functions`] of every library some sample has a pc in, by path.
    functions: BTreeMap<String, Vec<(u64, u64, String)>>,
}

impl Symbols {
    /// The libraries of `reading`, and the functions of those its samples have pcs in.
    pub fn new(reading: &Reading) -> Symbols {
        let unique: BTreeSet<&String> = reading.libraries.iter().collect();
        let libraries: Vec<Library> = unique
            .into_iter()
            .filter_map(|l| Library::parse(l))
            .collect();
        let mut symbols = Symbols {
            libraries,
            functions: BTreeMap::new(),
        };
        let used: BTreeSet<&Library> = reading
            .samples
            .iter()
            .flat_map(|s| &s.pcs)
            .filter_map(|&pc| symbols.library(pc))
            .collect();
        let functions = used
            .into_iter()
            .map(|lib| (lib.path.clone(), lib.functions()))
            .collect();
        symbols.functions = functions;
        symbols
    }

    fn library(&self, pc: u64) -> Option<&Library> {
        self.libraries.iter().find(|l| l.base <= pc && pc < l.top)
    }

    /// The frame of `pc`.
    pub fn frame(&self, pc: u64) -> Frame {
        let Some(lib) = self.library(pc) else {
            return Frame {
                pc,
                library: None,
                address: pc,
                function: None,
            };
        };
        let address = pc - lib.base + lib.file_offset;
        let function = self.functions.get(&lib.path).and_then(|funcs| {
            funcs
                .iter()
                .find(|(start, end, _)| *start <= address && address < *end)
                .map(|(_, _, name)| name.clone())
        });
        Frame {
            pc,
            library: Some(lib.file_name().to_string()),
            address,
            function,
        }
    }

    /// The native frames of `sample`, leaf first.
    pub fn frames(&self, sample: &SampleView) -> Vec<Frame> {
        sample.pcs.iter().map(|&pc| self.frame(pc)).collect()
    }

    /// `sample` with its native frames resolved, for messages.
    pub fn describe(&self, sample: &SampleView) -> String {
        let frames: Vec<String> = self.frames(sample).iter().map(Frame::to_string).collect();
        format!(
            "thread={} native=[{}] native_truncated={:?} java=[{}]",
            sample.thread,
            frames.join(" <- "),
            sample.native_truncated,
            sample.java.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::golden::library_line;

    #[test]
    fn parses_library_lines_back() {
        let line = library_line("/opt/my lib/libx.so", 0x7f00, 0x8f00, None, 0x1000);
        let lib = Library::parse(&line).unwrap();
        assert_eq!(
            lib,
            Library {
                path: "/opt/my lib/libx.so".into(),
                base: 0x7f00,
                top: 0x8f00,
                file_offset: 0x1000,
                build_id: None,
            }
        );
        assert_eq!(lib.file_name(), "libx.so");
        let vdso = library_line("[vdso]", 1, 2, Some("ab12"), 0);
        let vdso = Library::parse(&vdso).unwrap();
        assert_eq!(vdso.file_name(), "[vdso]");
        assert_eq!(vdso.build_id.as_deref(), Some("ab12"));
        assert_eq!(Library::parse("libx.so 0x1-0x2"), None);
    }
}
