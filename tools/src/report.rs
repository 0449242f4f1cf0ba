//! After a recording: symbolize it once and leave the views beside it.
//!
//! For `out.jfr` (what the agent wrote, untouched): `out.symbolized.jfr` (native frames in the
//! stack traces, for JDK Mission Control and `jfr print`), `out.svg` (flame graph) and
//! `out.txt` (the full text report). The short report goes to the terminal.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use symbolize::report::{collapsed, text, Filter};
use symbolize::{Options, Symbolizer};

use crate::flamegraph;

/// The files written beside a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// The recording as the agent wrote it.
    pub recording: PathBuf,
    /// The symbolized JFR.
    pub symbolized: PathBuf,
    /// The SVG flame graph.
    pub flame_graph: PathBuf,
    /// The full text report.
    pub report: PathBuf,
}

impl Outputs {
    /// The names derived from the recording's: `x.jfr` → `x.symbolized.jfr`, `x.svg`, `x.txt`.
    pub fn beside(recording: &Path) -> Outputs {
        let stem = recording.with_extension("");
        let with = |suffix: &str| {
            let mut s = stem.clone().into_os_string();
            s.push(suffix);
            PathBuf::from(s)
        };
        Outputs {
            recording: recording.to_path_buf(),
            symbolized: with(".symbolized.jfr"),
            flame_graph: with(".svg"),
            report: with(".txt"),
        }
    }

    /// Fails now, before recording, if any of the files cannot be written.
    pub fn check_writable(&self) -> Result<(), String> {
        for path in [
            &self.recording,
            &self.symbolized,
            &self.flame_graph,
            &self.report,
        ] {
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
}

fn create(path: &Path) -> io::Result<io::BufWriter<std::fs::File>> {
    std::fs::File::create(path)
        .map(io::BufWriter::new)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// Symbolizes `outputs.recording` and writes the other three files; `top` rows per table in
/// the short report.
pub fn write(outputs: &Outputs, top: usize) -> io::Result<Summary> {
    let bytes = std::fs::read(&outputs.recording).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot read {}: {e}", outputs.recording.display()),
        )
    })?;
    // Debug files from debuginfod when DEBUGINFOD_URLS names servers, as jfr-symbolize does.
    let options = Options {
        debuginfod: symbolize::Debuginfod::from_env(),
        ..Options::default()
    };
    let mut symbolizer = Symbolizer::new(options);
    let mut jfr = create(&outputs.symbolized)?;
    let tool = format!("jfrnative {}", env!("CARGO_PKG_VERSION"));
    let outcome = symbolize::driver::run(
        &bytes,
        &mut symbolizer,
        &Filter::default(),
        Some(&mut jfr),
        &tool,
        &mut |_, _| {},
    )?;
    jfr.flush()?;
    let agg = &outcome.aggregate;
    let mut svg = create(&outputs.flame_graph)?;
    let title = format!("CPU time: {}", outputs.recording.display());
    flamegraph::write(agg, collapsed::Unit::CpuNanos, &title, &mut svg)?;
    svg.flush()?;
    let mut report = create(&outputs.report)?;
    text::write(agg, 30, &mut report)?;
    report.flush()?;
    let mut short = Vec::new();
    text::write_summary(agg, top, &mut short)?;
    let mut warnings: Vec<String> = symbolizer
        .problems()
        .iter()
        .map(|p| format!("{}: {}", p.library, p.reason))
        .collect();
    if let Some(e) = &outcome.error {
        warnings.push(format!(
            "{}: damaged {e}; the {} chunk(s) before it were used",
            outputs.recording.display(),
            outcome.chunks
        ));
    }
    Ok(Summary {
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
        let e = Outputs::beside(Path::new("/nonexistent/dir/x.jfr"))
            .check_writable()
            .unwrap_err();
        assert!(e.contains("cannot write /nonexistent/dir/x.jfr"), "{e}");
    }
}
