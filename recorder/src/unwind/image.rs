//! A loaded library's ELF file, rebuilt from the process's memory, for a library whose file is
//! gone (unpacked from a jar to `/tmp`, loaded and deleted) or replaced since it was loaded.
//!
//! What the loader mapped is all that is left of such a library: its loadable segments. They
//! hold the ELF and program headers, `.dynsym`/`.dynstr` (found through the dynamic segment),
//! `.eh_frame_hdr`/`.eh_frame` (through `PT_GNU_EH_FRAME`) and the build-id note (`PT_NOTE`),
//! but no section headers, `.symtab` or DWARF, which are never loaded. The rebuilt file puts
//! each segment's bytes back at its file offset and adds section headers for what the segments
//! hold, so that the unwind-table builder, the symbolizer, `nm -D` and `readelf` read it as
//! any library:
//! - one section per loadable segment (`.text` for the executable one, `.rodata`, `.data`);
//! - `.dynsym` and `.dynstr`, the dynamic symbols' section indices renumbered to those sections;
//! - `.eh_frame_hdr`, `.eh_frame`, `.note.gnu.build-id`;
//! - `.jfrnative.rebuilt`, a note saying the file was rebuilt from memory.
//!
//! The dynamic loader relocates some of the dynamic segment's pointers in place (glibc adds
//! the load bias to `DT_SYMTAB`, `DT_STRTAB` and others); they are taken back to ELF addresses.
//! A writable segment holds what the process wrote since (relocated pointers, data, maybe
//! secrets): it is left as zeros, but for the dynamic segment; the read-only segments are the
//! file's bytes exactly.
//!
//! Memory is read through a function (in the agent, [`crate::os::read_own_memory`]: a library
//! unloaded meanwhile is an error, never a fault), so the rebuild is tested from files too.

use std::io;

const EHDR_BYTES: usize = 64;
const PHDR_BYTES: usize = 56;
const SHDR_BYTES: usize = 64;
const SYM_BYTES: u64 = 24;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_NOTE: u32 = 4;
const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
const PF_X: u32 = 1;
const PF_W: u32 = 2;

const SHT_PROGBITS: u32 = 1;
const SHT_STRTAB: u32 = 3;
const SHT_DYNAMIC: u32 = 6;
const SHT_NOTE: u32 = 7;
const SHT_DYNSYM: u32 = 11;
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;
const SHN_LORESERVE: u16 = 0xff00;
const SHN_ABS: u16 = 0xfff1;

/// The note the rebuilt file carries in `.jfrnative.rebuilt`.
pub const REBUILT_NOTE: &str = "rebuilt by jfr-native from the memory of the process that \
loaded it: loadable segments, dynamic symbols, call-frame information and build-id; no .symtab, \
no DWARF";

/// The ELF machine of the libraries this agent unwinds.
const MACHINE: u16 = crate::arch::ELF_MACHINE;

/// Most program headers accepted.
const MAX_PHDRS: usize = 512;

/// A rebuilt file and what went into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    /// The file.
    pub bytes: Vec<u8>,
    /// Dynamic symbols it lists.
    pub symbols: usize,
    /// Whether it has call-frame information (`.eh_frame`).
    pub eh_frame: bool,
    /// Loadable segments that could not be read (their bytes are zeros).
    pub unreadable_segments: usize,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}
fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = b.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// The loadable segments and where they put ELF addresses in the file.
struct Layout {
    loads: Vec<Segment>,
}

impl Layout {
    /// The file offset of ELF address `vaddr`, if a segment's file bytes hold it.
    fn offset_of(&self, vaddr: u64) -> Option<usize> {
        self.loads
            .iter()
            .find(|s| s.vaddr <= vaddr && vaddr < s.vaddr.saturating_add(s.filesz))
            .and_then(|s| usize::try_from(s.offset.saturating_add(vaddr - s.vaddr)).ok())
    }

    /// The end (file offset) of the segment bytes holding `vaddr`.
    fn segment_end(&self, vaddr: u64) -> Option<usize> {
        self.loads
            .iter()
            .find(|s| s.vaddr <= vaddr && vaddr < s.vaddr.saturating_add(s.filesz))
            .and_then(|s| usize::try_from(s.offset.saturating_add(s.filesz)).ok())
    }

