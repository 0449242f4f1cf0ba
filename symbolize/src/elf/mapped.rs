//! Read-only file maps: the one place in this crate that needs `unsafe`.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;

/// A whole file mapped read-only and shared, or an image read into memory (the vDSO, which
/// has no file).
#[derive(Clone)]
pub enum Mapped {
    /// A file's map.
    File(Arc<Mmap>),
    /// Bytes read whole.
    Bytes(Arc<[u8]>),
}

impl Mapped {
    /// Maps `path`.
    pub fn open(path: &Path) -> std::io::Result<Mapped> {
        let file = File::open(path)?;
        // SAFETY: the map is read-only and private to this process. A file truncated by another
        // process while mapped would fault on access; ELF files are replaced, not rewritten in
        // place, by package managers and linkers, and every tool of this kind (addr2line,
        // llvm-symbolizer, perf) accepts the same risk.
        let map = unsafe { Mmap::map(&file)? };
        Ok(Mapped::File(Arc::new(map)))
    }

    /// The bytes of the file.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Mapped::File(map) => map,
            Mapped::Bytes(bytes) => bytes,
        }
    }
}
