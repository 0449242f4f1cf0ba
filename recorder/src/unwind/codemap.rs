//! Which addresses hold native code, which hold JVM-generated code, the loaded libraries and
//! their unwind tables, from `/proc/self/maps`. Built off the signal handler (drain thread),
//! published with one atomic pointer swap; the handler only reads the current snapshot
//! ([`with_current`]). A replaced snapshot is freed once no handler can still be reading it
//! ([`reclaim`]).

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::unwind::rule::{Rule, Table};
use crate::unwind::types::{Code, CodeKind};

/// One executable range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    start: u64,
    end: u64,
    code: Code,
    /// Index into [`CodeMap::libraries`] of the file (or vDSO) mapped here.
    library: Option<usize>,
}

/// A loaded ELF object (or the vDSO), as a `jdk.NativeLibrary` event describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    /// Path as mapped (`[vdso]` for the vDSO).
    pub path: String,
    /// Lowest mapped address.
    pub base: u64,
    /// End of the highest mapping.
    pub top: u64,
    /// File offset mapped at `base`.
    pub file_offset: u64,
    /// Inode, to tell a replaced file from the one mapped.
    pub inode: u64,
    /// The device of the file (`makedev(major, minor)` of the map's `MM:mm`; 0 when unknown).
    pub dev: u64,
}

/// A snapshot of the process's code.
#[derive(Debug, Default)]
pub struct CodeMap {
    ranges: Vec<Range>,
    /// Libraries with executable code, by base address.
    pub libraries: Vec<Library>,
    /// The unwind table of each library (same order), where one was built.
    tables: Vec<Option<Arc<Table>>>,
}

impl CodeMap {
    fn range(&self, pc: u64) -> Option<&Range> {
        let i = self.ranges.partition_point(|r| r.start <= pc);
        i.checked_sub(1)
            .and_then(|i| self.ranges.get(i))
            .filter(|r| pc < r.end)
    }

    /// The rule at `pc`, which lies in `range`.
    #[inline]
    fn rule_in(&self, range: &Range, pc: u64) -> Rule {
        range
            .library
            .and_then(|i| self.tables.get(i))
            .and_then(|t| t.as_deref())
            .map_or(Rule::NONE, |t| t.rule(pc))
    }

    /// A summary of the ranges and libraries (FNV-1a of their bounds): two maps with the same
    /// fingerprint hold, all but certainly, the same code.
    pub fn fingerprint(&self) -> u64 {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        let bounds = self.ranges.iter().map(|r| (r.start, r.end));
        for (a, b) in bounds.chain(self.libraries.iter().map(|l| (l.base, l.inode))) {
            for v in [a, b] {
                hash = (hash ^ v).wrapping_mul(0x0100_0000_01b3);
            }
        }
        hash
    }

    /// Gives each library its unwind table (`tables` in the order of [`CodeMap::libraries`]).
    pub fn set_tables(&mut self, tables: Vec<Option<Arc<Table>>>) {
        self.tables = tables;
    }
}

impl CodeKind for CodeMap {
    #[inline]
    fn kind(&self, pc: u64) -> Code {
        self.range(pc).map_or(Code::Unknown, |r| r.code)
    }

    #[inline]
    fn rule(&self, pc: u64) -> Rule {
        self.range(pc).map_or(Rule::NONE, |r| self.rule_in(r, pc))
    }

    #[inline]
    fn classify(&self, pc: u64, rule_pc: Option<u64>) -> (Code, Rule) {
        let Some(range) = self.range(pc) else {
            return (Code::Unknown, Rule::NONE);
        };
        let rule = match rule_pc {
            Some(at) if range.code == Code::Native && range.start <= at && at < range.end => {
                self.rule_in(range, at)
            }
            Some(at) if range.code == Code::Native => self.rule(at),
            _ => Rule::NONE,
        };
        (range.code, rule)
    }
}

/// A map line's device (`fd:01`, hexadecimal major and minor) as `st_dev` gives it.
fn device(field: &str) -> u64 {
    let parsed = field.split_once(':').and_then(|(major, minor)| {
        Some((
            u32::from_str_radix(major, 16).ok()?,
            u32::from_str_radix(minor, 16).ok()?,
        ))
    });
    parsed.map_or(0, |(major, minor)| libc::makedev(major, minor))
}