    /// The index (in `loads`) of the segment whose memory holds `vaddr`.
    fn load_index(&self, vaddr: u64) -> Option<usize> {
        self.loads
            .iter()
            .position(|s| s.vaddr <= vaddr && vaddr < s.vaddr.saturating_add(s.memsz))
    }

    /// `value` as an ELF address: itself if a segment holds it, else less the load bias if
    /// that is in a segment (a pointer the loader relocated in place).
    fn unrelocated(&self, value: u64, bias: u64) -> Option<u64> {
        if self.load_index(value).is_some() {
            return Some(value);
        }
        value
            .checked_sub(bias)
            .filter(|&v| bias != 0 && self.load_index(v).is_some())
    }
}

/// Rebuilds the file of the library whose lowest mapping (file offset 0) starts at `base`.
/// `read(address, buf)` fills `buf` from memory; `max_bytes` bounds the file.
pub fn rebuild(
    base: u64,
    page_size: u64,
    max_bytes: u64,
    read: &dyn Fn(u64, &mut [u8]) -> io::Result<()>,
) -> Result<Rebuilt, String> {
    let mut ehdr = [0u8; EHDR_BYTES];
    read(base, &mut ehdr).map_err(|e| format!("cannot read its ELF header: {e}"))?;
    if ehdr[..4] != *b"\x7fELF" || ehdr[4] != 2 || ehdr[5] != 1 || ehdr[6] != 1 {
        return Err("no 64-bit little-endian ELF header at its base".into());
    }
    if u16_at(&ehdr, 0x12) != Some(MACHINE) {
        return Err("not an ELF file of this machine".into());
    }
    let phoff = u64_at(&ehdr, 0x20).unwrap_or(0);
    let phnum = usize::from(u16_at(&ehdr, 0x38).unwrap_or(0));
    if u16_at(&ehdr, 0x36) != Some(PHDR_BYTES as u16) || phnum == 0 || phnum > MAX_PHDRS {
        return Err("implausible program headers".into());
    }
    let mut phdrs = vec![0u8; phnum * PHDR_BYTES];
    read(base.wrapping_add(phoff), &mut phdrs)
        .map_err(|e| format!("cannot read its program headers: {e}"))?;
    let segments: Vec<Segment> = phdrs
        .chunks_exact(PHDR_BYTES)
        .map(|p| Segment {
            kind: u32_at(p, 0).unwrap_or(0),
            flags: u32_at(p, 4).unwrap_or(0),
            offset: u64_at(p, 8).unwrap_or(0),
            vaddr: u64_at(p, 16).unwrap_or(0),
            filesz: u64_at(p, 32).unwrap_or(0),
            memsz: u64_at(p, 40).unwrap_or(0),
        })
        .collect();
    let mut loads: Vec<Segment> = segments
        .iter()
        .copied()
        .filter(|s| s.kind == PT_LOAD)
        .collect();
    loads.sort_by_key(|s| s.vaddr);
    let first = loads.first().ok_or("no loadable segment")?;
    let bias = base
        .checked_sub(first.vaddr & !(page_size - 1))
        .ok_or("its base is below its first segment")?;
    let file_len = loads
        .iter()
        .map(|s| s.offset.saturating_add(s.filesz))
        .max()
        .unwrap_or(0);
    if file_len > max_bytes || loads.iter().any(|s| s.filesz > s.memsz) {
        return Err(format!("implausible segments ({file_len} bytes of file)"));
    }
    let mut bytes = vec![0u8; file_len as usize];
    let mut unreadable_segments = 0;
    for s in &loads {
        let at = s.offset as usize;
        let dst = &mut bytes[at..at + s.filesz as usize];
        if read(bias.wrapping_add(s.vaddr), dst).is_err() {
            dst.fill(0);
            unreadable_segments += 1;
        }
    }
    // What the process wrote into its writable segments (data, relocated pointers, secrets in
    // initialised globals) is not the file's and does not leave the process: zeros, but for
    // the dynamic segment (its pointers are taken back to ELF addresses below).
    let dynamic = segments.iter().find(|s| s.kind == PT_DYNAMIC).copied();
    for s in loads.iter().filter(|s| s.flags & PF_W != 0) {
        let (start, end) = (s.offset as usize, (s.offset + s.filesz) as usize);
        let keep = dynamic
            .filter(|d| s.vaddr <= d.vaddr && d.vaddr < s.vaddr.saturating_add(s.filesz))
            .map(|d| {
                let from = start + (d.vaddr - s.vaddr) as usize;
                (from, from.saturating_add(d.filesz as usize).min(end))
            });
        match keep {
            Some((from, to)) => {
                bytes[start..from].fill(0);
                bytes[to..end].fill(0);
            }
            None => bytes[start..end].fill(0),
        }
    }
    // The headers as read at the base, whatever the segments held (a segment that could not
    // be read, or none at offset 0): the file is an ELF file with these program headers.
    if bytes.len() < EHDR_BYTES {
        bytes.resize(EHDR_BYTES, 0);
    }
    put(&mut bytes, 0, &ehdr);
    let in_place = usize::try_from(phoff).ok().filter(|&at| {
        at >= EHDR_BYTES && at % 8 == 0 && at.saturating_add(phdrs.len()) <= bytes.len()
    });
    let ph_at = match in_place {
        Some(at) => at,
        // Where the segments do not hold them: after the segments, and the header says so.
        None => {
            let at = bytes.len().next_multiple_of(8);
            bytes.resize(at, 0);
            bytes.extend_from_slice(&phdrs);
            put(&mut bytes, 0x20, &(at as u64).to_le_bytes());
            at
        }
    };
    let mut headers = [0u8; EHDR_BYTES];
    headers.copy_from_slice(&bytes[..EHDR_BYTES]);
    let layout = Layout { loads };
    let mut sections = Sections::default();
    for s in &layout.loads {
        let (name, flags) = if s.flags & PF_X != 0 {
            (".text", SHF_ALLOC | SHF_EXECINSTR)
        } else if s.flags & PF_W != 0 {
            (".data", SHF_ALLOC | SHF_WRITE)
        } else {
            (".rodata", SHF_ALLOC)
        };
        sections.add(name, SHT_PROGBITS, flags, s.vaddr, s.offset, s.filesz);
    }
    let dynamic = segments.iter().find(|s| s.kind == PT_DYNAMIC);
    let symbols = match dynamic {
        Some(d) => dynamic_symbols(&mut bytes, &layout, bias, d, &mut sections),
        None => 0,
    };
    let eh_frame = segments
        .iter()
        .find(|s| s.kind == PT_GNU_EH_FRAME)
        .is_some_and(|hdr| eh_frame_sections(&bytes, &layout, hdr, &mut sections));
    for note in segments.iter().filter(|s| s.kind == PT_NOTE) {
        build_id_section(&bytes, &layout, note, &mut sections);
    }
    // The headers again, over whatever the fixes above wrote where they overlap.
    put(&mut bytes, 0, &headers);
    put(&mut bytes, ph_at, &phdrs);
    let bytes = sections.finish(bytes);
    Ok(Rebuilt {
        bytes,
        symbols,
        eh_frame,
        unreadable_segments,
    })
}

