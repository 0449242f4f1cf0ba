//! DWARF line and inline information through `addr2line`, with compressed sections (zlib and
//! zstd) decompressed by `object`.

use std::borrow::Cow;
use std::sync::Arc;

use addr2line::Context;
use gimli::{EndianReader, RunTimeEndian, SectionId};
use object::{Object, ObjectSection};

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
                    .and_then(|s| s.uncompressed_data().ok())
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