impl CodeMap {
    /// Parses `/proc/<pid>/maps` text. `code_cache`, HotSpot's reserved code cache range if
    /// known, is JVM-generated code as a whole, whatever is mapped there (committed or not, on
    /// large pages or not); the mappings inside it are neither ranges of their own nor
    /// libraries.
    pub fn parse(maps: &str, code_cache: Option<(u64, u64)>) -> CodeMap {
        let in_code_cache = |start: u64, end: u64| {
            code_cache.is_some_and(|(low, high)| low <= start && end <= high)
        };
        // Executable ranges, each with the index of its run of file mappings.
        let mut ranges: Vec<(Range, Option<usize>)> = Vec::new();
        // Runs of mappings of one file: a library is the run that holds its code. A mapping
        // at file offset 0 starts a run (a library's lowest mapping, or the file mapped again
        // to be read: the agent's own table builder, a JDK reading an ELF file), and so does
        // one of another file or at a lower offset; anonymous mappings between (a library's
        // .bss, alignment gaps) keep the run open.
        // (library, has code, last offset, last end)
        let mut runs: Vec<(Library, bool, u64, u64)> = Vec::new();
        for line in maps.lines() {
            let mut fields = line.split_whitespace();
            let (Some(range), Some(perms), Some(offset), Some(dev), Some(inode)) = (
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
            ) else {
                continue;
            };
            let path = fields.collect::<Vec<_>>().join(" ");
            let Some((start, end)) = range.split_once('-') else {
                continue;
            };
            let (Ok(start), Ok(end), Ok(offset), Ok(inode)) = (
                u64::from_str_radix(start, 16),
                u64::from_str_radix(end, 16),
                u64::from_str_radix(offset, 16),
                inode.parse::<u64>(),
            ) else {
                continue;
            };
            if in_code_cache(start, end) {
                continue;
            }
            let dev = device(dev);
            let exec = perms.as_bytes().get(2) == Some(&b'x');
            let file_backed = path.starts_with('/') || path == "[vdso]";
            if file_backed {
                // lld puts a library's first code in the file page of its headers: its code
                // (and what follows) is mapped at offset 0 again, right after the first mapping.
                let extends = runs
                    .last()
                    .is_some_and(|(lib, has_code, last_offset, last_end)| {
                        let same = lib.path == path && lib.inode == inode;
                        let next_part = offset != 0 && offset >= *last_offset;
                        let again_at_0 = offset == 0 && start == *last_end && (exec || *has_code);
                        same && (next_part || again_at_0)
                    });
                if !extends {
                    let lib = Library {
                        path: path.clone(),
                        base: start,
                        top: end,
                        file_offset: offset,
                        inode,
                        dev,
                    };
                    runs.push((lib, false, offset, end));
                }
                if let Some((lib, has_code, last_offset, last_end)) = runs.last_mut() {
                    lib.top = lib.top.max(end);
                    *has_code |= exec;
                    *last_offset = offset;
                    *last_end = end;
                }
            }
            if exec {
                let code = if file_backed {
                    Code::Native
                } else if path.is_empty() {
                    // Anonymous executable memory: the code heaps (JIT, interpreter, stubs).
                    Code::Java
                } else {
                    Code::Unknown
                };
                let range = Range {
                    start,
                    end,
                    code,
                    library: None,
                };
                let run = file_backed.then(|| runs.len() - 1);
                ranges.push((range, run));
            }
        }
        // The runs with code are the libraries, by base address.
        let mut order: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].1).collect();
        order.sort_by_key(|&i| runs[i].0.base);
        let library_of_run = |run: usize| order.iter().position(|&i| i == run);
        let mut ranges: Vec<Range> = ranges
            .into_iter()
            .map(|(range, run)| Range {
                library: run.and_then(library_of_run),
                ..range
            })
            .collect();
        let libraries: Vec<Library> = order.iter().map(|&i| runs[i].0.clone()).collect();
        if let Some((start, end)) = code_cache {
            ranges.retain(|r| r.end <= start || end <= r.start);
            ranges.push(Range {
                start,
                end,
                code: Code::Java,
                library: None,
            });
        }
        ranges.sort_by_key(|r| r.start);
        CodeMap {
            ranges,
            libraries,
            tables: Vec::new(),
        }
    }

    /// Reads the current process's map.
    pub fn read_self() -> std::io::Result<CodeMap> {
        Ok(CodeMap::parse(
            &std::fs::read_to_string("/proc/self/maps")?,
            crate::unwind::jvm_code::bounds(),
        ))
    }
}

