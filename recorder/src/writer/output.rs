//! Where the writer puts finished chunks: one file that grows by whole chunks (`file=out.jfr`),
//! or a directory where each chunk is a file of its own and the oldest are removed past
//! `maxsize`/`maxage` (`file=DIR/`, [`jfr_writer::Repository`]).

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::Duration;

use jfr_writer::{ChunkOutput, Repository, Retention};

use crate::options::Options;

/// The recording's output.
#[derive(Debug)]
pub enum Output {
    /// One file.
    File(File),
    /// A directory of chunk files.
    Repository(Repository),
}

impl Output {
    /// Opens the output the options name: creates (truncates) the file, or creates the
    /// directory. Chunk files are named `jfrnative-PID-...`.
    pub fn open(options: &Options) -> io::Result<Output> {
        match options.repository {
            None => File::create(&options.file).map(Output::File),
            Some(bounds) => {
                let retention = Retention {
                    max_size_bytes: bounds.max_size_bytes,
                    max_age: bounds.max_age_ns.map(Duration::from_nanos),
                };
                let prefix = format!("jfrnative-{}", std::process::id());
                Repository::create(Path::new(&options.file), &prefix, retention)
                    .map(Output::Repository)
            }
        }
    }

    /// What the summary says of a directory: files kept, bytes kept, files removed.
    pub fn kept(&self) -> Option<(usize, u64, u64)> {
        match self {
            Output::File(_) => None,
            Output::Repository(r) => Some((
                r.kept().count(),
                r.kept().map(|f| f.bytes).sum(),
                r.removed(),
            )),
        }
    }
}

impl ChunkOutput for Output {
    fn write_chunk(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Output::File(file) => file.write_chunk(bytes),
            Output::Repository(repository) => repository.write_chunk(bytes),
        }
    }
}

/// Fails early, not at the first chunk, if the output cannot be written: the file is created,
/// or the directory created and a file made and removed in it.
pub fn check(options: &Options) -> Result<(), String> {
    let fail = |e: io::Error| format!("jfr-native: cannot write file={}: {e}", options.file);
    match options.repository {
        None => File::create(&options.file).map(drop).map_err(fail),
        Some(_) => {
            let dir = Path::new(&options.file);
            std::fs::create_dir_all(dir).map_err(fail)?;
            let probe = dir.join(format!(".jfrnative-{}.probe", std::process::id()));
            File::create(&probe).map_err(fail)?;
            std::fs::remove_file(&probe).map_err(fail)
        }
    }
}