/// Dynamic tags whose pointers glibc relocates in place.
const POINTER_TAGS: [u64; 13] = [
    36,          // DT_RELR
    3,           // DT_PLTGOT
    4,           // DT_HASH
    5,           // DT_STRTAB
    6,           // DT_SYMTAB
    7,           // DT_RELA
    17,          // DT_REL
    23,          // DT_JMPREL
    0x6fff_fef5, // DT_GNU_HASH
    0x6fff_fff0, // DT_VERSYM
    0x6fff_fffc, // DT_VERDEF
    0x6fff_fffe, // DT_VERNEED
    0x6fff_fef6, // DT_TLSDESC_GOT (x86_64)
];

/// Reads the dynamic segment (taking relocated pointers back to ELF addresses in `bytes`), adds
/// `.dynsym` and `.dynstr`, and renumbers the symbols' sections; the number of symbols.
fn dynamic_symbols(
    bytes: &mut [u8],
    layout: &Layout,
    bias: u64,
    dynamic: &Segment,
    sections: &mut Sections,
) -> usize {
    let Some(start) = layout.offset_of(dynamic.vaddr) else {
        return 0;
    };
    let (mut symtab, mut strtab, mut strsz, mut hash, mut gnu_hash) = (None, None, 0, None, None);
    let mut versions = Versions::default();
    let end = start.saturating_add(dynamic.filesz as usize);
    let mut at = start;
    while at + 16 <= end {
        let (Some(tag), Some(value)) = (u64_at(bytes, at), u64_at(bytes, at + 8)) else {
            break;
        };
        if tag == 0 {
            break;
        }
        let value = if POINTER_TAGS.contains(&tag) {
            let v = layout.unrelocated(value, bias).unwrap_or(value);
            put(bytes, at + 8, &v.to_le_bytes());
            v
        } else {
            value
        };
        match tag {
            4 => hash = Some(value),
            5 => strtab = Some(value),
            6 => symtab = Some(value),
            10 => strsz = value,
            0x6fff_fef5 => gnu_hash = Some(value),
            0x6fff_fff0 => versions.versym = Some(value),
            0x6fff_fffc => versions.verdef = Some(value),
            0x6fff_fffd => versions.verdef_count = value,
            0x6fff_fffe => versions.verneed = Some(value),
            0x6fff_ffff => versions.verneed_count = value,
            _ => {}
        }
        at += 16;
    }
    let (Some(symtab), Some(strtab)) = (symtab, strtab) else {
        return 0;
    };
    let (Some(sym_at), Some(str_at)) = (layout.offset_of(symtab), layout.offset_of(strtab)) else {
        return 0;
    };
    let counted = hash
        .and_then(|h| layout.offset_of(h))
        .and_then(|h| u32_at(bytes, h + 4).map(|n| n as u64))
        .or_else(|| gnu_hash.and_then(|g| gnu_hash_symbols(bytes, layout.offset_of(g)?)))
        .or_else(|| (strtab > symtab).then(|| (strtab - symtab) / SYM_BYTES));
    let sym_end = layout.segment_end(symtab).unwrap_or(sym_at);
    let count = counted
        .unwrap_or(0)
        .min(((sym_end - sym_at) as u64) / SYM_BYTES) as usize;
    let str_end = layout.segment_end(strtab).unwrap_or(str_at);
    let strsz = strsz.min((str_end - str_at) as u64);
    // The segments' sections are numbered 1.. in `layout.loads`' order. `.dynsym`'s sh_info is
    // one past its last local symbol: the index of the first non-local one.
    let mut first_global = count;
    for i in 0..count {
        let entry = sym_at + i * SYM_BYTES as usize;
        let (Some(shndx), Some(value)) = (u16_at(bytes, entry + 6), u64_at(bytes, entry + 8))
        else {
            break;
        };
        if i > 0 && first_global == count && bytes.get(entry + 4).is_some_and(|info| info >> 4 != 0)
        {
            first_global = i;
        }
        if shndx != 0 && shndx < SHN_LORESERVE {
            let renumbered = layout
                .load_index(value)
                .and_then(|i| u16::try_from(i + 1).ok())
                .unwrap_or(SHN_ABS);
            put(bytes, entry + 6, &renumbered.to_le_bytes());
        }
    }
    let dynstr = sections.next_index() + 1;
    sections.add_linked(
        ".dynsym",
        SHT_DYNSYM,
        SHF_ALLOC,
        (symtab, sym_at as u64, count as u64 * SYM_BYTES),
        (dynstr as u32, first_global.max(1) as u32, SYM_BYTES),
    );
    sections.add(
        ".dynstr",
        SHT_STRTAB,
        SHF_ALLOC,
        strtab,
        str_at as u64,
        strsz,
    );
    let place = (dynamic.vaddr, start as u64, dynamic.filesz);
    sections.add_linked(
        ".dynamic",
        SHT_DYNAMIC,
        SHF_ALLOC | SHF_WRITE,
        place,
        (dynstr as u32, 0, 16),
    );
    versions.add_sections(bytes, layout, count, sections);
    count
}

