//! `jfr-symbolize`: resolves the native PCs of a jfr-native recording offline and writes a
//! symbolized JFR, folded stacks, a flame graph, a text report, JSON, pprof or OTLP profiles,
//! and sends OTLP profiles to a fleet backend (`--upload`).

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use symbolize::merge::JdkSamples;
use symbolize::report::{collapsed, json, otlp, pprof, text, Filter};
use symbolize::{Debuginfod, Options, Symbolizer};
use tools::upload::endpoint::process_env;
use tools::upload::send::{encode_body, Answer, Backoff, Sender};
use tools::upload::{export, Endpoint, UploadFlags};
use tools::{flamegraph, flamegraph_html, one_recording};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A JFR file whose CPU-sample stacks start with named native frames.
    Jfr,
    /// Folded stacks (`root;...;leaf weight`) for flamegraph.pl, inferno, speedscope.
    Collapsed,
    /// An interactive SVG flame graph.
    Flamegraph,
    /// A self-contained HTML flame graph: search, zoom, reverse view, differences (--diff).
    Html,
    /// Top native functions, Java methods, stacks and threads by CPU time.
    Text,
    /// Everything above, for scripts.
    Json,
    /// pprof (gzip-compressed profile.proto) for go tool pprof, Pyroscope, Parca: samples
    /// and CPU ns per stack, thread labels, native frames with addresses and mappings.
    Pprof,
    /// OpenTelemetry profiles (OTLP, proto v1.10.0): one ExportProfilesServiceRequest, the body
    /// an OTLP/HTTP upload sends, for an OpenTelemetry Collector, Pyroscope, Parca: each
    /// sample's CPU ns and time, thread name and id, native frames with mappings and build-ids.
    Otlp,
    /// Where the input's bytes go: metadata, each constant pool, each event type, and each
    /// field of the events, per chunk and per sample (nothing is symbolized).
    Sizes,
    /// With --merge: the merged recording itself, its native PCs not resolved (as `jfrnative
    /// record --jdk-events` leaves OUT.jfr).
    Merged,
}

/// What `--jdk-samples` does with the JDK's own CPU samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum JdkSamplesArg {
    /// Leave them out: the CPU profile is jfr-native's alone.
    Drop,
    /// Keep them beside ours (reports still count only jdk.CPUTimeSample).
    Keep,
}

