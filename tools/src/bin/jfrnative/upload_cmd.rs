//! `--upload`: the flags checked before anything starts, the continuous upload of the chunk
//! files while a recording runs, and its last sends after it.

use std::path::Path;

use tools::session::Session;
use tools::upload::continuous::{self, Continuous, ContinuousFlags};
use tools::upload::endpoint::process_env;
use tools::upload::export;

use super::args::Failure;

/// A continuous upload, checked and ready to start.
pub struct Upload {
    endpoint: tools::upload::Endpoint,
    resource: Vec<(String, String)>,
    spool_bytes: u64,
}

/// The upload the flags ask for, checked: the endpoint, headers and variables, the spool's
/// bound, and a directory output. The error names the flag or variable.
pub fn checked_upload(
    flags: &ContinuousFlags,
    output: Option<&Path>,
) -> Result<Option<Upload>, String> {
    let Some(endpoint) = flags.upload.endpoint(&process_env)? else {
        return Ok(None);
    };
    let spool_bytes = flags.spool_bytes()?;
    let resource = export::resource_attributes(&process_env)?;
    let directory = output.is_some_and(|o| o.to_string_lossy().ends_with('/') || o.is_dir());
    if !directory {
        return Err(
            "--upload sends each finished chunk of a directory recording: give -o DIR/ (one \
             file per chunk; --chunk sets how often)"
                .into(),
        );
    }
    Ok(Some(Upload {
        endpoint,
        resource,
        spool_bytes,
    }))
}

/// Starts sending the chunk files the agent writes into `chunks` (the session's directory, or
/// where we reach a staged one: [`tools::stage`]); the spool is beside the session's directory.
pub fn start_upload(
    session: &Session,
    upload: Option<Upload>,
    chunks: &Path,
) -> Result<Option<Continuous>, Failure> {
    let Some(upload) = upload else {
        return Ok(None);
    };
    let config = continuous::Config {
        spool_dir: continuous::spool_dir_of(&session.outputs.recording),
        dir: chunks.to_path_buf(),
        spool_bytes: upload.spool_bytes,
        endpoint: upload.endpoint,
        resource: upload.resource,
    };
    eprintln!(
        "jfrnative: each finished chunk goes to {} (waiting ones in {}, at most {})",
        config.endpoint.url,
        config.spool_dir.display(),
        continuous::size_text(config.spool_bytes)
    );
    Continuous::start(config)
        .map(Some)
        .map_err(|e| format!("cannot start the upload: {e}"))
}

/// After the recording: the last chunks are sent (at most [`continuous::DRAIN`] more), and
/// what was sent is said.
pub fn finish_upload(upload: Option<Continuous>) {
    if let Some(upload) = upload {
        let (_, summary) = upload.finish(continuous::DRAIN);
        for line in summary.lines() {
            eprintln!("jfrnative: {line}");
        }
    }
}
