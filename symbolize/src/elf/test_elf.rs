//! Tiny 64-bit little-endian ELF files made byte by byte, for tests of damaged headers (what the
//! fuzz target elf_reader found): program headers and sections exactly as given, nothing
//! checked.

/// A `PT_LOAD` segment: file offset, address, file size.
pub struct Load(pub u64, pub u64, pub u64);

/// A section: name, `sh_type`, `sh_flags`, contents.
pub struct Section<'a>(pub &'a str, pub u32, pub u64, pub &'a [u8]);

/// An `ET_DYN` x86-64 file with `loads` as its program headers and `sections` (after the null
/// section, followed by `.shstrtab`), each section's contents placed after the headers.
pub fn elf(loads: &[Load], sections: &[Section<'_>]) -> Vec<u8> {
    const EH: usize = 64;
    const PH: usize = 56;
    const SH: usize = 64;
    let mut names = vec![0u8];
    let mut name_at = Vec::new();
    for s in sections.iter().map(|s| s.0).chain([".shstrtab"]) {
        name_at.push(names.len() as u32);
        names.extend_from_slice(s.as_bytes());
        names.push(0);
    }
    let mut contents: Vec<&[u8]> = sections.iter().map(|s| s.3).collect();
    contents.push(&names);
    let data_at = EH + PH * loads.len();
    let mut offsets = Vec::new();
    let mut at = data_at;
    for c in &contents {
        offsets.push(at);
        at += c.len();
    }
    let sh_at = if sections.is_empty() { 0 } else { at };
    let shnum = if sections.is_empty() {
        0
    } else {
        contents.len() + 1
    };

    let mut b = Vec::new();
    b.extend_from_slice(b"\x7fELF\x02\x01\x01\x00");
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
    b.extend_from_slice(&0x3eu16.to_le_bytes()); // x86-64
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes()); // e_entry
    b.extend_from_slice(&(EH as u64).to_le_bytes()); // e_phoff
    b.extend_from_slice(&(sh_at as u64).to_le_bytes()); // e_shoff
    b.extend_from_slice(&0u32.to_le_bytes());
    let shstrndx = shnum.saturating_sub(1);
    for half in [EH, PH, loads.len(), SH, shnum, shstrndx] {
        b.extend_from_slice(&(half as u16).to_le_bytes());
    }
    for Load(offset, address, size) in loads {
        b.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        b.extend_from_slice(&5u32.to_le_bytes()); // R+X
        for word in [*offset, *address, *address, *size, *size, 0x1000] {
            b.extend_from_slice(&word.to_le_bytes());
        }
    }
    if sections.is_empty() {
        return b;
    }
    for c in &contents {
        b.extend_from_slice(c);
    }
    b.extend_from_slice(&[0; SH]);
    let strtab = Section(".shstrtab", 3, 0, &names);
    for (i, s) in sections.iter().chain([&strtab]).enumerate() {
        b.extend_from_slice(&name_at[i].to_le_bytes());
        b.extend_from_slice(&s.1.to_le_bytes());
        b.extend_from_slice(&s.2.to_le_bytes()); // sh_flags
        b.extend_from_slice(&0u64.to_le_bytes()); // sh_addr
        b.extend_from_slice(&(offsets[i] as u64).to_le_bytes());
        b.extend_from_slice(&(s.3.len() as u64).to_le_bytes());
        b.extend_from_slice(&[0; 8]); // sh_link, sh_info
        b.extend_from_slice(&1u64.to_le_bytes()); // sh_addralign
        b.extend_from_slice(&0u64.to_le_bytes()); // sh_entsize
    }
    b
}
