//! The `jdk.NativeLibrary` events: which libraries each chunk describes, and when.
//!
//! The symbolizer resolves a sample's PCs against the libraries of the sample's own chunk, and
//! chunks are read independently, so every chunk must describe each library its samples reach.
//! Describing every mapped library in every chunk cost about 1.7 KB a chunk (a JVM maps 16 or
//! more, at about 100 bytes each), most of them never sampled. So:
//! - the first chunk describes every library mapped when the recording starts (JMC's Native
//!   Libraries page shows the process's libraries);
//! - a library mapped later is described when it appears (what was loaded, and when);
//! - at its end, every chunk describes the libraries its native stacks reach that it does not
//!   describe yet, including libraries unmapped during the chunk.

use std::collections::{HashMap, HashSet};

use jfr_writer::{ChunkOutput, NativeLibrary, Recording};

use crate::unwind::codemap::Library;
use crate::unwind::{tables, watcher};

/// A library as one mapping: (path, base, top).
type Key = (String, u64, u64);

fn key(lib: &Library) -> Key {
    (lib.path.clone(), lib.base, lib.top)
}

/// The libraries of the current map and of the current chunk.
#[derive(Default)]
pub struct LibraryEvents {
    /// The libraries of the code map published last, and its version.
    current: Vec<Library>,
    version: u64,
    /// Every library mapped at some time during the chunk, with the tick it was first seen in
    /// the chunk (the chunk's start, or when it appeared).
    chunk: Vec<(Library, i64)>,
    /// Described in the current chunk.
    written: HashSet<Key>,
    /// By (path, inode), for the libraries of the current map.
    build_ids: HashMap<(String, u64), Option<String>>,
}

impl LibraryEvents {
    /// Starts with the current code map.
    pub fn new() -> LibraryEvents {
        let (version, current) = watcher::libraries_since(0).unwrap_or_default();
        LibraryEvents {
            current,
            version,
            ..LibraryEvents::default()
        }
    }

    /// Build ids cached.
    pub fn build_ids(&self) -> usize {
        self.build_ids.len()
    }

    /// A new chunk starts at `now_ticks`: it may reach any library mapped now. The first chunk
    /// describes all of them.
    pub fn start_chunk<W: ChunkOutput>(
        &mut self,
        rec: &mut Recording<W>,
        now_ticks: i64,
        first: bool,
    ) {
        self.written.clear();
        self.chunk = self
            .current
            .iter()
            .map(|l| (l.clone(), now_ticks))
            .collect();
        if first {
            for lib in self.current.clone() {
                self.write(rec, &lib, now_ticks);
            }
        }
    }

    /// The libraries of the code map taken last.
    pub fn current(&self) -> &[Library] {
        &self.current
    }

    /// Takes the code map if it changed since the last call (whether it did): libraries that
    /// appeared are described now.
    pub fn refresh<W: ChunkOutput>(&mut self, rec: &mut Recording<W>, now_ticks: i64) -> bool {
        let Some((version, libraries)) = watcher::libraries_since(self.version) else {
            return false;
        };
        self.version = version;
        let old: HashSet<Key> = self.current.iter().map(key).collect();
        let in_chunk: HashSet<Key> = self.chunk.iter().map(|(l, _)| key(l)).collect();
        for lib in &libraries {
            if !in_chunk.contains(&key(lib)) {
                self.chunk.push((lib.clone(), now_ticks));
            }
            if !old.contains(&key(lib)) {
                self.write(rec, lib, now_ticks);
            }
        }
        self.current = libraries;
        // Build ids are kept for the libraries mapped now only: a process that loads fresh
        // copies of a library over and over (new inodes) must not grow the cache.
        let mapped: HashSet<(&str, u64)> = self
            .current
            .iter()
            .map(|l| (l.path.as_str(), l.inode))
            .collect();
        self.build_ids
            .retain(|(path, inode), _| mapped.contains(&(path.as_str(), *inode)));
        true
    }

    /// Before the chunk is finished: describes the libraries its native stacks reach that it
    /// does not describe yet.
    pub fn finish_chunk<W: ChunkOutput>(&mut self, rec: &mut Recording<W>) {
        let mut pcs: Vec<u64> = rec.chunk_native_pcs().collect();
        pcs.sort_unstable();
        pcs.dedup();
        let reached: Vec<(Library, i64)> = self
            .chunk
            .iter()
            .filter(|(lib, _)| !self.written.contains(&key(lib)) && reaches(&pcs, lib))
            .cloned()
            .collect();
        for (lib, seen_ticks) in reached {
            self.write(rec, &lib, seen_ticks);
        }
    }

    fn write<W: ChunkOutput>(&mut self, rec: &mut Recording<W>, lib: &Library, ticks: i64) {
        if !self.written.insert(key(lib)) {
            return;
        }
        let build_id = self.build_id(lib);
        rec.write(&NativeLibrary {
            start_ticks: ticks,
            name: &lib.path,
            base_address: lib.base,
            top_address: lib.top,
            build_id: build_id.as_deref(),
            file_offset: lib.file_offset,
        });
    }

