//! One ELF file on disk (or an image read into memory: the vDSO): its build-id, its loadable
//! segments, its symbols and its unwind ranges, read once and kept with the file's map.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use object::{Object, ObjectSection, ObjectSegment};

use super::function_starts::FunctionStarts;
use super::mapped::Mapped;
use super::symbols::SymbolTable;

/// A `PT_LOAD` segment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// `p_offset`.
    pub file_offset: u64,
    /// `p_vaddr`.
    pub address: u64,
    /// `p_filesz`.
    pub file_size: u64,
}

/// A mapped and indexed ELF file.
pub struct ElfImage {
    /// Where it was read from.
    pub path: PathBuf,
    map: Mapped,
    /// The GNU build-id note.
    pub build_id: Option<Vec<u8>>,
    /// Loadable segments.
    pub segments: Vec<Segment>,
    /// `.gnu_debuglink`: the debug file's name and CRC-32.
    pub debuglink: Option<(String, u32)>,
    /// Whether the file carries `.debug_info`.
    pub has_dwarf: bool,
    /// Whether the file carries a non-empty `.symtab`.
    pub has_symtab: bool,
    /// Whether jfr-native's agent rebuilt the file from a process's memory (its file was
    /// deleted after loading): it holds dynamic symbols and call-frame information only.
    pub rebuilt: bool,
    symbols: OnceLock<SymbolTable>,
    starts: OnceLock<FunctionStarts>,
}

impl ElfImage {
    /// Maps and indexes `path`.
    pub fn open(path: &Path) -> Result<ElfImage, String> {
        let map = Mapped::open(path).map_err(|e| e.to_string())?;
        ElfImage::index(path, map)
    }

    /// Indexes an image read into memory; `label` says where it came from.
    pub fn from_bytes(label: &Path, bytes: Vec<u8>) -> Result<ElfImage, String> {
        ElfImage::index(label, Mapped::Bytes(Arc::from(bytes)))
    }

    fn index(path: &Path, map: Mapped) -> Result<ElfImage, String> {
        let file = object::File::parse(map.bytes()).map_err(|e| format!("not an ELF file: {e}"))?;
        if file.format() != object::BinaryFormat::Elf {
            return Err("not an ELF file".into());
        }
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let debuglink = file
            .gnu_debuglink()
            .ok()
            .flatten()
            .map(|(name, crc)| (String::from_utf8_lossy(name).into_owned(), crc));
        let segments = file
            .segments()
            .map(|s| {
                let (file_offset, file_size) = s.file_range();
                Segment {
                    file_offset,
                    address: s.address(),
                    file_size,
                }
            })
            .collect();
        let has_dwarf = file
            .section_by_name(".debug_info")
            .is_some_and(|s| s.kind() != object::SectionKind::UninitializedData && s.size() > 0);
        let has_symtab = file
            .section_by_name(".symtab")
            .is_some_and(|s| s.size() > 0);
        let rebuilt = file.section_by_name(".jfrnative.rebuilt").is_some();
        Ok(ElfImage {
            has_symtab,
            rebuilt,
            path: path.to_path_buf(),
            build_id,
            segments,
            debuglink,
            has_dwarf,
            symbols: OnceLock::new(),
            starts: OnceLock::new(),
            map,
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }

    /// The file parsed again (cheap: headers only).
    pub fn object(&self) -> Option<object::File<'_>> {
        object::File::parse(self.map.bytes()).ok()
    }

    /// The build-id as lower-case hex.
    pub fn build_id_hex(&self) -> Option<String> {
        self.build_id.as_deref().map(hex)
    }

    /// The virtual address that file offset `offset` is loaded at: the segment whose
    /// page-aligned file range holds it, as the loader maps it.
    pub fn address_of_file_offset(&self, offset: u64) -> Option<u64> {
        const PAGE: u64 = 4096;
        self.segments.iter().find_map(|s| {
            let aligned = s.file_offset & !(PAGE - 1);
            let slack = s.file_offset - aligned;
            // Saturating: a damaged or hostile header's p_offset + p_filesz may not fit in a u64
            // (found by the fuzz target elf_reader).
            let end = s.file_offset.saturating_add(s.file_size);
            (aligned <= offset && offset < end)
                .then(|| s.address.wrapping_sub(slack).wrapping_add(offset - aligned))
        })
    }

    /// Sized function symbols (read on first use).
    pub fn symbols(&self) -> &SymbolTable {
        self.symbols.get_or_init(|| match self.object() {
            Some(file) => SymbolTable::read(&file, self.map.bytes()),
            None => SymbolTable::default(),
        })
    }

    /// `.eh_frame` function ranges (read on first use).
    pub fn function_starts(&self) -> &FunctionStarts {
        self.starts.get_or_init(|| match self.object() {
            Some(file) => FunctionStarts::read(&file),
            None => FunctionStarts::default(),
        })
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_elf::{elf, Load};
    use super::*;

    /// Found by the fuzz target elf_reader: a segment whose end is past 2^64 made the offset
    /// lookup overflow (a panic in debug builds).
    #[test]
    fn a_segment_ending_past_the_address_space_is_no_panic() {
        let bytes = elf(&[Load(0x1000, 0x1000, u64::MAX - 0x10)], &[]);
        let image = ElfImage::from_bytes(Path::new("overflow.so"), bytes).unwrap();
        assert_eq!(image.segments.len(), 1);
        assert_eq!(image.address_of_file_offset(0x1010), Some(0x1010));
        assert_eq!(image.address_of_file_offset(0x10), None);
    }
}
