//! The ELF reader of `symbolize` on a library's bytes (a container's library is untrusted):
//! build-id, segments and file offsets, `.symtab`/`.dynsym` symbols, `.eh_frame` function
//! starts, DWARF inline chains and lines (compressed sections too), and MiniDebugInfo (the xz
//! stream in `.gnu_debugdata` and the ELF file inside it). An input that starts with xz's magic
//! also goes to the xz decoder directly.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use symbolize::elf::dwarf::Dwarf;
use symbolize::elf::image::ElfImage;
use symbolize::elf::minidebuginfo::{decompress_xz, MiniDebugInfo};

/// Whether `data` holds the word 0xffffffff, which lzma-rs 0.3.0 may take for an xz footer's
/// backward size and add 1 to unchecked (`src/decode/xz.rs:52`). The product catches that
/// panic (`decompress_xz` answers an error: its test
/// `a_footer_whose_backward_size_overflows_is_an_error`), but libFuzzer's panic hook aborts
/// before any catch; such inputs skip the xz decoder here, and everything else still runs.
fn may_overflow_lzma_rs(data: &[u8]) -> bool {
    data.windows(4).any(|w| w == [0xff; 4])
}

fuzz_target!(|data: &[u8]| {
    let xz_safe = !may_overflow_lzma_rs(data);
    if xz_safe && data.starts_with(b"\xfd7zXZ\0") {
        let _ = decompress_xz(data);
    }
    let Ok(image) = ElfImage::from_bytes(Path::new("fuzz.so"), data.to_vec()) else {
        return;
    };
    let _ = image.build_id_hex();
    // Addresses to look up: each segment's bounds and each symbol's start and middle.
    let mut addresses: Vec<u64> = Vec::new();
    for s in &image.segments {
        for offset in [s.file_offset, s.file_offset.wrapping_add(s.file_size / 2)] {
            if let Some(a) = image.address_of_file_offset(offset) {
                addresses.push(a);
            }
        }
    }
    let bytes = image.bytes();
    let symbols = image.symbols();
    for a in addresses.clone() {
        if let Some((start, _)) = symbols.lookup(a, bytes) {
            addresses.push(start);
        }
        let _ = symbols.nearest_below(a, bytes);
        let _ = image.function_starts().containing(a);
    }
    addresses.truncate(64);
    let mini = if xz_safe {
        MiniDebugInfo::load(&image)
    } else {
        Ok(None)
    };
    if let Ok(Some(mini)) = mini {
        let (table, names) = mini.symbols();
        for &a in &addresses {
            let _ = table.lookup(a, names);
        }
    }
    if let Some(dwarf) = Dwarf::load(&image) {
        for &a in &addresses {
            let _ = dwarf.frames(a);
        }
    }
});
