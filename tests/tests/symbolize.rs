//! The symbolizer against the reference tools (llvm-symbolizer, binutils addr2line) on test
//! libraries built in every variant: with and without DWARF, stripped, separate debug files by
//! build-id and by debuglink, compressed DWARF; and where those tools are wrong: return
//! addresses, stripped static functions, mismatched and missing libraries.

use std::path::{Path, PathBuf};

use symbolize::resolve::Frame;
use symbolize::{LibraryRef, Options, Symbolizer};
use tests::symlibs::{
    binutils_addr2line, build_id, debug_info_compression, library, llvm_symbolizer, sym_libs,
    RefFrame, BASE,
};
use tests::workload::functions;

fn symbolizer(debug_dirs: &[&Path]) -> Symbolizer {
    Symbolizer::new(Options {
        debug_dirs: debug_dirs.iter().map(|p| p.to_path_buf()).collect(),
        ..Options::default()
    })
}

/// `(start, end, name)` of function `name` in the DWARF build, from `nm`.
fn function(name: &str) -> (u64, u64, String) {
    functions(&sym_libs().dwarf)
        .into_iter()
        .find(|f| f.2 == name)
        .unwrap_or_else(|| panic!("no function {name}"))
}

/// Every byte address of the test library's own functions (from `nm` of the DWARF build).
fn probes() -> Vec<u64> {
    let libs = sym_libs();
    let mut out = Vec::new();
    for (start, end, name) in functions(&libs.dwarf) {
        if name.starts_with("sym_") || name.contains("symtest") {
            out.extend(start..end);
        }
    }
    out.sort_unstable();
    out.dedup();
    assert!(out.len() > 300, "too few probe addresses: {}", out.len());
    out
}

