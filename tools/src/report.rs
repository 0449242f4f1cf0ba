//! After a recording: symbolize it once and leave the views beside it.
//!
//! For `out.jfr` (what the agent wrote, untouched): `out.symbolized.jfr` (native frames in the
//! stack traces, for JDK Mission Control and `jfr print`), `out.html` (the HTML flame graph),
//! `out.svg` (the SVG one) and `out.txt` (the full text report). For a directory recording
//! `DIR/` (one file per chunk) the same names are made from `DIR`, beside it. The short report
//! goes to the terminal.

use std::borrow::Cow;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use symbolize::report::{collapsed, text, Filter};
use symbolize::{Options, Symbolizer};

use crate::{flamegraph, flamegraph_html};

/// The files written beside a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// The recording as the agent wrote it: a file, or a directory of chunk files.
    pub recording: PathBuf,
    /// Whether `recording` is a directory of chunk files (`file=DIR/`).
    pub directory: bool,
    /// The symbolized JFR.
    pub symbolized: PathBuf,
    /// The HTML flame graph.
    pub html: PathBuf,
    /// The SVG flame graph.
    pub flame_graph: PathBuf,
    /// The full text report.
    pub report: PathBuf,
}

impl Outputs {
    /// The names derived from the recording's: `x.jfr` → `x.symbolized.jfr`, `x.html`, `x.svg`,
    /// `x.txt`.
    pub fn beside(recording: &Path) -> Outputs {
        Outputs::named(recording, recording.with_extension(""), false)
    }

    /// The names for a directory recording `dir`: `dir.symbolized.jfr`, `dir.html`, ... beside
    /// the directory.
    pub fn beside_directory(dir: &Path) -> Outputs {
        Outputs::named(dir, dir.to_path_buf(), true)
    }

    fn named(recording: &Path, stem: PathBuf, directory: bool) -> Outputs {
        let with = |suffix: &str| {
            let mut s = stem.clone().into_os_string();
            s.push(suffix);
            PathBuf::from(s)
        };
        Outputs {
            recording: recording.to_path_buf(),
            directory,
            symbolized: with(".symbolized.jfr"),
            html: with(".html"),
            flame_graph: with(".svg"),
            report: with(".txt"),
        }
    }

    /// Fails now, before recording, if any of the files cannot be written (a directory
    /// recording's directory is made).
    pub fn check_writable(&self) -> Result<(), String> {
        if self.directory {
            std::fs::create_dir_all(&self.recording).map_err(|e| {
                format!(
                    "cannot write {}: {e}; choose another output with -o",
                    self.recording.display()
                )
            })?;
        }
        let files = [
            &self.symbolized,
            &self.html,
            &self.flame_graph,
            &self.report,
        ];
        let recording = (!self.directory).then_some(&self.recording);
        for path in recording.into_iter().chain(files) {
            let existed = path.exists();
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    format!(
                        "cannot write {}: {e}; choose another output with -o",
                        path.display()
                    )
                })?;
            if !existed {
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(())
    }
}

/// What [`write()`] found.
#[derive(Debug)]
pub struct Summary {
    /// The short report for the terminal.
    pub text: String,
    /// Samples in the recording.
    pub samples: u64,
    /// Library problems and damage, one line each.
    pub warnings: Vec<String>,
    /// What a merge with the JDK's recording did, one line each.
    pub notes: Vec<String>,
}

/// The bytes of one input: the merge (`--merge`), read in place, or `file`, read from disk.
pub fn input_bytes<'a>(merged: Option<&'a [u8]>, file: &Path) -> io::Result<Cow<'a, [u8]>> {
    Ok(match merged {
        Some(bytes) => bytes.into(),
        None => std::fs::read(file)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", file.display())))?
            .into(),
    })
}

