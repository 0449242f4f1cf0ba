//! Resolving native PCs against the libraries a recording lists: address translation, the
//! return-address rule, symbols, DWARF inline chains, and a cache so that each distinct
//! (library, address) is resolved once.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;

use crate::elf::debug_file;
use crate::elf::debuginfod::Debuginfod;
use crate::elf::dwarf::Dwarf;
use crate::elf::image::{hex, ElfImage};
use crate::elf::minidebuginfo::MiniDebugInfo;
use crate::elf::symbols::SymbolTable;

/// A library as the recording lists it (`jdk.NativeLibrary`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LibraryRef {
    /// Path of the mapped file.
    pub path: String,
    /// Lowest mapped address.
    pub base: u64,
    /// End of the highest mapped address.
    pub top: u64,
    /// GNU build-id in hex, if recorded.
    pub build_id: Option<String>,
    /// File offset mapped at `base` (0 when the recording does not say: the JDK's own events
    /// start at the first mapping, which maps offset 0).
    pub file_offset: u64,
}

/// Where to look for files.
#[derive(Debug, Clone)]
pub struct Options {
    /// Roots of separate debug files (`/usr/lib/debug`).
    pub debug_dirs: Vec<PathBuf>,
    /// Directories searched, by file name, before a library's recorded path (for recordings
    /// made on another machine).
    pub search_dirs: Vec<PathBuf>,
    /// Roots the recorded paths are looked for under, before the recorded path itself: the
    /// root filesystem of the container the JVM ran in (`/proc/PID/root` while it lives, or a
    /// copy of its libraries). With roots given, a file at the recorded path itself is used
    /// only when the recording has a build-id that matches it: a host file of the same name is
    /// never taken for the container's on trust.
    pub sysroots: Vec<PathBuf>,
    /// Directories of libraries kept while the JVM ran (the agent's `FILE.libs`, see
    /// [`crate::driver::kept_library_roots`]): a library's recorded path is looked for under
    /// them first. They are the files that were mapped, taken before they could vanish; unlike
    /// [`Options::sysroots`], they leave the recorded paths themselves usable.
    pub kept_roots: Vec<PathBuf>,
    /// Read DWARF for inline chains and lines.
    pub dwarf: bool,
    /// debuginfod servers asked for the debug file of a library without DWARF when none was
    /// found on disk (by build-id under `debug_dirs`, then by `.gnu_debuglink`). `None` (the
    /// default): no request is made; [`Debuginfod::from_env`] gives what `DEBUGINFOD_URLS`
    /// and the other variables of elfutils' client say, as `jfr-symbolize` uses it.
    pub debuginfod: Option<Debuginfod>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            search_dirs: Vec::new(),
            sysroots: Vec::new(),
            kept_roots: Vec::new(),
            dwarf: true,
            debuginfod: None,
        }
    }
}

/// One frame of a resolved PC. A PC gives one frame per inlined function, innermost first,
/// then the function it was inlined into.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// What to show: the function; where no symbol holds the PC, the nearest symbol below the
    /// function's start with the offset from it (`deflateEnd+0x3f0`, not `named`), or
    /// `lib+0xADDR` when there is none (a function start from `.eh_frame`, else the PC's own
    /// ELF address); `[unknown]` outside every library.
    pub name: Arc<str>,
    /// Whether `name` is a real function name.
    pub named: bool,
    /// Source file, from DWARF.
    pub file: Option<Arc<str>>,
    /// Source line, from DWARF.
    pub line: Option<u32>,
    /// Whether this function was inlined into the next frame.
    pub inlined: bool,
}

/// A resolved PC.
#[derive(Debug, Clone)]
pub struct Location {
    /// File name of the library holding the PC.
    pub library: Option<Arc<str>>,
    /// The PC's ELF virtual address in that library, when known.
    pub address: Option<u64>,
    /// Frames, innermost first; never empty.
    pub frames: Arc<[Frame]>,
}

/// Why a library's frames could not be named.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The library path.
    pub library: String,
    /// What went wrong.
    pub reason: String,
}

/// Where a library was read from ([`Symbolizer::sources`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The library as the recording names it.
    pub library: String,
    /// The file read for it.
    pub read: PathBuf,
    /// Whether that file was rebuilt from the JVM's memory (dynamic symbols and call-frame
    /// information only).
    pub rebuilt: bool,
}

impl Source {
    /// One line saying where the library came from.
    pub fn describe(&self) -> String {
        let how = if self.rebuilt {
            " (rebuilt from the JVM's memory after its file was deleted: exported symbols only)"
        } else {
            ""
        };
        format!("{}: read from {}{how}", self.library, self.read.display())
    }
}