fn basename(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map_or(p.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Function names as compared: the tools print a compiler clone or split part differently
/// (llvm-symbolizer `f() (.isra.0)` and `f.cold` from the symbol table, c++filt and
/// cpp_demangle `f() [clone .isra.0]`, DWARF just `f()` and `f`), so the suffix is dropped on
/// both sides.
fn without_clone_suffix(name: &str) -> String {
    let mut n = name.to_string();
    for open in [" [clone .", " (."] {
        if let Some(i) = n.find(open) {
            n.truncate(i);
        }
    }
    // A C symbol of a clone or a split part (`f.cold`, `f.part.0`): DWARF names `f`.
    if !n.contains('(') {
        if let Some(i) = n.find('.') {
            n.truncate(i);
        }
    }
    n
}

/// Names cpp_demangle 0.4 cannot demangle but llvm-symbolizer and c++filt can: shown mangled
/// by us. Listed so that a new one fails the test.
const DEMANGLER_GAPS: &[&str] =
    &["_ZSt9__fill_a1IPllEN9__gnu_cxx11__enable_ifIXsrSt11__is_scalarIT0_E7__valueEvE6__typeET_S8_RKS4_"];

/// Aliases: names of one address in `nm` of the DWARF build (the IFUNC `sym_picked` and its
/// resolver `sym_pick`). Any alias is a right answer; each maps to the first in sorted order.
fn canonical_alias(name: &str) -> String {
    use std::sync::OnceLock;
    static ALIASES: OnceLock<std::collections::HashMap<String, String>> = OnceLock::new();
    let aliases = ALIASES.get_or_init(|| {
        let nm = tests::readers::run(
            std::process::Command::new("nm")
                .args(["--defined-only", "-C"])
                .arg(&sym_libs().dwarf),
        )
        .unwrap();
        let mut by_address: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for line in nm.lines() {
            let mut w = line.splitn(3, ' ');
            if let (Some(a), Some(_), Some(n)) = (w.next(), w.next(), w.next()) {
                by_address.entry(a.into()).or_default().push(n.into());
            }
        }
        let mut map = std::collections::HashMap::new();
        for mut names in by_address.into_values() {
            names.sort();
            for n in &names {
                map.insert(n.clone(), names[0].clone());
            }
        }
        map
    });
    aliases
        .get(name)
        .cloned()
        .unwrap_or_else(|| name.to_string())
}

/// Compares two inline chains by function (clone suffix dropped, aliases and known demangler
/// gaps accepted), file name and line.
fn assert_chain_eq(ours: &[RefFrame], reference: &[RefFrame], what: &str) {
    let norm = |v: &[RefFrame], ours: bool| -> Vec<RefFrame> {
        v.iter()
            .map(|f| RefFrame {
                function: if ours && DEMANGLER_GAPS.contains(&f.function.as_str()) {
                    "<demangler gap>".into()
                } else {
                    canonical_alias(&without_clone_suffix(&f.function))
                },
                ..f.clone()
            })
            .collect()
    };
    let (o, mut r) = (norm(ours, true), norm(reference, false));
    for (of, rf) in o.iter().zip(r.iter_mut()) {
        if of.function == "<demangler gap>" {
            rf.function = of.function.clone();
        }
    }
    assert_eq!(o, r, "{what}: ours (left) vs the reference (right)");
}

/// Our frames in the reference tools' terms.
fn as_ref_frames(frames: &[Frame]) -> Vec<RefFrame> {
    frames
        .iter()
        .map(|f| RefFrame {
            function: if f.named {
                f.name.to_string()
            } else {
                "??".into()
            },
            file: f.file.as_deref().map(basename),
            line: f.line.unwrap_or(0),
        })
        .collect()
}

fn resolve_all(s: &mut Symbolizer, lib: &LibraryRef, addresses: &[u64]) -> Vec<Vec<RefFrame>> {
    addresses
        .iter()
        .map(|a| as_ref_frames(&s.resolve(Some(lib), BASE + a, true).frames))
        .collect()
}

/// The probes and our answers for them on the DWARF build.
fn dwarf_answers() -> (Vec<u64>, Vec<Vec<RefFrame>>) {
    let addresses = probes();
    let lib = library(&sym_libs().dwarf, None);
    let ours = resolve_all(&mut symbolizer(&[]), &lib, &addresses);
    (addresses, ours)
}

#[test]
fn dwarf_inline_chains_and_lines_agree_with_llvm_symbolizer() {
    let libs = sym_libs();
    let (addresses, ours) = dwarf_answers();
    let llvm = llvm_symbolizer(&libs.dwarf, &addresses).unwrap();
    assert_eq!(llvm.len(), addresses.len());
    let mut deepest = 0;
    for ((a, o), l) in addresses.iter().zip(&ours).zip(&llvm) {
        assert_chain_eq(o, l, &format!("llvm-symbolizer at {a:#x}"));
        deepest = deepest.max(o.len());
    }
    // sym_outer inlines sym_middle, which inlines sym_inner.
    assert!(deepest >= 3, "no inline chain of depth 3 among the probes");
    let outer = function("sym_outer");
    let chain = ours
        .iter()
        .zip(&addresses)
        .filter(|(_, a)| (outer.0..outer.1).contains(a))
        .map(|(o, _)| o.iter().map(|f| f.function.as_str()).collect::<Vec<_>>())
        .find(|names| names.len() == 3)
        .unwrap_or_default();
    assert_eq!(chain, ["sym_inner", "sym_middle", "sym_outer"]);
}

#[test]
fn dwarf_function_names_agree_with_binutils_addr2line() {
    let libs = sym_libs();
    let (addresses, ours) = dwarf_answers();
    let binutils = binutils_addr2line(&libs.dwarf, &addresses).unwrap();
    assert_eq!(binutils.len(), addresses.len());
    for ((a, o), b) in addresses.iter().zip(&ours).zip(&binutils) {
        // binutils drops inline chains in some places (the `.cold` part of a function): where
        // it gives any, it is compared on the outermost function and the innermost line.
        let what = format!("binutils addr2line at {a:#x}");
        let outer = |v: &[RefFrame]| v.last().cloned().map(|f| vec![f]).unwrap_or_default();
        let inner_line = |v: &[RefFrame]| v.first().map(|f| (f.file.clone(), f.line));
        let names = |v: Vec<RefFrame>| {
            v.into_iter()
                .map(|f| RefFrame {
                    file: None,
                    line: 0,
                    ..f
                })
                .collect::<Vec<_>>()
        };
        assert_chain_eq(&names(outer(o)), &names(outer(b)), &what);
        assert_eq!(inner_line(o), inner_line(b), "{what}: innermost line");
    }
}

#[test]
fn symbols_only_library_agrees_with_llvm_symbolizer_and_demangles() {
    let libs = sym_libs();
    let addresses: Vec<u64> = functions(&libs.nodebug)
        .into_iter()
        .filter(|f| f.2.starts_with("sym_") || f.2.contains("symtest"))
        .flat_map(|(s, e, _)| [s, (s + e) / 2, e - 1])
        .collect();
    let ours = resolve_all(
        &mut symbolizer(&[]),
        &library(&libs.nodebug, None),
        &addresses,
    );
    let llvm = llvm_symbolizer(&libs.nodebug, &addresses).unwrap();
    for ((a, o), l) in addresses.iter().zip(&ours).zip(&llvm) {
        assert_eq!(o.len(), 1, "at {a:#x}");
        // Names only: llvm-symbolizer adds the STT_FILE symbol's name as a file, line 0.
        let name = |f: &RefFrame| RefFrame {
            file: None,
            line: 0,
            ..f.clone()
        };
        assert_chain_eq(
            &[name(&o[0])],
            &[name(&l[0])],
            &format!("llvm-symbolizer at {a:#x}"),
        );
        assert_eq!(
            (o[0].file.clone(), o[0].line),
            (None, 0),
            "no DWARF, no line"
        );
    }
    let names: Vec<&str> = ours.iter().map(|o| o[0].function.as_str()).collect();
    assert!(names.contains(&"symtest::sum(std::vector<long, std::allocator<long> > const&, int)"));
    assert!(names.contains(&"symtest::Box<long>::twice(long) const [clone .isra.0]"));
    assert!(names.contains(&"sym_hidden"), "a local symbol from .symtab");
}

#[test]
fn return_addresses_are_looked_up_one_byte_back_and_shown_as_recorded() {
    let libs = sym_libs();
    let fns = functions(&libs.dwarf);
    let ends = fns.iter().find(|f| f.2 == "sym_ends_in_call").unwrap();
    let next = fns.iter().find(|f| f.0 == ends.1).map(|f| f.2.clone());
    assert_eq!(
        next.as_deref(),
        Some("sym_after_call"),
        "layout: sym_ends_in_call must be followed directly by sym_after_call"
    );
    // The function's last instruction is a call (e8 rel32), so the return address is ends.1.
    let bytes = std::fs::read(&libs.dwarf).unwrap();
    let image = symbolize::elf::image::ElfImage::open(&libs.dwarf).unwrap();
    let text = image
        .segments
        .iter()
        .find(|s| s.address <= ends.0 && ends.1 <= s.address + s.file_size)
        .unwrap();
    let call_at = (ends.1 - 5 - text.address + text.file_offset) as usize;
    assert_eq!(
        bytes[call_at], 0xe8,
        "sym_ends_in_call does not end in a call"
    );
    let ra = ends.1;
    let mut s = symbolizer(&[]);
    let lib = library(&libs.dwarf, None);
    let caller = s.resolve(Some(&lib), BASE + ra, false);
    assert_eq!(caller.address, Some(ra), "shown with its real PC");
    let llvm_at_ra = llvm_symbolizer(&libs.dwarf, &[ra, ra - 1]).unwrap();
    assert_eq!(
        llvm_at_ra[0][0].function, "sym_after_call",
        "llvm-symbolizer given the raw return address names the next function"
    );
    assert_chain_eq(
        &as_ref_frames(&caller.frames),
        &llvm_at_ra[1],
        "return address",
    );
    assert_eq!(
        caller.frames.last().unwrap().name.as_ref(),
        "sym_ends_in_call"
    );
    // As a leaf (an interrupted PC), the same address is the next function.
    let leaf = s.resolve(Some(&lib), BASE + ra, true);
    assert_eq!(leaf.frames.last().unwrap().name.as_ref(), "sym_after_call");
}

/// A function no symbol holds (a static function of a library with only `.dynsym`) is named
/// after the nearest exported symbol below its start, with its offset from it, and marked as
/// not named: never the neighbour's bare name.
#[test]
fn stripped_code_gets_the_nearest_exported_symbol_with_an_offset() {
    let libs = sym_libs();
    let fns = functions(&libs.dwarf);
    let start_of = |name: &str| fns.iter().find(|f| f.2 == name).unwrap().clone();
    // The exported functions, from `nm -D` (sized functions and IFUNCs).
    let dynsym = tests::readers::run(
        std::process::Command::new("nm")
            .args(["-D", "-S", "--defined-only"])
            .arg(&libs.stripped),
    )
    .unwrap();
    let exported: Vec<(u64, String)> = dynsym
        .lines()
        .filter_map(
            |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                [addr, _size, kind, name] if matches!(*kind, "T" | "t" | "i" | "W") => {
                    Some((u64::from_str_radix(addr, 16).ok()?, name.to_string()))
                }
                _ => None,
            },
        )
        .collect();
    assert!(exported.len() >= 3, "{dynsym}");
    let mut s = symbolizer(&[]);
    let lib = library(&libs.stripped, None);
    for local in ["sym_hidden", "sym_impl_a", "sym_impl_b"] {
        let (start, end, _) = start_of(local);
        assert!(
            exported.iter().all(|(_, n)| n != local),
            "{local} is exported"
        );
        let expected = match exported
            .iter()
            .filter(|(a, _)| *a <= start)
            .max_by_key(|(a, _)| *a)
        {
            Some((at, name)) => format!("{name}+{:#x}", start - at),
            None => format!("libsym-stripped.so+{start:#x}"),
        };
        for a in [start, (start + end) / 2, end - 1] {
            let got = s.resolve(Some(&lib), BASE + a, true);
            assert_eq!(got.frames.len(), 1);
            assert!(!got.frames[0].named, "{local} at {a:#x} got a name");
            assert_eq!(got.frames[0].name.as_ref(), expected, "{local} at {a:#x}");
        }
    }
    // Exported functions keep their .dynsym names, the IFUNC included.
    for (exported, expect) in [("sym_leaf", "sym_leaf"), ("sym_pick", "sym_picked")] {
        let (start, end, _) = start_of(exported);
        let got = s.resolve(Some(&lib), BASE + (start + end) / 2, true);
        assert_eq!(got.frames[0].name.as_ref(), expect);
        assert!(got.frames[0].named);
    }
}

fn assert_same_as_dwarf(lib: &LibraryRef, debug_dirs: &[&Path], what: &str) {
    let (addresses, want) = dwarf_answers();
    let mut s = symbolizer(debug_dirs);
    let got = resolve_all(&mut s, lib, &addresses);
    for ((a, g), w) in addresses.iter().zip(&got).zip(&want) {
        assert_eq!(g, w, "{what} at {a:#x}");
    }
    assert!(s.problems().is_empty(), "{what}: {:?}", s.problems());
}

#[test]
fn separate_debug_file_by_build_id() {
    let libs = sym_libs();
    let lib = library(&libs.stripped, Some(libs.build_id.clone()));
    assert_same_as_dwarf(&lib, &[&libs.debug_root], "stripped + build-id debug file");
}

#[test]
fn separate_debug_file_by_debuglink_trusts_a_matching_build_id_over_the_crc() {
    let libs = sym_libs();
    let empty = libs.dir.join("no-debug-root");
    std::fs::create_dir_all(&empty).unwrap();
    assert_same_as_dwarf(&library(&libs.linked, None), &[&empty], "debuglink");

    // Same debug file with bytes appended: the CRC no longer matches, the build-id does.
    let dir = libs.dir.join("linked-crc");
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libsym-linked.so");
    std::fs::copy(&libs.linked, &lib).unwrap();
    let mut debug = std::fs::read(libs.linked.with_file_name("libsym-link.debug")).unwrap();
    debug.extend_from_slice(&[0u8; 64]);
    std::fs::write(dir.join("libsym-link.debug"), debug).unwrap();
    assert_same_as_dwarf(&library(&lib, None), &[&empty], "debuglink, CRC differs");
}

#[test]
fn debuglink_to_a_file_with_another_build_id_is_not_used() {
    let libs = sym_libs();
    let dir = libs.dir.join("linked-wrong");
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libsym-linked.so");
    std::fs::copy(&libs.linked, &lib).unwrap();
    // A debug file of another build (no -g: a different build-id) under the linked name.
    let wrong = dir.join("libsym-link.debug");
    tests::readers::run(
        std::process::Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&libs.nodebug)
            .arg(&wrong),
    )
    .unwrap();
    assert_ne!(build_id(&wrong).unwrap(), libs.build_id);
    let empty = libs.dir.join("no-debug-root");
    std::fs::create_dir_all(&empty).unwrap();
    let mut s = symbolizer(&[&empty]);
    let hidden = function("sym_hidden");
    let got = s.resolve(Some(&library(&lib, None)), BASE + hidden.0 + 4, true);
    assert_eq!(got.frames.len(), 1);
    assert_eq!(got.frames[0].line, None, "DWARF of another build was used");
    assert_eq!(
        got.frames[0].name.as_ref(),
        format!("libsym-linked.so+{:#x}", hidden.0)
    );
}

