//! A copy of the recording so far, on request (the Java API's `dump`): the writer finishes the
//! chunk it is writing, so that the copy holds every sample up to the request as whole chunks,
//! and copies the finished chunks into a new file. The recording goes on.
//!
//! The request waits on the writer thread, which alone writes the output: no copy can see a
//! chunk half written.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;

use crate::writer::output::Output;

/// One request: where to, and where the answer goes (bytes written, or why not).
pub struct DumpRequest {
    path: PathBuf,
    reply: Sender<Result<u64, String>>,
}

/// Requests the writer has not served yet.
static PENDING: Mutex<Vec<DumpRequest>> = Mutex::new(Vec::new());

/// Queues a request for `path`; the answer comes on the receiver once the writer served it
/// (or is dropped, if the recording stopped first).
pub fn request(path: &Path) -> Result<Receiver<Result<u64, String>>, String> {
    let (reply, answer) = mpsc::channel();
    PENDING
        .lock()
        .map_err(|_| "jfr-native: dump: agent state lost".to_string())?
        .push(DumpRequest {
            path: path.to_path_buf(),
            reply,
        });
    Ok(answer)
}

/// Takes the pending requests (the writer, at each turn).
pub fn take_pending() -> Vec<DumpRequest> {
    PENDING
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default()
}

/// Serves one request from the output's finished chunks.
pub fn serve(request: DumpRequest, output: Option<&Output>) {
    let result = match output {
        Some(output) => copy(output, &request.path)
            .map_err(|e| format!("jfr-native: dump to {}: {e}", request.path.display())),
        None => Err("jfr-native: dump: the recording has no output".to_string()),
    };
    let _ = request.reply.send(result);
}

/// Answers every pending request the writer will not serve (its recording stopped, or they
/// were left by an earlier one).
pub fn refuse_pending() {
    for request in take_pending() {
        let _ = request.reply.send(Err(
            "jfr-native: dump: the recording stopped before the dump".into(),
        ));
    }
}

/// Copies the chunks into a new file at `path` (never through a link, never over a file).
fn copy(output: &Output, path: &Path) -> io::Result<u64> {
    let mut target = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    let written = copy_into(output, &mut target).and_then(|n| target.sync_all().map(|()| n));
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

fn copy_into(output: &Output, target: &mut File) -> io::Result<u64> {
    match output {
        // The file the writer holds, opened again by its descriptor: the same file even if its
        // path was renamed or replaced meanwhile. It holds whole chunks only.
        Output::File(file) => {
            let mut source = File::open(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
            io::copy(&mut source, target)
        }
        // The chunk files the retention kept, oldest first.
        Output::Repository(repository) => {
            let mut total = 0;
            for chunk in repository.kept() {
                let mut source = File::open(&chunk.path)?;
                total += io::copy(&mut (&mut source).take(chunk.bytes), target)?;
            }
            target.flush()?;
            Ok(total)
        }
    }
}
