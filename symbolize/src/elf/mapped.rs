//! Read-only file maps: the one place in this crate that needs `unsafe`.

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
    /// Maps `path`, if it is a regular file. A recording names its libraries' paths, and
    /// whoever wrote it chose them: a FIFO, a device or a directory there is refused at once
    /// (opened without waiting for a writer, then looked at), never read.
    pub fn open(path: &Path) -> std::io::Result<Mapped> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_mapped() {
        let dir = std::env::temp_dir().join(format!("symbolize-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // A FIFO with no writer: refused at once, not waited on.
        for path in [fifo.as_path(), dir.as_path(), Path::new("/dev/zero")] {
            let e = Mapped::open(path).err().expect("refused");
            assert!(
                e.kind() == std::io::ErrorKind::InvalidInput,
                "{}: {e}",
                path.display()
            );
        }
        let file = dir.join("file");
        std::fs::write(&file, b"bytes").unwrap();
        assert_eq!(Mapped::open(&file).unwrap().bytes(), b"bytes");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
