//! Errors of the writer: I/O, and misuse that a reader would otherwise silently misparse.

use std::fmt;
use std::io;

/// A writer error.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Writing the output failed.
    Io(io::Error),
    /// The type model is inconsistent (a bug in this crate, caught by its tests).
    Metadata(String),
    /// The recording was already finished.
    Finished,
}

/// The writer's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "writing the JFR file failed: {e}"),
            Error::Metadata(m) => write!(f, "inconsistent JFR metadata: {m}"),
            Error::Finished => f.write_str("the recording is already finished"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}
