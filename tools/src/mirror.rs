//! Keeps a copy of a staged recording ([`crate::stage`]) on this side while the JVM records:
//! a directory's finished chunk files (`*.jfr`: the agent writes `.part` and renames a chunk
//! file once it is whole) as they appear, a single file at most every [`Mirror::FILE_EVERY`]
//! (each finished chunk in it is whole; the one being written is cut, which readers take as the
//! end of the file), and the agent's status file at every tick.
//!
//! Every file is read through the stage's descriptors, as the JVM's user, and only when it is a
//! plain file of that user with one link: a link, a FIFO or a hard link put in the stage by
//! anyone else is skipped, and [`Mirror::skipped`] says so.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::atomic_file::{copy_atomically, write_atomically};
use crate::confined::dir::Refused;
use crate::stage::{Stage, STATUS_BYTES};

/// The most bytes of one recording file (or chunk file) copied out of a stage.
pub const RECORDING_BYTES: u64 = 64 << 30;

/// A copy of a stage's recording and status, kept up to date by [`Mirror::tick`].
#[derive(Debug)]
pub struct Mirror {
    /// The recording's name in the stage.
    name: OsString,
    /// A directory of chunk files, not a single file.
    directory: bool,
    to: PathBuf,
    /// Where the status file is copied.
    status_to: PathBuf,
    /// Chunk files copied already (a directory).
    copied: BTreeSet<OsString>,
    /// The single file's length at its last copy, and when.
    file: Option<(u64, Instant)>,
    /// Files of the stage that were not what the agent writes, and why.
    skipped: BTreeMap<String, String>,
}

impl Mirror {
    /// How often a single recording file is copied at most while it grows.
    pub const FILE_EVERY: Duration = Duration::from_secs(5);

    /// A mirror of the stage's `name` (a directory of chunk files when `directory`) to `to`,
    /// and of its status file to `status_to`.
    pub fn new(name: &str, directory: bool, to: &Path, status_to: &Path) -> Mirror {
        Mirror {
            name: name.into(),
            directory,
            to: to.to_path_buf(),
            status_to: status_to.to_path_buf(),
            copied: BTreeSet::new(),
            file: None,
            skipped: BTreeMap::new(),
        }
    }

    /// Copies what the agent finished since the last call (errors are left for
    /// [`Mirror::finish`]: the JVM may be gone).
    pub fn tick(&mut self, stage: &Stage) {
        self.status(stage);
        let _ = self.copy(stage, false);
    }

    /// The last copy, once the recording is over: everything there is.
    pub fn finish(&mut self, stage: &Stage) -> Result<(), String> {
        self.status(stage);
        self.copy(stage, true)
    }

    /// What was skipped, one line each: the path as the JVM sees it, and why.
    pub fn skipped(&self) -> impl Iterator<Item = String> + '_ {
        self.skipped
            .iter()
            .map(|(path, why)| format!("{path} was skipped: {why}, not a file the agent wrote"))
    }

    /// Copies the agent's status file to this side (a missing one removes the copy).
    pub fn status(&mut self, stage: &Stage) {
        match stage.read("status", STATUS_BYTES) {
            Ok(bytes) => {
                let _ = write_atomically(&self.status_to, &bytes);
            }
            Err(Refused::NotOurs(why)) => {
                let _ = std::fs::remove_file(&self.status_to);
                self.skip(stage, None, OsStr::new("status"), why);
            }
            Err(Refused::Io(_)) => {
                let _ = std::fs::remove_file(&self.status_to);
            }
        }
    }

    fn skip(&mut self, stage: &Stage, sub: Option<&OsStr>, name: &OsStr, why: String) {
        let mut path = stage.dir_path.clone();
        path.extend(sub);
        path.push(name);
        self.skipped
            .entry(path.display().to_string())
            .or_insert(why);
    }

    fn copy(&mut self, stage: &Stage, last: bool) -> Result<(), String> {
        if self.directory {
            return self.copy_chunks(stage);
        }
        let name = self.name.clone();
        let (file, len) = match stage.open(None, &name, RECORDING_BYTES) {
            Ok(opened) => opened,
            Err(Refused::NotOurs(why)) => {
                self.skip(stage, None, &name, why.clone());
                return Err(format!("{}: {why}", stage.dir_path.join(&name).display()));
            }
            Err(Refused::Io(e)) => {
                return Err(format!("{}: {e}", stage.dir_path.join(&name).display()))
            }
        };
        let due = match self.file {
            None => true,
            Some((copied, at)) => len != copied && at.elapsed() >= Self::FILE_EVERY,
        };
        if last || due {
            copy_atomically(file, len, &self.to)
                .map_err(|e| format!("{}: {e}", self.to.display()))?;
            self.file = Some((len, Instant::now()));
        }
        Ok(())
    }

    fn copy_chunks(&mut self, stage: &Stage) -> Result<(), String> {
        std::fs::create_dir_all(&self.to).map_err(|e| format!("{}: {e}", self.to.display()))?;
        let sub = self.name.clone();
        let names = stage.names(&sub).ok_or_else(|| {
            format!(
                "{} is not the recording's directory",
                stage.dir_path.join(&sub).display()
            )
        })?;
        for name in names {
            let whole = Path::new(&name).extension().is_some_and(|e| e == "jfr");
            if !whole || self.copied.contains(&name) || self.skipped_in(stage, &sub, &name) {
                continue;
            }
            match stage.open(Some(&sub), &name, RECORDING_BYTES) {
                Ok((file, len)) => {
                    copy_atomically(file, len, &self.to.join(&name))
                        .map_err(|e| format!("{}: {e}", self.to.join(&name).display()))?;
                    self.copied.insert(name);
                }
                Err(Refused::NotOurs(why)) => self.skip(stage, Some(&sub), &name, why),
                Err(Refused::Io(_)) => {}
            }
        }
        Ok(())
    }

    fn skipped_in(&self, stage: &Stage, sub: &OsStr, name: &OsStr) -> bool {
        let path = stage.dir_path.join(sub).join(name);
        self.skipped.contains_key(&path.display().to_string())
    }
}
