//! Function symbols with their sizes: a PC resolves to the symbol whose `[start, start+size)`
//! holds it, never to the nearest symbol below it.

use object::elf::STT_GNU_IFUNC;
use object::{Object, ObjectSymbol, SymbolFlags, SymbolKind};

/// One function symbol: a name, as a range of the mapped file, and the addresses it covers.
#[derive(Debug, Clone, Copy)]
struct Entry {
    start: u64,
    end: u64,
    name_offset: u32,
    name_len: u32,
    rank: u8,
}

/// A sorted table of sized function symbols.
#[derive(Debug, Default)]
pub struct SymbolTable {
    entries: Vec<Entry>,
    /// `max_end[i]` = the largest `end` among `entries[..=i]`: where a backward scan for an
    /// enclosing symbol may stop.
    max_end: Vec<u64>,
}

impl SymbolTable {
    /// Function symbols (`STT_FUNC` and `STT_GNU_IFUNC`) of `.symtab`, or of `.dynsym` when the
    /// file has no `.symtab`. `file_bytes` is the slice `object` parsed, so that names can be
    /// kept as offsets into it.
    pub fn read(file: &object::File<'_>, file_bytes: &[u8]) -> SymbolTable {
        SymbolTable::from_entries(own_entries(file, file_bytes))
    }

    /// The function symbols of several files in one table (each file's as [`SymbolTable::read`]
    /// takes them), with the names copied into the returned buffer, which the lookups take in
    /// place of the file's bytes. For a stripped library whose `.dynsym` has the exported
    /// functions and whose MiniDebugInfo has the others.
    pub fn merged(files: &[(&object::File<'_>, &[u8])]) -> (SymbolTable, Vec<u8>) {
        let mut names = Vec::new();
        let mut entries = Vec::new();
        for (file, file_bytes) in files {
            for mut e in own_entries(file, file_bytes) {
                let from = e.name_offset as usize..(e.name_offset as usize + e.name_len as usize);
                let Some(name) = file_bytes.get(from) else {
                    continue;
                };
                // Offsets and ends are kept as u32, as for a file's own table.
                let at = names.len();
                if at + name.len() > u32::MAX as usize {
                    continue;
                }
                names.extend_from_slice(name);
                e.name_offset = at as u32;
                entries.push(e);
            }
        }
        (SymbolTable::from_entries(entries), names)
    }

    fn from_entries(mut entries: Vec<Entry>) -> SymbolTable {
        // Deterministic among aliases: the earliest start first; at one address the preferred
        // binding (global, then weak, then local), then the shorter name, then the file order.
        entries.sort_unstable_by_key(|e| (e.start, e.rank, e.name_len, e.name_offset));
        entries.dedup_by_key(|e| e.start);
        let mut max_end = Vec::with_capacity(entries.len());
        let mut m = 0;
        for e in &entries {
            m = m.max(e.end);
            max_end.push(m);
        }
        SymbolTable { entries, max_end }
    }

    /// How many symbols the table holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The symbol that starts closest below or at `address`, whether or not it contains it:
    /// `(start, name bytes)`. For a name of last resort, marked with the offset from it.
    pub fn nearest_below<'a>(&self, address: u64, file_bytes: &'a [u8]) -> Option<(u64, &'a [u8])> {
        let i = self.entries.partition_point(|e| e.start <= address);
        let e = self.entries.get(i.checked_sub(1)?)?;
        let name = file_bytes.get(e.name_offset as usize..(e.name_offset + e.name_len) as usize)?;
        Some((e.start, name))
    }

    /// The innermost symbol containing `address`: `(start, name bytes)`.
    pub fn lookup<'a>(&self, address: u64, file_bytes: &'a [u8]) -> Option<(u64, &'a [u8])> {
        let upper = self.entries.partition_point(|e| e.start <= address);
        let mut i = upper;
        while i > 0 {
            i -= 1;
            if self.max_end[i] <= address {
                break;
            }
            let e = self.entries[i];
            if address < e.end {
                let name = file_bytes
                    .get(e.name_offset as usize..(e.name_offset + e.name_len) as usize)?;
                return Some((e.start, name));
            }
        }
        None
    }
}

/// `.symtab`'s function symbols, else `.dynsym`'s.
fn own_entries(file: &object::File<'_>, file_bytes: &[u8]) -> Vec<Entry> {
    let entries = collect(file.symbols(), file_bytes);
    if entries.is_empty() {
        collect(file.dynamic_symbols(), file_bytes)
    } else {
        entries
    }
}

fn collect<'data, S: ObjectSymbol<'data>>(
    symbols: impl Iterator<Item = S>,
    file_bytes: &[u8],
) -> Vec<Entry> {
    let base = file_bytes.as_ptr() as usize;
    let mut out = Vec::new();
    for s in symbols {
        // `object` reports STT_GNU_IFUNC as an unknown kind: test the ELF type itself.
        let ifunc =
            matches!(s.flags(), SymbolFlags::Elf { st_info, .. } if st_info & 0xf == STT_GNU_IFUNC);
        if !(s.kind() == SymbolKind::Text || ifunc) || s.is_undefined() || s.size() == 0 {
            continue;
        }
        let Ok(name) = s.name_bytes() else { continue };
        if name.is_empty() {
            continue;
        }
        // Names are slices of the mapped file; keep where they are, not copies.
        let offset = (name.as_ptr() as usize).wrapping_sub(base);
        if offset >= file_bytes.len()
            || offset > u32::MAX as usize
            || name.len() > u32::MAX as usize
        {
            continue;
        }
        let rank = if s.is_global() {
            0
        } else if s.is_weak() {
            1
        } else {
            2
        };
        out.push(Entry {
            start: s.address(),
            end: s.address().saturating_add(s.size()),
            name_offset: offset as u32,
            name_len: name.len() as u32,
            rank,
        });
    }
    out
}