/// The symbol-version tables the dynamic segment names (`nm -D` shows `name@@VERSION`).
#[derive(Default)]
struct Versions {
    versym: Option<u64>,
    verdef: Option<u64>,
    verdef_count: u64,
    verneed: Option<u64>,
    verneed_count: u64,
}

const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;
const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
const SHT_GNU_VERSYM: u32 = 0x6fff_ffff;

impl Versions {
    /// Adds `.gnu.version`, `.gnu.version_d` and `.gnu.version_r`, after `.dynsym`, `.dynstr`
    /// and `.dynamic` (the three sections added last).
    fn add_sections(&self, bytes: &[u8], layout: &Layout, symbols: usize, sections: &mut Sections) {
        let dynsym = sections.next_index() as u32 - 3;
        let dynstr = dynsym + 1;
        if let Some((v, at)) = self.versym.and_then(|v| Some((v, layout.offset_of(v)?))) {
            let place = (v, at as u64, symbols as u64 * 2);
            sections.add_linked(
                ".gnu.version",
                SHT_GNU_VERSYM,
                SHF_ALLOC,
                place,
                (dynsym, 0, 2),
            );
        }
        // Each list: entries of `entry` bytes chained by the u32 at `next_at`, each with `count`
        // (u16 at `count_at`) aux entries of `aux` bytes chained from the u32 at `aux_at`.
        let lists = [
            (
                ".gnu.version_d",
                SHT_GNU_VERDEF,
                self.verdef,
                self.verdef_count,
                (6, 12, 16, 4),
            ),
            (
                ".gnu.version_r",
                SHT_GNU_VERNEED,
                self.verneed,
                self.verneed_count,
                (2, 8, 12, 12),
            ),
        ];
        for (name, kind, start, count, shape) in lists {
            let Some((v, at)) = start.and_then(|v| Some((v, layout.offset_of(v)?))) else {
                continue;
            };
            let end = layout.segment_end(v).unwrap_or(at);
            let size = version_list_size(bytes, at, end, count, shape);
            let place = (v, at as u64, size as u64);
            sections.add_linked(name, kind, SHF_ALLOC, place, (dynstr, count as u32, 0));
        }
    }
}

