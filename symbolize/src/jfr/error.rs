//! The reader's error: where the input is malformed or truncated.

use std::fmt;

/// A malformed or truncated input, with the file offset where reading failed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadError {
    /// File offset.
    pub offset: u64,
    /// What was wrong.
    pub what: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for ReadError {}
