//! Files written whole or not at all: through `NAME.part` beside them, then renamed. The stage's
//! copies, the mirror of a stage and the kept libraries all write their destinations this way.

use std::path::{Path, PathBuf};

/// Copies `len` bytes of `from` (a file opened in a stage) to `to` through a temporary file
/// beside `to`, so that `to` is never half written.
pub fn copy_atomically(from: std::fs::File, len: u64, to: &Path) -> std::io::Result<()> {
    use std::io::Read;
    let partial = part_of(to);
    let mut out = std::fs::File::create(&partial)?;
    std::io::copy(&mut from.take(len), &mut out)?;
    drop(out);
    std::fs::rename(&partial, to)
}

/// Writes `bytes` to `to` through a temporary file beside it, so that `to` is never half written.
pub fn write_atomically(to: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let partial = part_of(to);
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, to)
}

/// The temporary file beside `to`: `TO.part`.
fn part_of(to: &Path) -> PathBuf {
    let mut partial = to.as_os_str().to_owned();
    partial.push(".part");
    PathBuf::from(partial)
}