/// Symbolize the native frames of a jfr-native recording.
#[derive(Parser, Debug)]
// `--version`: the version and the commit it was built from (tools/build.rs).
#[command(
    name = "jfr-symbolize",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("JFRNATIVE_COMMIT"), ")"),
    about
)]
struct Args {
    /// The recording: a file (one or more chunks), several files, or a directory of chunk files
    /// (`file=DIR/`; its `*.jfr` files in name order, as `jfr assemble` takes them).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Output file; `-` or absent: standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Output format; default: from the output's extension (.jfr, .svg, .html, .txt, .json,
    /// .collapsed, .folded, .pb.gz, .pprof, .otlp, .otlp.pb), else text (html with --diff).
    #[arg(short, long, value_enum)]
    format: Option<Format>,
    /// A differential HTML flame graph: the input is NEW, this recording is BASE (each
    /// frame coloured by how its share of its recording's total changed).
    #[arg(long, value_name = "BASE")]
    diff: Option<PathBuf>,
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
    /// Root of separate debug files (repeatable; default /usr/lib/debug). Debug files not found
    /// on disk are fetched from the debuginfod servers that DEBUGINFOD_URLS names, if any.
    #[arg(long = "debug-dir")]
    debug_dirs: Vec<PathBuf>,
    /// Look for libraries by file name here before their recorded path (repeatable).
    #[arg(long = "search-dir")]
    search_dirs: Vec<PathBuf>,
    /// Look for libraries at their recorded path under this root first (repeatable): the root
    /// filesystem of the container the JVM ran in (`/proc/PID/root` while it runs, or the
    /// `.libs` directory `jfrnative attach` keeps). With a root, a library at the recorded path
    /// itself is used only when its build-id matches the recording's.
    #[arg(long = "sysroot", value_name = "DIR")]
    sysroots: Vec<PathBuf>,
    /// Symbols only: skip DWARF (no inlined frames, no lines).
    #[arg(long)]
    no_dwarf: bool,
    /// No progress line on a terminal.
    #[arg(short, long)]
    quiet: bool,
    /// The inputs are one JVM's recording by the JDK's own Flight Recorder
    /// (`-XX:StartFlightRecording`) and jfr-native's of it: merge them into one recording (every
    /// event of both, on one clock, threads as one), then write the output from it. With
    /// `-o ONE.jfr`, JDK Mission Control opens the GC pauses, locks and allocations beside our
    /// CPU samples with their native frames.
    #[arg(long)]
    merge: bool,
    /// With --merge: what becomes of the JDK's own CPU samples (jdk.ExecutionSample,
    /// jdk.NativeMethodSample). JDK 25's own jdk.CPUTimeSample events are always left out: a
    /// recording holds one jdk.CPUTimeSample type, ours.
    #[arg(long, value_enum, default_value = "drop", requires = "merge")]
    jdk_samples: JdkSamplesArg,
    /// Where to send the profile (OTLP over HTTP).
    #[command(flatten)]
    upload: UploadFlags,
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
    let ends_with = |suffix: &str| {
        args.output
            .as_ref()
            .is_some_and(|p| p.to_string_lossy().ends_with(suffix))
    };
    if ends_with(".otlp.pb") {
        return Format::Otlp;
    }
    if ends_with(".pb.gz") {
        return Format::Pprof;
    }
    match ext {
        "jfr" => Format::Jfr,
        "svg" => Format::Flamegraph,
        "html" | "htm" => Format::Html,
        "json" => Format::Json,
        "collapsed" | "folded" => Format::Collapsed,
        "pprof" => Format::Pprof,
        "otlp" => Format::Otlp,
        _ if args.diff.is_some() => Format::Html,
        _ => Format::Text,
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    // A bad endpoint, header or resource variable stops here, before anything is read (2, as
    // clap's own usage errors).
    let upload = match args.upload.endpoint(&process_env).and_then(|endpoint| {
        let resource = match &endpoint {
            Some(_) => export::resource_attributes(&process_env)?,
            None => Vec::new(),
        };
        Ok(endpoint.map(|e| (e, resource)))
    }) {
        Ok(upload) => upload,
        Err(message) => {
            eprintln!("jfr-symbolize: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&args, upload.as_ref()) {
        Ok(code) => code,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jfr-symbolize: {e}");
            ExitCode::from(1)
        }
    }
}

/// A temporary file in the directory of `path` (so that renaming it over `path` is atomic).
fn temporary_beside(path: &std::path::Path) -> io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_os_string());
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(&name);
    prefix.push(".");
    // 0666 less the umask, as a file created directly would get (tempfile's default is 0600).
    let permissions = std::os::unix::fs::PermissionsExt::from_mode(0o666);
    tempfile::Builder::new()
        .permissions(permissions)
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// What the inputs are called in messages.
fn inputs_name(inputs: &[PathBuf]) -> String {
    match inputs {
        [one] => one.display().to_string(),
        [first, ..] => format!("{} and {} more", first.display(), inputs.len() - 1),
        [] => String::new(),
    }
}

/// The samples of the BASE recording of `--diff`, or `None` (said on stderr) when nothing of
/// it can be read. Damage after readable chunks is a warning: the chunks before it are used.
fn base_aggregate(
    path: &std::path::Path,
    symbolizer: &mut Symbolizer,
    filter: &Filter,
) -> io::Result<Option<symbolize::report::Aggregate>> {
    let bytes = std::fs::read(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display())))?;
    let tool = format!("jfr-symbolize {}", env!("CARGO_PKG_VERSION"));
    let outcome = symbolize::driver::run(&bytes, symbolizer, filter, None, &tool, &mut |_, _| {})?;
    match &outcome.error {
        Some(e) if outcome.chunks == 0 => {
            eprintln!("jfr-symbolize: {} (BASE): {e}", path.display());
            return Ok(None);
        }
        Some(e) => eprintln!(
            "jfr-symbolize: {} (BASE): damaged {e}; the {} chunk(s) before it were used",
            path.display(),
            outcome.chunks
        ),
        None => {}
    }
    Ok(Some(outcome.aggregate))
}

