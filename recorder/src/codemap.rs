//! Which addresses hold native code, which hold JVM-generated code, and the loaded libraries,
//! from `/proc/self/maps`. Built off the signal handler (drain thread), published with one
//! atomic pointer swap; the handler only reads the current snapshot.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::unwind::{Code, CodeKind};

/// One executable range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    start: u64,
    end: u64,
    code: Code,
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
}

/// A snapshot of the process's code.
#[derive(Debug, Default)]
pub struct CodeMap {
    ranges: Vec<Range>,
    /// Libraries with executable code, by base address.
    pub libraries: Vec<Library>,
}

impl CodeKind for CodeMap {
    fn kind(&self, pc: u64) -> Code {
        let i = self.ranges.partition_point(|r| r.start <= pc);
        match i.checked_sub(1).and_then(|i| self.ranges.get(i)) {
            Some(r) if pc < r.end => r.code,
            _ => Code::Unknown,
        }
    }
}

impl CodeMap {
    /// Parses `/proc/<pid>/maps` text.
    pub fn parse(maps: &str) -> CodeMap {
        let mut ranges = Vec::new();
        let mut libs: BTreeMap<String, (Library, bool)> = BTreeMap::new();
        for line in maps.lines() {
            let mut fields = line.split_whitespace();
            let (Some(range), Some(perms), Some(offset), Some(_dev), Some(inode)) = (
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
            let exec = perms.as_bytes().get(2) == Some(&b'x');
            let file_backed = path.starts_with('/');
            if exec {
                let code = if file_backed || path == "[vdso]" {
                    Code::Native
                } else if path.is_empty() {
                    // Anonymous executable memory: the code heaps (JIT, interpreter, stubs).
                    Code::Java
                } else {
                    Code::Unknown
                };
                ranges.push(Range { start, end, code });
            }
            if file_backed || path == "[vdso]" {
                let entry = libs.entry(path.clone()).or_insert_with(|| {
                    (
                        Library {
                            path: path.clone(),
                            base: start,
                            top: end,
                            file_offset: offset,
                            inode,
                        },
                        false,
                    )
                });
                if start < entry.0.base {
                    entry.0.base = start;
                    entry.0.file_offset = offset;
                }
                entry.0.top = entry.0.top.max(end);
                entry.1 |= exec;
            }
        }
        ranges.sort_by_key(|r| r.start);
        let mut libraries: Vec<Library> = libs
            .into_values()
            .filter(|(_, exec)| *exec)
            .map(|(l, _)| l)
            .collect();
        libraries.sort_by_key(|l| l.base);
        CodeMap { ranges, libraries }
    }

    /// Reads the current process's map.
    pub fn read_self() -> std::io::Result<CodeMap> {
        Ok(CodeMap::parse(&std::fs::read_to_string("/proc/self/maps")?))
    }
}

static CURRENT: AtomicPtr<CodeMap> = AtomicPtr::new(std::ptr::null_mut());

/// Publishes a new snapshot. The previous one is intentionally leaked: a signal handler may still
/// be reading it, and snapshots are only replaced when libraries are loaded or unloaded.
pub fn publish(map: CodeMap) -> &'static CodeMap {
    let map: &'static CodeMap = Box::leak(Box::new(map));
    CURRENT.store(map as *const CodeMap as *mut CodeMap, Ordering::Release);
    map
}

/// The current snapshot, if one was published (async-signal-safe: one atomic load).
pub fn current() -> Option<&'static CodeMap> {
    let p = CURRENT.load(Ordering::Acquire);
    // SAFETY: a non-null pointer was created by `publish` from a leaked Box, so it is valid and
    // immutable for the rest of the process.
    unsafe { p.as_ref() }
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
        let m = CodeMap::parse(MAPS);
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
}