/// The bytes a version-definition or version-need list at `at` takes: `entries` entries, each
/// with its aux entries; `(count_at, aux_at, next_at, aux_next_at)` place the fields in them.
fn version_list_size(
    bytes: &[u8],
    at: usize,
    end: usize,
    entries: u64,
    (count_at, aux_at, next_at, aux_next_at): (usize, usize, usize, usize),
) -> usize {
    let entry_bytes = next_at + 4;
    let aux_bytes = aux_next_at + 4;
    let mut last = at;
    let mut entry = at;
    for _ in 0..entries.min(4096) {
        if entry + entry_bytes > end {
            break;
        }
        last = last.max(entry + entry_bytes);
        // A version has a name and a few parents at most: a larger count is damage.
        let count = u16_at(bytes, entry + count_at).unwrap_or(0).min(64);
        let mut aux = entry + u32_at(bytes, entry + aux_at).unwrap_or(0) as usize;
        for _ in 0..count {
            if aux + aux_bytes > end {
                break;
            }
            last = last.max(aux + aux_bytes);
            match u32_at(bytes, aux + aux_next_at) {
                Some(0) | None => break,
                Some(n) => aux += n as usize,
            }
        }
        match u32_at(bytes, entry + next_at) {
            Some(0) | None => break,
            Some(n) => entry += n as usize,
        }
    }
    last - at
}