static CURRENT: AtomicPtr<CodeMap> = AtomicPtr::new(std::ptr::null_mut());
/// Signal handlers inside [`with_current`] right now.
static READERS: AtomicUsize = AtomicUsize::new(0);
/// Snapshots replaced but maybe still read by a handler (as raw `Box` pointers).
static RETIRED: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Snapshots published and not yet freed (the current one and the retired ones).
static ALIVE: AtomicUsize = AtomicUsize::new(0);

/// What the code maps and unwind tables retain now.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Retained {
    /// Code maps not freed: the current one and those retired but not yet reclaimed.
    pub code_maps: usize,
    /// Of those, the retired ones (waiting until no handler can read them).
    pub retired_maps: usize,
    /// Unwind tables alive, wherever held (cache, current or retired maps).
    pub tables: usize,
    /// Their heap bytes.
    pub table_bytes: usize,
}

/// What the code maps and unwind tables retain now (off the handler: takes a lock).
pub fn retained() -> Retained {
    let (tables, table_bytes) = crate::unwind::rule::tables_alive();
    Retained {
        code_maps: ALIVE.load(Ordering::SeqCst),
        retired_maps: RETIRED.lock().map_or(0, |r| r.len()),
        tables,
        table_bytes,
    }
}

/// Publishes a new snapshot; the previous one is retired and freed by [`reclaim`] once no
/// handler can be reading it.
pub fn publish(map: CodeMap) {
    let new = Box::into_raw(Box::new(map));
    ALIVE.fetch_add(1, Ordering::SeqCst);
    let old = CURRENT.swap(new, Ordering::SeqCst);
    if !old.is_null() {
        if let Ok(mut retired) = RETIRED.lock() {
            retired.push(old as usize);
        }
    }
}

/// Frees the retired snapshots if no handler is inside [`with_current`] now. A handler that
/// got a retired snapshot incremented `READERS` before loading the pointer, and the pointer
/// was swapped out before this check (both `SeqCst`), so seeing zero readers here proves
/// that every such handler has finished. Called by the writer thread; returns how many it
/// freed.
pub fn reclaim() -> usize {
    let Ok(mut retired) = RETIRED.lock() else {
        return 0;
    };
    if retired.is_empty() || READERS.load(Ordering::SeqCst) != 0 {
        return 0;
    }
    let freed = retired.len();
    for p in retired.drain(..) {
        // SAFETY: `p` came from `Box::into_raw` in `publish`, was swapped out of CURRENT (no
        // new reader can get it) and no reader that loaded it is still running (see above);
        // it is freed once, as it leaves the list.
        drop(unsafe { Box::from_raw(p as *mut CodeMap) });
    }
    ALIVE.fetch_sub(freed, Ordering::SeqCst);
    freed
}