#[test]
fn compressed_dwarf_zlib_and_zstd() {
    let libs = sym_libs();
    assert_eq!(debug_info_compression(&libs.zlib), Some(1), "zlib");
    assert_eq!(debug_info_compression(&libs.zstd), Some(2), "zstd");
    assert_eq!(debug_info_compression(&libs.dwarf), None);
    for lib in [&libs.zlib, &libs.zstd] {
        assert_same_as_dwarf(&library(lib, None), &[], &lib.display().to_string());
    }
}

#[test]
fn a_library_whose_build_id_differs_from_the_recorded_one_is_reported_and_not_used() {
    let libs = sym_libs();
    let recorded = "00112233445566778899aabbccddeeff00112233".to_string();
    let lib = library(&libs.dwarf, Some(recorded.clone()));
    let mut s = symbolizer(&[&libs.debug_root]);
    let leaf = function("sym_leaf");
    for pc in [BASE + leaf.0, BASE + leaf.0 + 3] {
        let got = s.resolve(Some(&lib), pc, true);
        assert!(!got.frames[0].named);
        assert_eq!(
            got.frames[0].name.as_ref(),
            format!("libsym-dwarf.so+{:#x}", pc - BASE),
            "the offset into the mapping"
        );
    }
    assert_eq!(s.problems().len(), 1, "{:?}", s.problems());
    let reason = &s.problems()[0].reason;
    assert!(
        reason.contains(&libs.build_id) && reason.contains(&recorded),
        "{reason}"
    );
}

