//! The rebuilt image against the file it was loaded from, read by independent readers
//! (`nm -D`, `readelf -n`) and by the unwind-table builder.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::unwind::build::build;
use crate::unwind::codemap::{CodeMap, Library};
use crate::unwind::tables::{self, Tables};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-image-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn library(map: &CodeMap, part: &str) -> Library {
    map.libraries
        .iter()
        .find(|l| l.path.contains(part))
        .unwrap_or_else(|| panic!("no {part} in {:?}", map.libraries))
        .clone()
}

/// `nm -D --defined-only` of `path`: (address, name) of each defined function, and every
/// defined symbol's name.
fn nm_defined(path: &Path) -> (BTreeSet<(String, String)>, BTreeSet<String>) {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut functions, mut names) = (BTreeSet::new(), BTreeSet::new());
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [address, kind, name] = fields[..] {
            names.insert(name.to_string());
            if kind == "T" || kind == "t" || kind == "i" {
                functions.insert((address.to_string(), name.to_string()));
            }
        }
    }
    (functions, names)
}

/// At most ten elements that are in one of `a`, `b` only.
fn differ<T: Ord + std::fmt::Debug>(a: &BTreeSet<T>, b: &BTreeSet<T>) -> Vec<String> {
    a.symmetric_difference(b)
        .take(10)
        .map(|x| format!("{x:?}"))
        .collect()
}

/// The build-id `readelf -n` prints for `path`.
fn readelf_build_id(path: &Path) -> Option<String> {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
}