/// Runs `f` on the current snapshot (`None` before the first [`publish`]). Async-signal-safe:
/// two atomic counter updates and one atomic load.
#[inline]
pub fn with_current<T>(f: impl FnOnce(Option<&CodeMap>) -> T) -> T {
    struct Reader;
    impl Drop for Reader {
        fn drop(&mut self) {
            READERS.fetch_sub(1, Ordering::SeqCst);
        }
    }
    READERS.fetch_add(1, Ordering::SeqCst);
    let _reader = Reader;
    let p = CURRENT.load(Ordering::SeqCst);
    // SAFETY: a non-null pointer was made by `publish` from a Box, and `reclaim` frees it only
    // after it was replaced and no reader (like this one, counted in READERS until `_reader`
    // drops, after `f` returns) holds it.
    f(unsafe { p.as_ref() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
7f0000000000-7f0000001000 r--p 00000000 fe:01 11 /usr/lib/libdemo.so
7f0000001000-7f0000003000 r-xp 00001000 fe:01 11 /usr/lib/libdemo.so
7f0000003000-7f0000004000 rw-p 00003000 fe:01 11 /usr/lib/libdemo.so
7f1000000000-7f1000100000 rwxp 00000000 00:00 0 
7f2000000000-7f2000001000 r--p 00000000 fe:01 12 /usr/lib/data.bin
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
7ffe00000000-7ffe00021000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn classifies_code_and_groups_libraries() {
        let m = CodeMap::parse(MAPS, None);
        assert_eq!(m.kind(0x7f0000001800), Code::Native);
        assert_eq!(m.kind(0x7f0000000800), Code::Unknown, "not executable");
        assert_eq!(m.kind(0x7f1000000010), Code::Java);
        assert_eq!(m.kind(0x7ffd00000010), Code::Native);
        assert_eq!(m.kind(0x10), Code::Unknown);
        assert_eq!(m.libraries.len(), 2, "{:?}", m.libraries);
        let demo = &m.libraries[0];
        assert_eq!(
            (demo.base, demo.top, demo.file_offset),
            (0x7f0000000000, 0x7f0000004000, 0)
        );
        assert_eq!(m.libraries[1].path, "[vdso]");
    }

    /// A library's file also mapped whole to be read (the table builder, a JDK reading an ELF
    /// file), right below the library and elsewhere: the library is the run with its code.
    #[test]
    fn a_file_mapped_again_to_be_read_is_not_the_library() {
        let maps = "\
7effff000000-7effff004000 r--p 00000000 fe:01 11 /usr/lib/libdemo.so
7f0000000000-7f0000001000 r--p 00000000 fe:01 11 /usr/lib/libdemo.so
7f0000001000-7f0000002000 r-xp 00001000 fe:01 11 /usr/lib/libdemo.so
7f0000002000-7f0000003000 r--p 00002000 fe:01 11 /usr/lib/libdemo.so
7f0000003000-7f0000004000 rw-p 00002000 fe:01 11 /usr/lib/libdemo.so
7f0000004000-7f0000005000 rw-p 00000000 00:00 0
7f0000005000-7f0000009000 r--p 00000000 fe:01 11 /usr/lib/libdemo.so
";
        let m = CodeMap::parse(maps, None);
        assert_eq!(m.libraries.len(), 1, "{:?}", m.libraries);
        let demo = &m.libraries[0];
        assert_eq!((demo.base, demo.top), (0x7f0000000000, 0x7f0000004000));
        assert_eq!(m.kind(0x7f0000001800), Code::Native);
        assert_eq!(m.ranges[0].library, Some(0));
    }

    /// lld's layout (clang, rustc 1.90+): the code shares the file page of the headers, so
    /// every mapping of the library is at offset 0; the library starts at its first one.
    #[test]
    fn a_library_linked_by_lld_is_one_library() {
        let maps = "\
7f0000000000-7f0000001000 r--p 00000000 fe:01 11 /usr/lib/liblld.so
7f0000001000-7f0000002000 r-xp 00000000 fe:01 11 /usr/lib/liblld.so
7f0000002000-7f0000003000 r--p 00000000 fe:01 11 /usr/lib/liblld.so
7f0000003000-7f0000004000 rw-p 00000000 fe:01 11 /usr/lib/liblld.so
";
        let m = CodeMap::parse(maps, None);
        assert_eq!(m.libraries.len(), 1, "{:?}", m.libraries);
        let lib = &m.libraries[0];
        assert_eq!(
            (lib.base, lib.top, lib.file_offset),
            (0x7f0000000000, 0x7f0000004000, 0)
        );
        assert_eq!(m.ranges[0].library, Some(0));
    }

    #[test]
    fn the_code_cache_is_java_code_however_it_is_mapped() {
        // A code cache on large pages: hugetlbfs mappings look like a (deleted) file.
        let maps = "\
7f0000001000-7f0000003000 r-xp 00001000 fe:01 11 /usr/lib/libdemo.so
7f3000000000-7f3000400000 rwxp 00000000 00:0f 4242 /anon_hugepage (deleted)
7f3000400000-7f3000800000 ---p 00000000 00:00 0
";
        let bounds = Some((0x7f3000000000, 0x7f3001000000));
        let m = CodeMap::parse(maps, bounds);
        assert_eq!(m.kind(0x7f3000000010), Code::Java, "committed");
        assert_eq!(
            m.kind(0x7f3000900000),
            Code::Java,
            "reserved, committed later"
        );
        assert_eq!(m.kind(0x7f3001000000), Code::Unknown, "past the code cache");
        assert_eq!(m.kind(0x7f0000001800), Code::Native);
        assert!(
            m.libraries.iter().all(|l| !l.path.contains("hugepage")),
            "{:?}",
            m.libraries
        );
        let without = CodeMap::parse(maps, None);
        assert_eq!(
            without.kind(0x7f3000000010),
            Code::Native,
            "by its mappings alone, the large-page code cache looks like a library"
        );
    }
}
