//! Finding a library's separate debug file: by build-id first, then by `.gnu_debuglink`.

use std::path::{Path, PathBuf};

use super::image::{hex, ElfImage};

/// Where a debug file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    /// `DIR/.build-id/xx/yyyy.debug` with the expected build-id.
    BuildId,
    /// `.gnu_debuglink`, with a matching build-id or CRC-32.
    Debuglink,
}

/// Looks for the debug file of a library whose build-id should be `expected` (the recorded
/// one, else the file's own). `library` is the file on disk, if it could be read: its debuglink
/// and directory are used for the second search.
pub fn find(
    expected: Option<&[u8]>,
    library: Option<&ElfImage>,
    library_path: &Path,
    debug_dirs: &[PathBuf],
) -> Option<(ElfImage, FoundBy)> {
    if let Some(id) = expected.filter(|id| id.len() >= 2) {
        let h = hex(id);
        for dir in debug_dirs {
            let path = dir
                .join(".build-id")
                .join(&h[..2])
                .join(format!("{}.debug", &h[2..]));
            if let Ok(image) = ElfImage::open(&path) {
                if image.build_id.as_deref() == Some(id) {
                    return Some((image, FoundBy::BuildId));
                }
            }
        }
    }
    let (name, crc) = library?.debuglink.clone()?;
    let dir = library_path.parent().unwrap_or(Path::new("/"));
    let mut candidates = vec![dir.join(&name), dir.join(".debug").join(&name)];
    for d in debug_dirs {
        candidates.push(d.join(dir.strip_prefix("/").unwrap_or(dir)).join(&name));
    }
    for path in candidates {
        if path == library_path {
            continue;
        }
        let Ok(image) = ElfImage::open(&path) else {
            continue;
        };
        // A matching build-id is trusted whatever the CRC says (tools that rewrite debug files
        // change it); a differing build-id is never trusted.
        match (expected, image.build_id.as_deref()) {
            (Some(want), Some(got)) if want == got => return Some((image, FoundBy::Debuglink)),
            (Some(_), Some(_)) => continue,
            _ => {}
        }
        if crc32fast::hash(image.bytes()) == crc {
            return Some((image, FoundBy::Debuglink));
        }
    }
    None
}
