//! MiniDebugInfo: the `.gnu_debugdata` section some distributions (Fedora, CentOS) add to
//! stripped libraries. It holds an xz-compressed ELF file whose `.symtab` has the function
//! symbols that `.dynsym` lacks (static functions), at the library's own addresses. The two
//! tables are merged: `.dynsym` for the exported functions, MiniDebugInfo for the others.

use std::io::{self, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};

use object::{Object, ObjectSection};

use super::image::ElfImage;
use super::symbols::SymbolTable;

/// The largest decompressed size accepted. A MiniDebugInfo holds symbols only (a few MiB for
/// the largest libraries); more is damage or a hostile file.
pub const MAX_DECOMPRESSED: usize = 256 << 20;

/// A library's `.dynsym` merged with the `.symtab` of its MiniDebugInfo.
pub struct MiniDebugInfo {
    table: SymbolTable,
    names: Vec<u8>,
    /// How many function symbols the MiniDebugInfo itself added.
    pub added: usize,
}

impl MiniDebugInfo {
    /// Decompresses and reads `library`'s `.gnu_debugdata`: `Ok(None)` if it has none, an
    /// error if the section, the xz stream or the ELF file in it is damaged.
    pub fn load(library: &ElfImage) -> Result<Option<MiniDebugInfo>, String> {
        let Some(file) = library.object() else {
            return Ok(None);
        };
        let Some(section) = file.section_by_name(".gnu_debugdata") else {
            return Ok(None);
        };
        let compressed = section.data().map_err(|e| format!(".gnu_debugdata: {e}"))?;
        let elf = decompress_xz(compressed).map_err(|e| format!(".gnu_debugdata: {e}"))?;
        let inner = object::File::parse(elf.as_slice())
            .map_err(|e| format!(".gnu_debugdata: not an ELF file: {e}"))?;
        if inner.format() != object::BinaryFormat::Elf {
            return Err(".gnu_debugdata: not an ELF file".into());
        }
        let added = SymbolTable::read(&inner, &elf).len();
        let (table, names) = SymbolTable::merged(&[(&file, library.bytes()), (&inner, &elf)]);
        Ok(Some(MiniDebugInfo {
            table,
            names,
            added,
        }))
    }

    /// The merged table and the bytes its names are in, as [`ElfImage::symbols`] and
    /// [`ElfImage::bytes`] give them for one file.
    pub fn symbols(&self) -> (&SymbolTable, &[u8]) {
        (&self.table, &self.names)
    }
}

/// Decompresses one xz stream, at most [`MAX_DECOMPRESSED`] bytes. Damaged input is an error,
/// never a panic: the decoder's own arithmetic is not trusted on hostile input either.
pub fn decompress_xz(compressed: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Bounded {
        bytes: Vec::with_capacity(compressed.len().saturating_mul(4).min(MAX_DECOMPRESSED)),
        limit: MAX_DECOMPRESSED,
    };
    let mut input = compressed;
    let result = catch_unwind(AssertUnwindSafe(|| {
        lzma_rs::xz_decompress(&mut input, &mut out)
    }));
    match result {
        Ok(Ok(())) => Ok(out.bytes),
        Ok(Err(e)) => Err(format!("bad xz data: {e}")),
        Err(_) => Err("bad xz data: the decoder failed".into()),
    }
}

/// A `Vec` writer that refuses to grow past `limit`.
struct Bounded {
    bytes: Vec<u8>,
    limit: usize,
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.limit {
            return Err(io::Error::other(format!(
                "more than {} MiB decompressed",
                self.limit >> 20
            )));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xz(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut input = data;
        lzma_rs::xz_compress(&mut input, &mut out).expect("compress");
        out
    }

    /// Found by the fuzz target elf_reader: an xz footer whose backward size is 2^32 - 1 makes
    /// lzma-rs 0.3.0 overflow (`backward_size + 1`, a panic where overflow is checked). It is
    /// an error here, never a panic.
    #[test]
    fn a_footer_whose_backward_size_overflows_is_an_error() {
        let mut bytes = xz(b"some symbols");
        let n = bytes.len();
        // The footer: CRC32, backward size, flags, "YZ".
        assert_eq!(&bytes[n - 2..], b"YZ");
        bytes[n - 8..n - 4].copy_from_slice(&[0xff; 4]);
        assert!(decompress_xz(&bytes).is_err());
    }

    #[test]
    fn round_trip() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        assert_eq!(decompress_xz(&xz(&data)).as_deref(), Ok(data.as_slice()));
    }

    #[test]
    fn damaged_streams_are_errors() {
        let data: Vec<u8> = (0..20_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect();
        let good = xz(&data);
        assert!(decompress_xz(&[]).is_err());
        assert!(decompress_xz(b"not xz at all").is_err());
        for cut in [1, 6, 12, 13, good.len() / 2, good.len() - 1] {
            assert!(decompress_xz(&good[..cut]).is_err(), "cut at {cut}");
        }
        // Every byte flipped in turn: an error or (where the stream has no check on that
        // byte) some output, never a panic that escapes.
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x5a;
            let _ = decompress_xz(&bad);
        }
        // The stream footer's Backward Size at its largest: lzma-rs 0.3 adds 1 to it in u32
        // (an overflow panic in a debug build), caught and reported as damage.
        let mut bad = good.clone();
        let at = bad.len() - 8;
        bad[at..at + 4].copy_from_slice(&[0xff; 4]);
        assert!(decompress_xz(&bad).is_err());
    }

    #[test]
    fn output_is_bounded() {
        let mut out = Bounded {
            bytes: Vec::new(),
            limit: 10,
        };
        assert!(out.write_all(&[0; 8]).is_ok());
        assert!(out.write_all(&[0; 3]).is_err());
        assert_eq!(out.bytes.len(), 8);
    }
}
