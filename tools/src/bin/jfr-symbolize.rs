//! `jfr-symbolize`: resolves the native PCs of a jfr-native recording offline and writes a
//! symbolized JFR, folded stacks, a flame graph, a text report or JSON.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use symbolize::report::{collapsed, json, text, Filter};
use symbolize::{Options, Symbolizer};
use tools::flamegraph;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A JFR file whose CPU-sample stacks start with named native frames.
    Jfr,
    /// Folded stacks (`root;...;leaf weight`) for flamegraph.pl, inferno, speedscope.
    Collapsed,
    /// An interactive SVG flame graph.
    Flamegraph,
    /// Top native functions, Java methods, stacks and threads by CPU time.
    Text,
    /// Everything above, for scripts.
    Json,
}

/// Symbolize the native frames of a jfr-native recording.
#[derive(Parser, Debug)]
#[command(name = "jfr-symbolize", version, about)]
struct Args {
    /// The recording (one or more chunks).
    input: PathBuf,
    /// Output file; `-` or absent: standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Output format; default: from the output's extension (.jfr, .svg, .html, .txt, .json,
    /// .collapsed, .folded), else text.
    #[arg(short, long, value_enum)]
    format: Option<Format>,
    /// Keep only threads whose name contains this (repeatable).
    #[arg(long = "thread")]
    threads: Vec<String>,
    /// Put each thread's name at the root of its stacks.
    #[arg(long = "threads")]
    per_thread: bool,
    /// Keep samples from this many seconds after the recording start.
    #[arg(long)]
    from: Option<f64>,
    /// Keep samples until this many seconds after the recording start.
    #[arg(long)]
    to: Option<f64>,
    /// Weigh collapsed stacks and the flame graph by sample count instead of CPU time.
    #[arg(long)]
    samples: bool,
    /// Rows per table in the text report.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Root of separate debug files (repeatable; default /usr/lib/debug).
    #[arg(long = "debug-dir")]
    debug_dirs: Vec<PathBuf>,
    /// Look for libraries by file name here before their recorded path (repeatable).
    #[arg(long = "search-dir")]
    search_dirs: Vec<PathBuf>,
    /// Symbols only: skip DWARF (no inlined frames, no lines).
    #[arg(long)]
    no_dwarf: bool,
    /// No progress line on a terminal.
    #[arg(short, long)]
    quiet: bool,
}

fn format_of(args: &Args) -> Format {
    if let Some(f) = args.format {
        return f;
    }
    let ext = args
        .output
        .as_ref()
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str())
        .unwrap_or("");
    match ext {
        "jfr" => Format::Jfr,
        "svg" | "html" => Format::Flamegraph,
        "json" => Format::Json,
        "collapsed" | "folded" => Format::Collapsed,
        _ => Format::Text,
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(code) => code,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jfr-symbolize: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> io::Result<ExitCode> {
    let input = &args.input;
    let bytes = std::fs::read(input)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", input.display())))?;
    let format = format_of(args);
    let to_stdout = args.output.as_ref().is_none_or(|p| p.as_os_str() == "-");
    if format == Format::Jfr && to_stdout && io::stdout().is_terminal() {
        return Err(io::Error::other(
            "a JFR file is binary: give -o OUT.jfr or redirect standard output",
        ));
    }
    let mut options = Options::default();
    if !args.debug_dirs.is_empty() {
        options.debug_dirs = args.debug_dirs.clone();
    }
    options.search_dirs = args.search_dirs.clone();
    options.dwarf = !args.no_dwarf;
    let mut symbolizer = Symbolizer::new(options);
    let filter = Filter {
        threads: args.threads.clone(),
        per_thread: args.per_thread,
        from_ns: args.from.map(|s| (s * 1e9) as u64),
        to_ns: args.to.map(|s| (s * 1e9) as u64),
    };
    let mut sink: Box<dyn Write> = if to_stdout {
        Box::new(io::BufWriter::new(io::stdout().lock()))
    } else {
        let path = args.output.as_ref().map_or(PathBuf::new(), Clone::clone);
        let file = std::fs::File::create(&path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
        })?;
        Box::new(io::BufWriter::new(file))
    };
    let show_progress = !args.quiet && io::stderr().is_terminal() && bytes.len() > 32 << 20;
    let mut progress = |done: usize, total: usize| {
        if show_progress {
            eprint!("\rjfr-symbolize: {:3}%", done * 100 / total.max(1));
        }
    };
    let jfr_out: Option<&mut dyn Write> = if format == Format::Jfr {
        Some(&mut *sink)
    } else {
        None
    };
    let tool = format!("jfr-symbolize {}", env!("CARGO_PKG_VERSION"));
    let outcome = symbolize::driver::run(
        &bytes,
        &mut symbolizer,
        &filter,
        jfr_out,
        &tool,
        &mut progress,
    )?;
    if show_progress {
        eprintln!();
    }
    let agg = &outcome.aggregate;
    let unit = if args.samples {
        collapsed::Unit::Samples
    } else {
        collapsed::Unit::CpuNanos
    };
    match format {
        Format::Jfr => {}
        Format::Collapsed => collapsed::write(agg, unit, false, &mut *sink)?,
        Format::Flamegraph => {
            let title = format!("CPU time: {}", input.display());
            flamegraph::write(agg, unit, &title, &mut *sink)?;
        }
        Format::Text => text::write(agg, args.top, &mut *sink)?,
        Format::Json => json::write(agg, &mut *sink)?,
    }
    sink.flush()?;
    for p in symbolizer.problems() {
        eprintln!("jfr-symbolize: {}: {}", p.library, p.reason);
    }
    if let Some(e) = &outcome.error {
        eprintln!(
            "jfr-symbolize: {}: damaged {e}; the {} chunk(s) before it were processed",
            input.display(),
            outcome.chunks
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
