//! DWARF line and inline information through `addr2line`, with compressed sections (zlib and
//! zstd) decompressed by `object`.

use std::borrow::Cow;
use std::sync::Arc;

use addr2line::Context;
use gimli::{EndianReader, RunTimeEndian, SectionId};
use object::{CompressionFormat, Object, ObjectSection};

use super::image::ElfImage;

/// The reader type: sections copied (or decompressed) once into shared buffers.
pub type Reader = EndianReader<RunTimeEndian, Arc<[u8]>>;

/// Sections `addr2line` reads for functions, inlining and lines; others are never loaded.
const NEEDED: &[SectionId] = &[
    SectionId::DebugAbbrev,
    SectionId::DebugAddr,
    SectionId::DebugAranges,
    SectionId::DebugInfo,
    SectionId::DebugLine,
    SectionId::DebugLineStr,
    SectionId::DebugRanges,
    SectionId::DebugRngLists,
    SectionId::DebugStr,
    SectionId::DebugStrOffsets,
];

/// The most a compressed section may claim to expand to, per compressed byte: deflate's own
/// maximum ratio. Real DWARF compresses 3-10 times with zlib or zstd.
const MAX_EXPANSION: u64 = 1032;

/// A section's contents, decompressed; `None` if it cannot be read, or if it is compressed and
/// its header claims more than [`MAX_EXPANSION`] times its compressed size. `object` reserves
/// the claimed size before reading a byte, and flate2 zero-fills it: 18 KB of file claiming
/// 4 GiB took 2 GB of memory (found by the fuzz target elf_reader).
fn section_bytes<'d>(section: &impl ObjectSection<'d>) -> Option<Cow<'d, [u8]>> {
    let compressed = section.compressed_data().ok()?;
    let most = (compressed.data.len() as u64).saturating_mul(MAX_EXPANSION);
    if compressed.format != CompressionFormat::None && compressed.uncompressed_size > most {
        return None;
    }
    compressed.decompress().ok()
}

/// One frame of DWARF's answer, innermost first.
#[derive(Debug, Clone, PartialEq)]
pub struct DwarfFrame {
    /// Function name, demangled.
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Source line (DWARF line 0 means none and is given as `None`).
    pub line: Option<u32>,
}

/// An `addr2line` context over one file's DWARF.
pub struct Dwarf {
    context: Context<Reader>,
}

impl Dwarf {
    /// Loads the DWARF of `image`; `None` if it has none or it does not parse.
    pub fn load(image: &ElfImage) -> Option<Dwarf> {
        if !image.has_dwarf {
            return None;
        }
        let file = image.object()?;
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let load = |id: SectionId| -> Result<Reader, gimli::Error> {
            let data: Cow<'_, [u8]> = if NEEDED.contains(&id) {
                file.section_by_name(id.name())
                    .and_then(|s| section_bytes(&s))
                    .unwrap_or(Cow::Borrowed(&[]))
            } else {
                Cow::Borrowed(&[])
            };
            Ok(EndianReader::new(Arc::from(&*data), endian))
        };
        let dwarf = gimli::Dwarf::load(load).ok()?;
        let context = Context::from_dwarf(dwarf).ok()?;
        Some(Dwarf { context })
    }

    /// The inline chain at `address`, innermost first; empty if DWARF does not cover it.
    pub fn frames(&self, address: u64) -> Vec<DwarfFrame> {
        let mut out = Vec::new();
        // addr2line looks up `[address, address + 1)`, which overflows at the last address;
        // no code is there, and a damaged recording's PC can be anything.
        if address == u64::MAX {
            return out;
        }
        let Ok(mut frames) = self.context.find_frames(address).skip_all_loads() else {
            return out;
        };
        while let Ok(Some(frame)) = frames.next() {
            let function = frame
                .function
                .as_ref()
                .and_then(|f| f.demangle().ok())
                .map(|name| name.into_owned());
            let (file, line) = match frame.location {
                Some(loc) => (loc.file.map(str::to_string), loc.line.filter(|&l| l != 0)),
                None => (None, None),
            };
            out.push(DwarfFrame {
                function,
                file,
                line,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::test_elf::{elf, Section};
    use super::*;

    /// SHF_COMPRESSED.
    const COMPRESSED: u64 = 0x800;

    /// An `Elf64_Chdr` of zlib claiming `size` bytes, then `zlib`.
    fn zlib_section(size: u64, zlib: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&1u32.to_le_bytes()); // ELFCOMPRESS_ZLIB
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&size.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes()); // ch_addralign
        b.extend_from_slice(zlib);
        b
    }

    /// Found by the fuzz target elf_reader: a compressed `.debug_info` whose header claims
    /// 4 GiB is refused before anything is allocated; one that claims what it holds is read.
    #[test]
    fn a_compressed_section_claiming_gigabytes_is_not_allocated() {
        // zlib of the 4 bytes "abcd".
        let zlib = [
            0x78, 0x9c, 0x4b, 0x4c, 0x4a, 0x4e, 0x01, 0x00, 0x03, 0xd8, 0x01, 0x8b,
        ];
        for (claimed, expected) in [(4u64 << 30, None), (4, Some(&b"abcd"[..]))] {
            let section = zlib_section(claimed, &zlib);
            let bytes = elf(&[], &[Section(".debug_info", 1, COMPRESSED, &section)]);
            let image = ElfImage::from_bytes(Path::new("bomb.so"), bytes).unwrap();
            assert!(image.has_dwarf);
            let file = image.object().unwrap();
            let got = section_bytes(&file.section_by_name(".debug_info").unwrap());
            assert_eq!(got.as_deref(), expected, "claimed {claimed}");
            // Whatever the section says, loading gives an answer, not an abort.
            let _ = Dwarf::load(&image).map(|d| d.frames(0));
        }
    }

    /// Found by the fuzz target elf_reader: addr2line looks up `[address, address + 1)`, which
    /// overflowed at the last address (a panic in debug builds); a recording's PC minus a
    /// library's bias can be any value.
    #[test]
    fn the_last_address_is_no_panic() {
        // One empty DWARF 4 unit: length 8, version 4, abbreviations at 0, 8-byte addresses,
        // a null entry.
        let info = [8, 0, 0, 0, 4, 0, 0, 0, 0, 0, 8, 0];
        let bytes = elf(
            &[],
            &[
                Section(".debug_info", 1, 0, &info),
                Section(".debug_abbrev", 1, 0, &[0]),
            ],
        );
        let image = ElfImage::from_bytes(Path::new("empty-unit.so"), bytes).unwrap();
        let dwarf = Dwarf::load(&image).expect("an empty unit is DWARF");
        assert_eq!(dwarf.frames(u64::MAX), Vec::new());
        assert_eq!(dwarf.frames(0x1000), Vec::new());
    }
}