#[test]
fn libc_rebuilt_from_memory_reads_as_its_file_does() {
    let map = CodeMap::read_self().unwrap();
    let libc = library(&map, "/libc.so");
    let rebuilt = tables::rebuilt_image(&libc).unwrap();
    assert_eq!(rebuilt.unreadable_segments, 0);
    assert!(rebuilt.eh_frame);
    let dir = scratch("libc");
    let copy = dir.join("libc.so.6");
    std::fs::write(&copy, &rebuilt.bytes).unwrap();
    let (want_functions, want_names) = nm_defined(Path::new(&libc.path));
    let (got_functions, got_names) = nm_defined(&copy);
    assert!(want_functions.len() > 1000, "{}", want_functions.len());
    assert!(
        got_functions == want_functions,
        "{:?}",
        differ(&got_functions, &want_functions)
    );
    assert!(
        got_names == want_names,
        "{:?}",
        differ(&got_names, &want_names)
    );
    assert_eq!(rebuilt.symbols, {
        let data = std::fs::read(&libc.path).unwrap();
        let elf = object::File::parse(&*data).unwrap();
        object::Object::dynamic_symbols(&elf).count() + 1
    });
    let id = readelf_build_id(Path::new(&libc.path));
    assert!(id.is_some());
    assert_eq!(readelf_build_id(&copy), id);
    // readelf finds nothing to warn about in its sections, symbols, versions and notes.
    let out = Command::new("readelf")
        .args(["-W", "-S", "--dyn-syms", "-V", "-n", "-d"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A library built without frame pointers, loaded, then deleted, as a jar's loader does.
#[test]
fn a_deleted_library_gets_the_table_its_file_would_give() {
    let dir = scratch("deleted");
    let lib = crate::test_lib::build(
        &dir,
        "libgone.so",
        "__attribute__((noinline)) long leaf(long a) { return a * 3 + (a >> 2); }\n\
         __attribute__((noinline)) long mid(long a) { long s = 0; for (long i = 0; i < a; i++) \
         s += leaf(i) ^ s; return s; }\n\
         long gone_outer(long a) { char buf[64]; for (int i = 0; i < 64; i++) buf[i] = a + i; \
         return mid(buf[a & 63]) + buf[7]; }\n\
         char gone_secret[] = \"s3cr3t-in-writable-data\";\n",
        &["-O2", "-fomit-frame-pointer"],
    );
    let loaded = dir.join("libgone-loaded.so");
    std::fs::copy(&lib, &loaded).unwrap();
    let handle = crate::test_lib::load(&loaded);
    std::fs::remove_file(&loaded).unwrap();

    let map = CodeMap::read_self().unwrap();
    let gone = library(&map, "libgone-loaded.so");
    assert!(tables::is_deleted(&gone), "{}", gone.path);
    let mut tables = Tables::default();
    let table = tables.for_libraries(std::slice::from_ref(&gone))[0]
        .clone()
        .unwrap_or_else(|| panic!("no table: {:?}", tables.take_problems()));
    assert_eq!(tables.stats().from_memory, 1);
    // Every address of its code has the rule the file itself gives.
    let data = std::fs::read(&lib).unwrap();
    let from_file = build(&data, gone.base, 0, 4096).unwrap().table;
    let elf = object::File::parse(&*data).unwrap();
    let text = object::Object::section_by_name(&elf, ".text").unwrap();
    let start = gone.base + object::ObjectSection::address(&text);
    let mut compared = 0;
    for pc in start..start + object::ObjectSection::size(&text) {
        assert_eq!(
            table.rule(pc),
            from_file.rule(pc),
            "at {:#x}",
            pc - gone.base
        );
        compared += 1;
    }
    assert!(compared > 50);
    // Its symbols, as nm reads them.
    let rebuilt = tables::rebuilt_image(&gone).unwrap();
    let copy = dir.join("rebuilt.so");
    std::fs::write(&copy, &rebuilt.bytes).unwrap();
    // What the process wrote (or keeps) in its writable data does not leave it.
    let secret = b"s3cr3t-in-writable-data";
    assert!(data.windows(secret.len()).any(|w| w == secret));
    assert!(!rebuilt.bytes.windows(secret.len()).any(|w| w == secret));
    let (functions, _) = nm_defined(&copy);
    assert_eq!(functions, nm_defined(&lib).0);
    assert!(functions.iter().any(|(_, n)| n == "gone_outer"));
    // SAFETY: the handle from dlopen above; nothing of the library is in use.
    unsafe { libc::dlclose(handle) };
    let _ = std::fs::remove_dir_all(&dir);
}

/// Memory served from `input` at 0x10_0000 (reads past it fail).
fn served(input: &'static [u8]) -> impl Fn(u64, &mut [u8]) -> io::Result<()> {
    move |address: u64, buf: &mut [u8]| {
        let at = address.checked_sub(0x10_0000).map(|a| a as usize);
        match at.and_then(|a| input.get(a..a.checked_add(buf.len())?)) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(io::Error::from(io::ErrorKind::InvalidInput)),
        }
    }
}

/// The fuzz target memory_image's findings: memory whose program headers map no segment at
/// file offset 0 gave a rebuilt file without the ELF magic; program headers outside every
/// segment's file bytes gave a file whose header pointed past its end; a dynamic segment over
/// the ELF header had its pointers "taken back" into the header. The headers read at the base
/// are now always the file's, written last, and the program headers always inside it.
#[test]
fn a_rebuilt_file_always_has_the_headers_read_at_the_base() {
    for input in [
        &include_bytes!("../../../testdata/fuzz-regressions/memory-image-no-header-segment.bin")[..],
        &include_bytes!(
            "../../../testdata/fuzz-regressions/memory-image-program-headers-outside.bin"
        )[..],
        &include_bytes!("../../../testdata/fuzz-regressions/memory-image-dynamic-over-header.bin")
            [..],
    ] {
        let rebuilt = rebuild(0x10_0000, 4096, 16 << 20, &served(input)).unwrap();
        if let Err(e) = object::File::parse(&*rebuilt.bytes) {
            panic!("{e}");
        }
    }
}

#[test]
fn damaged_images_are_errors_not_faults() {
    let map = CodeMap::read_self().unwrap();
    let libc = library(&map, "/libc.so");
    // libc's first 64 KiB, served at a fake base; what lies beyond cannot be read.
    let mut original = vec![0u8; 64 << 10];
    crate::os::read_own_memory(libc.base, &mut original).unwrap();
    let base = 0x10_0000u64;
    let memory = |image: &[u8]| {
        let image = image.to_vec();
        move |address: u64, buf: &mut [u8]| {
            let at = address.checked_sub(base).map(|a| a as usize);
            match at.and_then(|a| image.get(a..a.checked_add(buf.len())?)) {
                Some(src) => {
                    buf.copy_from_slice(src);
                    Ok(())
                }
                None => Err(io::Error::from(io::ErrorKind::InvalidInput)),
            }
        }
    };
    assert!(rebuild(base, 4096, 1 << 30, &memory(&[0u8; 4096])).is_err());
    // Every single-byte change of the headers gives an image or an error, never a panic.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..4000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut damaged = original.clone();
        let at = (state % 4096) as usize;
        damaged[at] = (state >> 32) as u8;
        let _ = rebuild(base, 4096, 16 << 20, &memory(&damaged));
    }
    let error = rebuild(base, 4096, 1 << 10, &memory(&original)).unwrap_err();
    assert!(error.contains("implausible segments"), "{error}");
    assert!(rebuild(base, 4096, 1 << 30, &memory(&original)).is_ok());
}