#[test]
fn a_missing_library_is_resolved_from_its_debug_file_or_reported_once() {
    let libs = sym_libs();
    let leaf = function("sym_leaf");
    // Gone from disk, but its debug file (found by the recorded build-id) has the segments,
    // the symbols and the DWARF.
    let gone = PathBuf::from("/nonexistent/libsym-dwarf.so");
    let mut s = symbolizer(&[&libs.debug_root]);
    let got = s.resolve(
        Some(&library(&gone, Some(libs.build_id.clone()))),
        BASE + leaf.0 + 4,
        true,
    );
    assert_eq!(got.frames.last().unwrap().name.as_ref(), "sym_leaf");
    assert!(got.frames[0].line.is_some());
    assert!(s.problems().is_empty(), "{:?}", s.problems());

    let mut s = symbolizer(&[&libs.debug_root]);
    let lib = library(Path::new("/nonexistent/libsym-gone.so"), None);
    for off in [0x1000u64, 0x1234] {
        let got = s.resolve(Some(&lib), BASE + off, off == 0x1000);
        assert_eq!(
            got.frames[0].name.as_ref(),
            format!("libsym-gone.so+{off:#x}")
        );
    }
    assert_eq!(s.problems().len(), 1, "reported once: {:?}", s.problems());
    assert!(s.problems()[0]
        .reason
        .contains("/nonexistent/libsym-gone.so"));
}