struct Loaded {
    short: Arc<str>,
    /// Gives segments and `.eh_frame`; `None` if the library itself was not usable.
    file: Option<ElfImage>,
    debug: Option<ElfImage>,
    /// The library's `.dynsym` merged with its MiniDebugInfo, read only when neither the
    /// library nor a debug file has a `.symtab`.
    mini: Option<MiniDebugInfo>,
    dwarf: OnceLock<Option<Dwarf>>,
}

impl Loaded {
    fn segments_source(&self) -> Option<&ElfImage> {
        self.file.as_ref().or(self.debug.as_ref())
    }

    fn symbols(&self) -> Option<(&SymbolTable, &[u8])> {
        if let Some(mini) = &self.mini {
            return Some(mini.symbols());
        }
        let from = match (&self.file, &self.debug) {
            (Some(f), Some(d)) if !f.has_symtab && d.has_symtab => d,
            (Some(f), _) => f,
            (None, Some(d)) => d,
            (None, None) => return None,
        };
        Some((from.symbols(), from.bytes()))
    }

    fn dwarf(&self, enabled: bool) -> Option<&Dwarf> {
        if !enabled {
            return None;
        }
        self.dwarf
            .get_or_init(|| {
                let image = match (&self.debug, &self.file) {
                    (Some(d), _) if d.has_dwarf => d,
                    (_, Some(f)) if f.has_dwarf => f,
                    _ => return None,
                };
                Dwarf::load(image)
            })
            .as_ref()
    }
}

/// Counters of what the resolver did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Calls to [`Symbolizer::resolve`].
    pub lookups: u64,
    /// Distinct (library, address) pairs resolved.
    pub distinct: u64,
    /// Distinct addresses that got a function name.
    pub named: u64,
}

/// Resolves PCs; keeps every file it opened and every answer it gave.
pub struct Symbolizer {
    options: Options,
    loaded: Vec<Loaded>,
    by_identity: FxHashMap<(String, Option<String>), usize>,
    /// The library of the previous lookup: consecutive PCs are mostly in the same one.
    last: Option<(LibraryRef, usize, Option<u64>)>,
    answers: FxHashMap<(usize, u64), Arc<[Frame]>>,
    names: FxHashMap<(usize, u64), Arc<str>>,
    problems: Vec<Problem>,
    stats: Stats,
}

