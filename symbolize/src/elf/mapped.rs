//! Read-only file maps: the one place in this crate that needs `unsafe`.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;

/// A whole file mapped read-only and shared.
#[derive(Clone)]
pub struct Mapped(Arc<Mmap>);

impl Mapped {
    /// Maps `path`.
    pub fn open(path: &Path) -> std::io::Result<Mapped> {
        let file = File::open(path)?;
        // SAFETY: the map is read-only and private to this process. A file truncated by another
        // process while mapped would fault on access; ELF files are replaced, not rewritten in
        // place, by package managers and linkers, and every tool of this kind (addr2line,
        // llvm-symbolizer, perf) accepts the same risk.
        let map = unsafe { Mmap::map(&file)? };
        Ok(Mapped(Arc::new(map)))
    }

    /// The bytes of the file.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}