#[test]
fn addresses_translate_through_the_recorded_file_offset_and_program_headers() {
    let libs = sym_libs();
    let image = symbolize::elf::image::ElfImage::open(&libs.dwarf).unwrap();
    let leaf = function("sym_leaf");
    let text = image
        .segments
        .iter()
        .find(|s| s.address <= leaf.0 && leaf.0 < s.address + s.file_size)
        .unwrap();
    // A recording whose base is the start of the code mapping rather than of the file.
    let page = text.file_offset & !0xfff;
    let vaddr_of_page = text.address - (text.file_offset - page);
    let code_base = 0x7f55_0000_0000u64;
    let lib = LibraryRef {
        path: libs.dwarf.display().to_string(),
        base: code_base,
        top: code_base + 0x10000,
        build_id: None,
        file_offset: page,
    };
    let pc = code_base + (leaf.0 + 4 - vaddr_of_page);
    let got = symbolizer(&[]).resolve(Some(&lib), pc, true);
    assert_eq!(got.address, Some(leaf.0 + 4));
    assert_eq!(got.frames.last().unwrap().name.as_ref(), "sym_leaf");
}

#[test]
fn each_distinct_address_is_resolved_once() {
    let libs = sym_libs();
    let lib = library(&libs.dwarf, None);
    let mut s = symbolizer(&[]);
    let addresses = probes();
    for _ in 0..3 {
        for a in &addresses {
            s.resolve(Some(&lib), BASE + a, true);
        }
    }
    let stats = s.stats();
    assert_eq!(stats.lookups, 3 * addresses.len() as u64);
    assert_eq!(stats.distinct, addresses.len() as u64);
}