impl Symbolizer {
    /// A resolver with `options`.
    pub fn new(options: Options) -> Symbolizer {
        Symbolizer {
            options,
            loaded: Vec::new(),
            by_identity: FxHashMap::default(),
            last: None,
            answers: FxHashMap::default(),
            names: FxHashMap::default(),
            problems: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Libraries whose frames could not all be named, once each.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The libraries read from elsewhere than their recorded path (a kept copy, a root, a
    /// search directory), sorted: each as it was recorded, with the file read.
    pub fn sources(&self) -> Vec<Source> {
        let mut sources: Vec<Source> = self
            .by_identity
            .iter()
            .filter_map(|((path, _), &id)| {
                let file = self.loaded.get(id)?.file.as_ref()?;
                let recorded = path.strip_suffix(" (deleted)").unwrap_or(path);
                (file.path != Path::new(recorded)).then(|| Source {
                    library: path.clone(),
                    read: file.path.clone(),
                    rebuilt: file.rebuilt,
                })
            })
            .collect();
        sources.sort_by(|a, b| (&a.library, &a.read).cmp(&(&b.library, &b.read)));
        sources
    }

    /// What the resolver did so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Resolves `pc`, which lies in `library` (or in none). Every frame but the leaf holds a
    /// return address, which is looked up at `pc - 1` so that a call at the end of a function
    /// or before a different inlined call site is attributed to the caller's right line.
    pub fn resolve(&mut self, library: Option<&LibraryRef>, pc: u64, leaf: bool) -> Location {
        self.stats.lookups += 1;
        let Some(library) = library else {
            return Location {
                library: None,
                address: None,
                frames: Arc::from([unknown_frame("[unknown]")]),
            };
        };
        let (id, bias) = match &self.last {
            Some((last, id, bias)) if last == library => (*id, *bias),
            _ => {
                let id = self.load(library);
                let bias = self.loaded[id].segments_source().and_then(|image| {
                    let first = image.address_of_file_offset(library.file_offset)?;
                    Some(library.base.wrapping_sub(first))
                });
                self.last = Some((library.clone(), id, bias));
                (id, bias)
            }
        };
        let short = self.loaded[id].short.clone();
        let address = bias.map(|bias| pc.wrapping_sub(bias));
        let Some(address) = address else {
            // No ELF to translate with: the offset into the mapping is all that is known.
            let offset = pc
                .wrapping_sub(library.base)
                .wrapping_add(library.file_offset);
            return Location {
                library: Some(short.clone()),
                address: None,
                frames: Arc::from([unknown_frame(&format!("{short}+{offset:#x}"))]),
            };
        };
        let probe = if leaf {
            address
        } else {
            address.saturating_sub(1)
        };
        let frames = match self.answers.get(&(id, probe)) {
            Some(frames) => frames.clone(),
            None => {
                let frames = self.lookup(id, probe);
                self.stats.distinct += 1;
                if frames.last().is_some_and(|f| f.named) {
                    self.stats.named += 1;
                }
                self.answers.insert((id, probe), frames.clone());
                frames
            }
        };
        Location {
            library: Some(short),
            address: Some(address),
            frames,
        }
    }

    fn lookup(&mut self, id: usize, probe: u64) -> Arc<[Frame]> {
        let dwarf_enabled = self.options.dwarf;
        let loaded = &self.loaded[id];
        let symbol = loaded.symbols().and_then(|(table, bytes)| {
            let (start, raw) = table.lookup(probe, bytes)?;
            Some((start, raw))
        });
        let outer_name: Option<Arc<str>> = match symbol {
            Some((start, raw)) => Some(match self.names.get(&(id, start)) {
                Some(name) => name.clone(),
                None => {
                    let raw = String::from_utf8_lossy(raw);
                    let name: Arc<str> = Arc::from(addr2line::demangle_auto(raw, None).as_ref());
                    self.names.insert((id, start), name.clone());
                    name
                }
            }),
            None => None,
        };
        let loaded = &self.loaded[id];
        let dwarf_frames = loaded
            .dwarf(dwarf_enabled)
            .map(|d| d.frames(probe))
            .unwrap_or_default();
        let fallback: Arc<str> = match &outer_name {
            Some(name) => name.clone(),
            None => {
                let start = loaded
                    .file
                    .as_ref()
                    .and_then(|f| f.function_starts().containing(probe))
                    .unwrap_or(probe);
                // No symbol holds it (a static function of a library with only exported
                // symbols): the nearest symbol below, with the offset of the function from it
                // (`deflateEnd+0x3f0`), says where it is; else the library and the address.
                let nearest = loaded.symbols().and_then(|(table, bytes)| {
                    let (at, raw) = table.nearest_below(start, bytes)?;
                    let raw = String::from_utf8_lossy(raw);
                    Some(format!(
                        "{}+{:#x}",
                        addr2line::demangle_auto(raw, None),
                        start - at
                    ))
                });
                Arc::from(
                    nearest
                        .unwrap_or_else(|| format!("{}+{start:#x}", loaded.short))
                        .as_str(),
                )
            }
        };
        if dwarf_frames.is_empty() {
            return Arc::from([Frame {
                name: fallback,
                named: outer_name.is_some(),
                file: None,
                line: None,
                inlined: false,
            }]);
        }
        let last = dwarf_frames.len() - 1;
        dwarf_frames
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                // The outermost frame is the real function: the symbol table names it when
                // DWARF does not.
                let (name, named) = match f.function {
                    Some(n) => (Arc::from(n.as_str()), true),
                    None if i == last => (fallback.clone(), outer_name.is_some()),
                    None => (Arc::from("[inlined]"), false),
                };
                Frame {
                    name,
                    named,
                    file: f.file.map(|s| Arc::from(s.as_str())),
                    line: f.line,
                    inlined: i != last,
                }
            })
            .collect()
    }

    fn load(&mut self, library: &LibraryRef) -> usize {
        let identity = (library.path.clone(), library.build_id.clone());
        if let Some(&id) = self.by_identity.get(&identity) {
            return id;
        }
        let (loaded, problems) = open_library(library, &self.options);
        for reason in problems {
            self.problems.push(Problem {
                library: library.path.clone(),
                reason,
            });
        }
        self.loaded.push(loaded);
        let id = self.loaded.len() - 1;
        self.by_identity.insert(identity, id);
        id
    }
}

fn unknown_frame(name: &str) -> Frame {
    Frame {
        name: Arc::from(name),
        named: false,
        file: None,
        line: None,
        inlined: false,
    }
}

/// The image of a region the kernel maps (`[vdso]`): this process's vDSO when its build-id is
/// the recorded one; otherwise why its frames keep their offsets.
fn kernel_image(path: &str, expected: Option<&[u8]>) -> Result<ElfImage, String> {
    const KEEP: &str = "mapped by the kernel, not a file: its frames keep their offsets";
    if path != "[vdso]" {
        return Err(KEEP.into());
    }
    let Some(expected) = expected else {
        return Err(format!("{KEEP} (no build-id recorded)"));
    };
    let own = crate::elf::vdso::own().map_err(|e| format!("{KEEP} ({e})"))?;
    match own.build_id.as_deref() {
        Some(id) if id == expected => Ok(own),
        other => Err(format!(
            "{KEEP} (recorded on another kernel: build-id {}, this machine's vDSO {})",
            hex(expected),
            other.map_or("none".into(), hex)
        )),
    }
}

/// Opens a library and its debug file; the second value says what is missing or damaged, one
/// line each.
fn open_library(library: &LibraryRef, options: &Options) -> (Loaded, Vec<String>) {
    // The kernel's mark on a file deleted after it was mapped: the file's path is before it.
    let recorded = Path::new(
        library
            .path
            .strip_suffix(" (deleted)")
            .unwrap_or(&library.path),
    );
    let short: Arc<str> = Arc::from(
        recorded
            .file_name()
            .map_or(library.path.clone(), |n| n.to_string_lossy().into_owned())
            .as_str(),
    );
    let expected: Option<Vec<u8>> = library.build_id.as_deref().and_then(unhex);
    if library.path.starts_with('[') {
        // [vdso], [vsyscall]: mapped by the kernel, no file to read; the vDSO of this process
        // when it is the recorded one.
        let (file, problem) = match kernel_image(&library.path, expected.as_deref()) {
            Ok(image) => (Some(image), None),
            Err(e) => (None, Some(e)),
        };
        let loaded = Loaded {
            short,
            file,
            debug: None,
            mini: None,
            dwarf: OnceLock::new(),
        };
        return (loaded, problem.into_iter().collect());
    }
    let mut candidates: Vec<PathBuf> = options
        .search_dirs
        .iter()
        .map(|d| d.join(&*short))
        .collect();
    let relative = recorded.strip_prefix("/").unwrap_or(recorded);
    candidates.extend(options.kept_roots.iter().map(|root| root.join(relative)));
    candidates.extend(options.sysroots.iter().map(|root| root.join(relative)));
    // A file at the path of a library deleted since it was mapped is another file: only
    // taken when the recording's build-id says it is the same.
    let deleted = library.path.ends_with(" (deleted)");
    if (options.sysroots.is_empty() && !deleted) || expected.is_some() {
        candidates.push(recorded.to_path_buf());
    }
    let mut file = None;
    let mut open_error = None;
    let mut mismatch = None;
    for path in &candidates {
        match ElfImage::open(path) {
            Ok(image) => match (&expected, &image.build_id) {
                (Some(want), Some(got)) if want != got => {
                    mismatch = Some(format!(
                        "{} has build-id {}, the recording says {}",
                        path.display(),
                        hex(got),
                        hex(want)
                    ));
                }
                _ => {
                    file = Some(image);
                    break;
                }
            },
            Err(e) => {
                open_error.get_or_insert(format!("cannot read {}: {e}", path.display()));
            }
        }
    }
    let own_id = expected
        .clone()
        .or_else(|| file.as_ref().and_then(|f| f.build_id.clone()));
    let found = debug_file::find(
        own_id.as_deref(),
        file.as_ref(),
        file.as_ref().map_or(recorded, |f| f.path.as_path()),
        &options.debug_dirs,
    );
    let mut problems = Vec::new();
    let mut debug = found.map(|(image, _)| image);
    // Not on disk: debuginfod, for a library whose DWARF is not in the file itself.
    if let (None, Some(server), Some(id)) = (&debug, &options.debuginfod, &own_id) {
        if !file.as_ref().is_some_and(|f| f.has_dwarf) {
            match server.find(id) {
                Ok(image) => debug = Some(image),
                Err(e) => problems.push(e),
            }
        }
    }
    // Without the library (gone, or another build), a debug file found by the recorded
    // build-id still has its segments, symbols and DWARF: nothing is missing then.
    if file.is_none() && debug.is_none() {
        let missing = mismatch
            .or(open_error)
            .unwrap_or_else(|| "not found".to_string());
        problems.insert(0, missing);
    }
    // MiniDebugInfo names static functions where nothing better does.
    let mut mini = None;
    if let Some(f) = file.as_ref().filter(|f| !f.has_symtab) {
        if !debug.as_ref().is_some_and(|d| d.has_symtab) {
            match MiniDebugInfo::load(f) {
                Ok(m) => mini = m,
                Err(e) => problems.push(e),
            }
        }
    }
    (
        Loaded {
            short,
            file,
            debug,
            mini,
            dwarf: OnceLock::new(),
        },
        problems,
    )
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || s.is_empty() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}