/// The number of symbols a `DT_GNU_HASH` table at file offset `at` covers: one past the last
/// chain's end (symbols below `symoffset` are not hashed).
fn gnu_hash_symbols(bytes: &[u8], at: usize) -> Option<u64> {
    let nbuckets = u32_at(bytes, at)? as usize;
    let symoffset = u32_at(bytes, at + 4)?;
    let bloom_words = u32_at(bytes, at + 8)? as usize;
    let buckets_at = at
        .checked_add(16)?
        .checked_add(bloom_words.checked_mul(8)?)?;
    let chains_at = buckets_at.checked_add(nbuckets.checked_mul(4)?)?;
    let mut last = 0u32;
    for b in 0..nbuckets {
        last = last.max(u32_at(bytes, buckets_at + b * 4)?);
    }
    if last < symoffset {
        return Some(u64::from(symoffset));
    }
    let mut index = last;
    loop {
        let chain = u32_at(bytes, chains_at + (index - symoffset) as usize * 4)?;
        if chain & 1 != 0 {
            return Some(u64::from(index) + 1);
        }
        index = index.checked_add(1)?;
    }
}

/// Adds `.eh_frame_hdr` and `.eh_frame` (found through the header's `eh_frame_ptr`); whether
/// `.eh_frame` was found.
fn eh_frame_sections(
    bytes: &[u8],
    layout: &Layout,
    hdr: &Segment,
    sections: &mut Sections,
) -> bool {
    let Some(hdr_at) = layout.offset_of(hdr.vaddr) else {
        return false;
    };
    sections.add(
        ".eh_frame_hdr",
        SHT_PROGBITS,
        SHF_ALLOC,
        hdr.vaddr,
        hdr_at as u64,
        hdr.filesz,
    );
    if bytes.get(hdr_at) != Some(&1) {
        return false;
    }
    let Some(encoding) = bytes.get(hdr_at + 1).copied() else {
        return false;
    };
    let field = hdr.vaddr.wrapping_add(4);
    let Some(start) = read_encoded(bytes, hdr_at + 4, field, hdr.vaddr, encoding) else {
        return false;
    };
    let (Some(at), Some(end)) = (layout.offset_of(start), layout.segment_end(start)) else {
        return false;
    };
    let size = cfi_length(bytes, at, end);
    sections.add(
        ".eh_frame",
        SHT_PROGBITS,
        SHF_ALLOC,
        start,
        at as u64,
        size as u64,
    );
    size > 0
}

/// An `.eh_frame_hdr` pointer at file offset `at` (ELF address `field`), in `encoding`.
fn read_encoded(bytes: &[u8], at: usize, field: u64, hdr: u64, encoding: u8) -> Option<u64> {
    let raw: i64 = match encoding & 0x0f {
        0x00 | 0x04 => u64_at(bytes, at)? as i64,
        0x0c => u64_at(bytes, at)? as i64,
        0x03 => i64::from(u32_at(bytes, at)?),
        0x0b => i64::from(u32_at(bytes, at)? as i32),
        0x02 => i64::from(u16_at(bytes, at)?),
        0x0a => i64::from(u16_at(bytes, at)? as i16),
        _ => return None,
    };
    let base = match encoding & 0x70 {
        0x00 => 0,
        0x10 => field,
        0x30 => hdr,
        _ => return None,
    };
    Some(base.wrapping_add(raw as u64))
}

/// The length of the CIEs and FDEs from file offset `at`, through the zero terminator, within
/// `end`.
fn cfi_length(bytes: &[u8], at: usize, end: usize) -> usize {
    let mut next = at;
    while next + 4 <= end {
        let Some(length) = u32_at(bytes, next) else {
            break;
        };
        let step = match length {
            0 => {
                next += 4;
                break;
            }
            0xffff_ffff => u64_at(bytes, next + 4)
                .and_then(|l| usize::try_from(l).ok())
                .and_then(|l| l.checked_add(12)),
            l => Some(l as usize + 4),
        };
        match step.and_then(|s| next.checked_add(s)).filter(|&n| n <= end) {
            Some(n) => next = n,
            None => break,
        }
    }
    next.min(end) - at
}