/// `--format merged`: the merged recording, to the output (written whole, then renamed over it)
/// or standard output.
fn write_bytes(args: &Args, bytes: &[u8]) -> io::Result<ExitCode> {
    match args.output.as_ref().filter(|p| p.as_os_str() != "-") {
        Some(path) => {
            let mut file = temporary_beside(path)?;
            file.write_all(bytes)?;
            file.persist(path).map_err(|e| {
                io::Error::new(
                    e.error.kind(),
                    format!("cannot write {}: {}", path.display(), e.error),
                )
            })?;
        }
        None => {
            if io::stdout().is_terminal() {
                refuse_binary_on_terminal(Format::Merged)?;
            }
            io::stdout().lock().write_all(bytes)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--format sizes`: the byte breakdown of the input, to the output or standard output.
fn write_sizes(args: &Args, bytes: &[u8]) -> io::Result<ExitCode> {
    let sizes = match symbolize::jfr::sizes::measure(bytes) {
        Ok(sizes) => sizes,
        Err(e) => {
            eprintln!("jfr-symbolize: {}: {e}", inputs_name(&args.inputs));
            return Ok(ExitCode::from(2));
        }
    };
    let mut text = Vec::new();
    symbolize::jfr::sizes::write_text(&sizes, &mut text)?;
    match args.output.as_ref().filter(|p| p.as_os_str() != "-") {
        Some(path) => std::fs::write(path, text).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
        })?,
        None => io::stdout().lock().write_all(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Posts the OTLP export of `agg` to `endpoint`, retrying with backoff (429, 5xx, connection
/// failures) up to 5 times.
fn upload_export(
    agg: &symbolize::report::Aggregate,
    (endpoint, resource): &(Endpoint, Vec<(String, String)>),
) -> io::Result<()> {
    let request = otlp::encode(agg, resource, endpoint.shape)?;
    let body = encode_body(endpoint.gzip, &request);
    let sender = Sender::new(endpoint.clone());
    let mut backoff = Backoff::new();
    let mut tries = 0;
    loop {
        tries += 1;
        match sender.post(&body) {
            Answer::Sent { partial, .. } => {
                eprintln!(
                    "jfr-symbolize: sent {} samples ({:.1} KB) to {}",
                    agg.total.samples,
                    body.len() as f64 / 1024.0,
                    endpoint.url
                );
                if let Some(p) = partial {
                    eprintln!("jfr-symbolize: {}: {p}", endpoint.url);
                }
                return Ok(());
            }
            Answer::Rejected { why } => {
                return Err(io::Error::other(format!(
                    "upload to {} refused: {why}",
                    endpoint.url
                )))
            }
            Answer::Retry { why, .. } if tries >= 5 => {
                return Err(io::Error::other(format!(
                    "upload to {} failed after {tries} tries: {why}",
                    endpoint.url
                )))
            }
            Answer::Retry { why, after } => {
                let wait = backoff.wait(after);
                eprintln!(
                    "jfr-symbolize: {}: {why}; trying again in {:.1} s",
                    endpoint.url,
                    wait.as_secs_f64()
                );
                std::thread::sleep(wait);
            }
        }
    }
}

/// Refuses to write a binary format to a terminal, naming the option that writes it to a file.
fn refuse_binary_on_terminal(format: Format) -> io::Result<()> {
    let what = match format {
        Format::Jfr | Format::Merged => "a JFR file is binary: give -o OUT.jfr",
        Format::Pprof => "a pprof file is binary: give -o OUT.pb.gz",
        Format::Otlp => "an OTLP file is binary: give -o OUT.otlp.pb",
        _ => return Ok(()),
    };
    Err(io::Error::other(format!(
        "{what} or redirect standard output"
    )))
}

/// Where and how the symbolizer looks for debug information, from the options.
fn symbolizer_options(args: &Args) -> Options {
    let mut options = Options::default();
    if !args.debug_dirs.is_empty() {
        options.debug_dirs = args.debug_dirs.clone();
    }
    options.search_dirs = args.search_dirs.clone();
    options.sysroots = args.sysroots.clone();
    options.kept_roots = symbolize::driver::kept_library_roots(&args.inputs);
    options.dwarf = !args.no_dwarf;
    // As elfutils' tools: debuginfod servers only when DEBUGINFOD_URLS names some.
    options.debuginfod = Debuginfod::from_env();
    options
}

/// `--merge`: the inputs merged, with what was done said on stderr.
fn merged_inputs(args: &Args, files: &[PathBuf]) -> io::Result<Vec<u8>> {
    let jdk_samples = match args.jdk_samples {
        JdkSamplesArg::Drop => JdkSamples::Drop,
        JdkSamplesArg::Keep => JdkSamples::Keep,
    };
    let (bytes, summary) = one_recording::merge_files(files, jdk_samples)?;
    for line in one_recording::describe(&summary) {
        eprintln!("jfr-symbolize: {line}");
    }
    Ok(bytes)
}

fn run(args: &Args, upload: Option<&(Endpoint, Vec<(String, String)>)>) -> io::Result<ExitCode> {
    let files = symbolize::driver::input_files(&args.inputs)?;
    let format = format_of(args);
    if format == Format::Merged && !args.merge {
        return Err(io::Error::other(
            "--format merged writes the merge of --merge's inputs",
        ));
    }
    let merged = if args.merge {
        Some(merged_inputs(args, &files)?)
    } else {
        None
    };
    if let (Some(bytes), Format::Merged) = (&merged, format) {
        return write_bytes(args, bytes);
    }
    let sizes: Vec<u64> = match &merged {
        Some(bytes) => vec![bytes.len() as u64],
        None => files
            .iter()
            .map(|f| {
                std::fs::metadata(f).map(|m| m.len()).map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot read {}: {e}", f.display()))
                })
            })
            .collect::<io::Result<_>>()?,
    };
    let files = if merged.is_some() {
        vec![PathBuf::from(inputs_name(&args.inputs))]
    } else {
        files
    };
    let total_bytes: u64 = sizes.iter().sum();
    if args.diff.is_some() && format != Format::Html {
        return Err(io::Error::other(
            "--diff makes an HTML flame graph: give -o OUT.html or --format html",
        ));
    }
    if format == Format::Sizes {
        if let Some(bytes) = &merged {
            return write_sizes(args, bytes);
        }
        let mut bytes = Vec::new();
        for file in &files {
            bytes.extend(std::fs::read(file).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot read {}: {e}", file.display()))
            })?);
        }
        return write_sizes(args, &bytes);
    }
    // With --upload and no -o, the upload is the output.
    let only_upload = upload.is_some() && args.output.is_none();
    let to_stdout = !only_upload && args.output.as_ref().is_none_or(|p| p.as_os_str() == "-");
    if to_stdout && io::stdout().is_terminal() {
        refuse_binary_on_terminal(format)?;
    }
    let mut symbolizer = Symbolizer::new(symbolizer_options(args));
    let filter = Filter {
        threads: args.threads.clone(),
        per_thread: args.per_thread,
        from_ns: args.from.map(|s| (s * 1e9) as u64),
        to_ns: args.to.map(|s| (s * 1e9) as u64),
        locations: format == Format::Pprof,
        events: format == Format::Otlp || upload.is_some(),
    };
    // A file output is written to a temporary file beside it and renamed over it only once
    // something could be read: an existing output survives unreadable input, and no empty
    // file is left behind (the temporary file is removed when dropped).
    let output_path = args.output.clone().filter(|p| p.as_os_str() != "-");
    let temporary = match &output_path {
        Some(path) => Some(temporary_beside(path)?),
        None => None,
    };
    let mut sink: Box<dyn Write> = match &temporary {
        None if only_upload => Box::new(io::sink()),
        None => Box::new(io::BufWriter::new(io::stdout().lock())),
        Some(file) => Box::new(io::BufWriter::new(file.as_file().try_clone()?)),
    };
    let show_progress = !args.quiet && io::stderr().is_terminal() && total_bytes > 32 << 20;
    let mut done_bytes = 0u64;
    let tool = format!("jfr-symbolize {}", env!("CARGO_PKG_VERSION"));
    let mut pass = symbolize::driver::Pass::new(&mut symbolizer, &filter, &tool);
    // Damaged files, with what stopped them; reading goes on with the next file.
    let mut damaged = Vec::new();
    for (i, (file, &size)) in files.iter().zip(&sizes).enumerate() {
        let bytes = tools::report::input_bytes(merged.as_deref(), file)?;
        let mut progress = |done: usize, _: usize| {
            if show_progress {
                let at = done_bytes + done as u64;
                eprint!("\rjfr-symbolize: {:3}%", at * 100 / total_bytes.max(1));
            }
        };
        let jfr_out: Option<&mut dyn Write> = if format == Format::Jfr && !only_upload {
            Some(&mut *sink)
        } else {
            None
        };
        let last = i + 1 == files.len();
        let outcome = pass.add_file(&bytes, jfr_out, last, &mut progress)?;
        if let Some(e) = outcome.error {
            damaged.push((file.clone(), outcome.chunks, e));
        }
        done_bytes += size;
    }
    let outcome = pass.finish();
    let input = inputs_name(&args.inputs);
    if outcome.chunks == 0 {
        if let Some((file, _, e)) = damaged.first() {
            // Nothing readable: no output at all (the temporary file goes with `temporary`).
            let kept = output_path
                .as_ref()
                .filter(|p| p.exists())
                .map(|p| format!("; {} is left as it was", p.display()))
                .unwrap_or_default();
            eprintln!("jfr-symbolize: {}: {e}{kept}", file.display());
            return Ok(ExitCode::from(2));
        }
    }
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
        _ if only_upload => {}
        Format::Jfr => {}
        Format::Collapsed => collapsed::write(agg, unit, &mut *sink)?,
        Format::Flamegraph => {
            let title = format!("CPU time: {input}");
            flamegraph::write(agg, unit, &title, &mut *sink)?;
        }
        Format::Html => {
            let name = input.clone();
            if let Some(base_path) = &args.diff {
                let Some(base) = base_aggregate(base_path, &mut symbolizer, &filter)? else {
                    return Ok(ExitCode::from(2));
                };
                let base_name = base_path.display().to_string();
                let title = format!("CPU time: {name} (NEW) against {base_name} (BASE)");
                let (base, new) = ((&base, base_name.as_str()), (agg, name.as_str()));
                flamegraph_html::write_diff(base, new, unit, &title, &mut *sink)?;
            } else {
                let title = format!("CPU time: {name}");
                flamegraph_html::write(agg, &name, unit, &title, &mut *sink)?;
            }
        }
        Format::Text => text::write(agg, args.top, &mut *sink)?,
        Format::Json => json::write(agg, &mut *sink)?,
        Format::Pprof => pprof::write(agg, &mut *sink)?,
        Format::Otlp => {
            let resource = match upload {
                Some((_, resource)) => resource.clone(),
                None => export::resource_attributes(&process_env).map_err(io::Error::other)?,
            };
            otlp::write(agg, &resource, args.upload.otlp_shape.into(), &mut *sink)?
        }
        Format::Sizes | Format::Merged => {}
    }
    sink.flush()?;
    drop(sink);
    if let (Some(file), Some(path)) = (temporary, &output_path) {
        file.persist(path).map_err(|e| {
            io::Error::new(
                e.error.kind(),
                format!("cannot write {}: {}", path.display(), e.error),
            )
        })?;
    }
    if let Some(upload) = upload {
        upload_export(agg, upload)?;
    }
    for source in symbolizer.sources() {
        eprintln!("jfr-symbolize: {}", source.describe());
    }
    for p in symbolizer.problems() {
        eprintln!("jfr-symbolize: {}: {}", p.library, p.reason);
    }
    for (file, chunks, e) in &damaged {
        eprintln!(
            "jfr-symbolize: {}: damaged {e}; the {chunks} chunk(s) before it were processed",
            file.display()
        );
    }
    if !damaged.is_empty() {
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
