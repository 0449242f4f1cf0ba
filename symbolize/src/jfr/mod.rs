//! A JFR reader that keeps byte positions, so that a file can be rewritten record by record.
//!
//! Why not `jfrs` here: it keeps no record positions (a rewrite copies records it does not
//! change byte for byte), and it allocates whatever chunk size a header claims before checking
//! it against the file, which aborts the process on a corrupt header. The tests still read our
//! output with `jfrs`, as one of the independent readers.

pub mod chunk;
pub mod cursor;
pub mod encode;
pub mod error;
pub mod metadata;
pub mod sizes;
pub mod value;

pub use chunk::{Chunk, Header, Record};
pub use error::ReadError;
pub use metadata::Metadata;
pub use value::Value;

/// The chunks of a file read up to the first damage.
pub struct Chunks<'a> {
    /// Every chunk read completely, in file order.
    pub chunks: Vec<Chunk<'a>>,
    /// Why reading stopped before the end of the file, if it did.
    pub error: Option<ReadError>,
}

/// The chunks of `bytes` in file order; after the first damaged chunk (or for an empty file),
/// one error and then nothing.
pub fn chunks(bytes: &[u8]) -> impl Iterator<Item = Result<Chunk<'_>, ReadError>> {
    let mut offset = 0usize;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        if bytes.is_empty() {
            done = true;
            return Some(Err(ReadError {
                offset: 0,
                what: "empty file".into(),
            }));
        }
        if offset >= bytes.len() {
            return None;
        }
        let chunk = Chunk::parse(&bytes[offset..], offset as u64);
        match &chunk {
            Ok(c) => offset += c.bytes.len(),
            Err(_) => done = true,
        }
        Some(chunk)
    })
}

/// Reads every chunk of `bytes` until the end of the file or the first damaged chunk.
pub fn read_chunks(bytes: &[u8]) -> Chunks<'_> {
    let mut out = Chunks {
        chunks: Vec::new(),
        error: None,
    };
    for chunk in chunks(bytes) {
        match chunk {
            Ok(c) => out.chunks.push(c),
            Err(e) => out.error = Some(e),
        }
    }
    out
}