/// Adds `.note.gnu.build-id` for the GNU build-id note in `note`, if it holds one.
fn build_id_section(bytes: &[u8], layout: &Layout, note: &Segment, sections: &mut Sections) {
    let Some(start) = layout.offset_of(note.vaddr) else {
        return;
    };
    let end = start.saturating_add(note.filesz as usize);
    let align4 = |n: usize| (n + 3) & !3;
    let mut at = start;
    while at + 12 <= end {
        let (Some(namesz), Some(descsz), Some(kind)) = (
            u32_at(bytes, at),
            u32_at(bytes, at + 4),
            u32_at(bytes, at + 8),
        ) else {
            return;
        };
        let size = 12 + align4(namesz as usize) + align4(descsz as usize);
        if kind == 3 && bytes.get(at + 12..at + 16) == Some(b"GNU\0") {
            let vaddr = note.vaddr.wrapping_add((at - start) as u64);
            sections.add(
                ".note.gnu.build-id",
                SHT_NOTE,
                SHF_ALLOC,
                vaddr,
                at as u64,
                size as u64,
            );
            return;
        }
        at += size;
    }
}

/// The section headers being made.
#[derive(Default)]
struct Sections {
    names: Vec<u8>,
    headers: Vec<[u8; SHDR_BYTES]>,
}

impl Sections {
    /// The index the next section added gets (the null section is 0).
    fn next_index(&self) -> usize {
        self.headers.len() + 1
    }

    fn add(&mut self, name: &str, kind: u32, flags: u64, addr: u64, offset: u64, size: u64) {
        self.add_linked(name, kind, flags, (addr, offset, size), (0, 0, 0));
    }

    /// A section at `(addr, offset, size)` with `(link, info, entsize)`.
    fn add_linked(
        &mut self,
        name: &str,
        kind: u32,
        flags: u64,
        (addr, offset, size): (u64, u64, u64),
        (link, info, entsize): (u32, u32, u64),
    ) {
        if self.names.is_empty() {
            self.names.push(0);
        }
        let name_at = self.names.len() as u32;
        self.names.extend_from_slice(name.as_bytes());
        self.names.push(0);
        let mut h = [0u8; SHDR_BYTES];
        put(&mut h, 0, &name_at.to_le_bytes());
        put(&mut h, 4, &kind.to_le_bytes());
        put(&mut h, 8, &flags.to_le_bytes());
        put(&mut h, 16, &addr.to_le_bytes());
        put(&mut h, 24, &offset.to_le_bytes());
        put(&mut h, 32, &size.to_le_bytes());
        put(&mut h, 40, &link.to_le_bytes());
        put(&mut h, 44, &info.to_le_bytes());
        let align: u64 = if entsize > 0 { 8 } else { 1 };
        put(&mut h, 48, &align.to_le_bytes());
        put(&mut h, 56, &entsize.to_le_bytes());
        self.headers.push(h);
    }

    /// Appends the rebuild note, the section names and the section headers to `bytes`, and
    /// points the ELF header at them.
    fn finish(mut self, mut bytes: Vec<u8>) -> Vec<u8> {
        let note_at = bytes.len() as u64;
        bytes.extend_from_slice(REBUILT_NOTE.as_bytes());
        self.add(
            ".jfrnative.rebuilt",
            SHT_PROGBITS,
            0,
            0,
            note_at,
            REBUILT_NOTE.len() as u64,
        );
        let shstrtab = self.next_index();
        self.add(".shstrtab", SHT_STRTAB, 0, 0, 0, 0);
        let names_at = bytes.len() as u64;
        bytes.extend_from_slice(&self.names);
        if let Some(h) = self.headers.last_mut() {
            put(h, 24, &names_at.to_le_bytes());
            put(h, 32, &(self.names.len() as u64).to_le_bytes());
        }
        bytes.resize(bytes.len().next_multiple_of(8), 0);
        let shoff = bytes.len() as u64;
        bytes.extend_from_slice(&[0u8; SHDR_BYTES]);
        for h in &self.headers {
            bytes.extend_from_slice(h);
        }
        put(&mut bytes, 0x28, &shoff.to_le_bytes());
        put(&mut bytes, 0x3a, &(SHDR_BYTES as u16).to_le_bytes());
        put(
            &mut bytes,
            0x3c,
            &((self.headers.len() + 1) as u16).to_le_bytes(),
        );
        put(&mut bytes, 0x3e, &(shstrtab as u16).to_le_bytes());
        bytes
    }
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;