    fn build_id(&mut self, lib: &Library) -> Option<String> {
        self.build_ids
            .entry((lib.path.clone(), lib.inode))
            .or_insert_with(|| {
                let id = if lib.path == "[vdso]" {
                    // No file: its note, read from memory, lets the symbolizer check that its
                    // own vDSO is this one.
                    elf_build_id(tables::vdso_image(lib).as_slice())?
                } else {
                    match tables::mapped_file(lib) {
                        Some(file) => elf_build_id(&object::read::ReadCache::new(file))?,
                        // Gone or replaced: the note of the image in memory.
                        None => elf_build_id(tables::rebuilt_image(lib).ok()?.bytes.as_slice())?,
                    }
                };
                Some(id.iter().map(|b| format!("{b:02x}")).collect())
            })
            .clone()
    }
}

/// The GNU build-id of the ELF image in `data`, if it has one.
fn elf_build_id<'d, R: object::ReadRef<'d>>(data: R) -> Option<Vec<u8>> {
    let elf = object::File::parse(data).ok()?;
    Some(object::Object::build_id(&elf).ok()??.to_vec())
}

/// Whether any of the sorted `pcs` lies in `lib`. `top` itself counts: a return address just
/// past a library's last call instruction is looked up at `pc - 1`, inside it.
fn reaches(pcs: &[u64], lib: &Library) -> bool {
    let first = pcs.partition_point(|&pc| pc < lib.base);
    pcs.get(first).is_some_and(|&pc| pc <= lib.top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jfr_writer::{Clock, NativeStackEncoding, RecordingOptions};

    fn lib(path: &str, base: u64, top: u64) -> Library {
        Library {
            path: path.into(),
            base,
            top,
            file_offset: 0,
            inode: 1,
            dev: 0,
        }
    }

    #[test]
    fn a_library_is_reached_by_a_pc_from_its_base_to_its_top() {
        let l = lib("a", 0x1000, 0x2000);
        assert!(reaches(&[0x1000], &l));
        assert!(reaches(&[0x10, 0x1fff, 0x9000], &l));
        assert!(reaches(&[0x2000], &l));
        assert!(!reaches(&[0xfff, 0x2001], &l));
        assert!(!reaches(&[], &l));
    }

    /// The libraries named by the `jdk.NativeLibrary` events of a finished file, in order.
    fn written(bytes: &[u8]) -> Vec<String> {
        let text = String::from_utf8_lossy(bytes);
        ["liba.so", "libb.so", "libc.so"]
            .into_iter()
            .flat_map(|name| {
                let n = text.matches(name).count();
                std::iter::repeat_n(name.to_string(), n)
            })
            .collect()
    }

    #[test]
    fn later_chunks_describe_only_the_libraries_their_samples_reach() {
        let options = RecordingOptions {
            clock: Clock {
                ticks_per_second: 1_000_000,
                origin_ticks: 0,
                origin_epoch_nanos: 0,
            },
            native_stack_encoding: NativeStackEncoding::Pooled,
        };
        let libraries = vec![
            lib("/x/liba.so", 0x1000, 0x2000),
            lib("/x/libb.so", 0x3000, 0x4000),
            lib("/x/libc.so", 0x5000, 0x6000),
        ];
        let mut events = LibraryEvents {
            current: libraries,
            ..LibraryEvents::default()
        };
        let mut rec = Recording::new(Vec::new(), options, 0).unwrap();
        let sample = |rec: &mut Recording<Vec<u8>>, pcs: &[u64], t: i64| {
            let native = rec.native_stack_trace(pcs, false);
            rec.write(&jfr_writer::CpuTimeSample {
                start_ticks: t,
                stack_trace: None,
                thread: None,
                failed: true,
                sampling_period_ticks: 1,
                biased: false,
                native_stack_trace: Some(native),
            });
        };
        // First chunk: every library, whatever the samples reach.
        events.start_chunk(&mut rec, 0, true);
        sample(&mut rec, &[0x3010], 1);
        events.finish_chunk(&mut rec);
        rec.rotate(10).unwrap();
        // Second chunk: libb only (a return address at its top counts), once.
        events.start_chunk(&mut rec, 10, false);
        sample(&mut rec, &[0x3020, 0x4000], 11);
        sample(&mut rec, &[0x3030], 12);
        events.finish_chunk(&mut rec);
        rec.rotate(20).unwrap();
        // Third chunk: a library unmapped during the chunk is still described if reached.
        events.start_chunk(&mut rec, 20, false);
        sample(&mut rec, &[0x5010], 21);
        events.current.pop();
        events.finish_chunk(&mut rec);
        let bytes = rec.finish(30).unwrap();
        let chunks = split_chunks(&bytes);
        assert_eq!(chunks.len(), 3);
        assert_eq!(written(chunks[0]), ["liba.so", "libb.so", "libc.so"]);
        assert_eq!(written(chunks[1]), ["libb.so"]);
        assert_eq!(written(chunks[2]), ["libc.so"]);
    }

    /// The chunks of a file, by the size in each chunk header.
    fn split_chunks(mut bytes: &[u8]) -> Vec<&[u8]> {
        let mut chunks = Vec::new();
        while bytes.len() >= 16 {
            let size = u64::from_be_bytes(bytes[8..16].try_into().unwrap()) as usize;
            let (chunk, rest) = bytes.split_at(size);
            chunks.push(chunk);
            bytes = rest;
        }
        chunks
    }
}