fn create(path: &Path) -> io::Result<io::BufWriter<std::fs::File>> {
    std::fs::File::create(path)
        .map(io::BufWriter::new)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// Symbolizes `outputs.recording` (its libraries looked for under `sysroots` first: see
/// [`Options::sysroots`]) and writes the other three files; `top` rows per table in the short
/// report. With `jdk_recording` (the JDK's own recording of the same JVM, beside a directory
/// recording: its file, or the complete chunks of its repository), the symbolized JFR is made from the merge of both ([`crate::one_recording`]).
pub fn write(
    outputs: &Outputs,
    top: usize,
    sysroots: &[PathBuf],
    jdk_recording: &[PathBuf],
) -> io::Result<Summary> {
    let files = symbolize::driver::input_files(std::slice::from_ref(&outputs.recording))?;
    let mut notes = Vec::new();
    let merged = match jdk_recording {
        [] => None,
        jdk => {
            let mut all = jdk.to_vec();
            all.extend(files.iter().cloned());
            let (bytes, summary) =
                crate::one_recording::merge_files(&all, symbolize::merge::JdkSamples::Drop)?;
            notes = crate::one_recording::describe(&summary);
            Some(bytes)
        }
    };
    let files = match merged {
        Some(_) => vec![outputs.recording.clone()],
        None => files,
    };
    // Debug files from debuginfod when DEBUGINFOD_URLS names servers, as jfr-symbolize does.
    let options = Options {
        debuginfod: symbolize::Debuginfod::from_env(),
        sysroots: sysroots.to_vec(),
        kept_roots: symbolize::driver::kept_library_roots(std::slice::from_ref(&outputs.recording)),
        ..Options::default()
    };
    let mut symbolizer = Symbolizer::new(options);
    let mut jfr = create(&outputs.symbolized)?;
    let tool = format!("jfrnative {}", env!("CARGO_PKG_VERSION"));
    let filter = Filter::default();
    let mut pass = symbolize::driver::Pass::new(&mut symbolizer, &filter, &tool);
    let mut damaged = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let bytes = input_bytes(merged.as_deref(), file)?;
        let last = i + 1 == files.len();
        let read = pass.add_file(&bytes, Some(&mut jfr), last, &mut |_, _| {})?;
        if let Some(e) = read.error {
            damaged.push(format!(
                "{}: damaged {e}; the {} chunk(s) before it were used",
                file.display(),
                read.chunks
            ));
        }
    }
    let outcome = pass.finish();
    jfr.flush()?;
    let agg = &outcome.aggregate;
    let name = outputs.recording.display().to_string();
    let title = format!("CPU time: {name}");
    let mut html = create(&outputs.html)?;
    flamegraph_html::write(agg, &name, collapsed::Unit::CpuNanos, &title, &mut html)?;
    html.flush()?;
    let mut svg = create(&outputs.flame_graph)?;
    flamegraph::write(agg, collapsed::Unit::CpuNanos, &title, &mut svg)?;
    svg.flush()?;
    let mut report = create(&outputs.report)?;
    text::write(agg, 30, &mut report)?;
    report.flush()?;
    let mut short = Vec::new();
    text::write_summary(agg, top, &mut short)?;
    notes.extend(symbolizer.sources().iter().map(|s| s.describe()));
    let mut warnings: Vec<String> = symbolizer
        .problems()
        .iter()
        .map(|p| format!("{}: {}", p.library, p.reason))
        .collect();
    warnings.extend(damaged);
    Ok(Summary {
        notes,
        text: String::from_utf8_lossy(&short).into_owned(),
        samples: agg.total.samples,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_beside_the_recording() {
        let o = Outputs::beside(Path::new("/tmp/run.1/out.jfr"));
        assert_eq!(o.symbolized, Path::new("/tmp/run.1/out.symbolized.jfr"));
        assert_eq!(o.flame_graph, Path::new("/tmp/run.1/out.svg"));
        assert_eq!(o.report, Path::new("/tmp/run.1/out.txt"));
        assert_eq!(o.html, Path::new("/tmp/run.1/out.html"));
        assert!(!o.directory);
        let d = Outputs::beside_directory(Path::new("/tmp/run.1/prof"));
        assert_eq!(d.symbolized, Path::new("/tmp/run.1/prof.symbolized.jfr"));
        assert_eq!(d.html, Path::new("/tmp/run.1/prof.html"));
        assert!(d.directory);
        let e = Outputs::beside(Path::new("/nonexistent/dir/x.jfr"))
            .check_writable()
            .unwrap_err();
        assert!(e.contains("cannot write /nonexistent/dir/x.jfr"), "{e}");
    }
}
