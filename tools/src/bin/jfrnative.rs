//! `jfrnative`: CPU profiles of Java programs with native frames, in JFR.
//!
//! - `jfrnative record [-i 10ms] [-o out.jfr] [--] java ARGS...`
//! - `jfrnative attach PID [-d 30s] [-o out.jfr]`
//! - `jfrnative record|attach ... -o DIR/ --upload [URL]`: each finished chunk sent to an OTLP
//!   endpoint while the JVM runs
//! - `jfrnative demo`

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use tools::session::{self, Session};
use tools::upload::continuous::ContinuousFlags;
use tools::{any_command, demo, jdk, one_recording};

#[path = "jfrnative/args.rs"]
mod args;
#[path = "jfrnative/attach_cmd.rs"]
mod attach_cmd;
#[path = "jfrnative/upload_cmd.rs"]
mod upload_cmd;
use args::{default_name, process_alive, AttachArgs, Common, DemoArgs, Failure, RecordArgs};
use attach_cmd::attach_command;
use upload_cmd::{checked_upload, finish_upload, start_upload, Upload};

/// CPU-time profiles of Java programs with the native frames (C, C++, Rust, libc, the JVM)
/// above the Java stack, as JFR files, flame graphs and a report.
#[derive(Parser, Debug)]
// `--version`: the version and the commit it was built from (tools/build.rs).
#[command(
    name = "jfrnative",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("JFRNATIVE_COMMIT"), ")"),
    about
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

const RECORD_EXAMPLES: &str = "Examples:
  jfrnative record -- java -jar app.jar
  jfrnative record -i 1ms -o app.jfr -- java -cp app.jar com.example.Main
  jfrnative record --cstack fp --native-depth 64 --chunk 10s/64mb -- java -jar app.jar
  jfrnative record --jstack agct-vm --nstack inline -- $JAVA_HOME/bin/java -jar app.jar
  jfrnative record -o rec/ --upload http://collector:4318/v1development/profiles -- java -jar app.jar

Leaves out.jfr (the recording), out.symbolized.jfr (for JDK Mission Control and jfr print),
out.svg (flame graph) and out.txt (the full report).";

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a Java command with the agent; when it exits, symbolize and report.
    #[command(after_help = RECORD_EXAMPLES)]
    Record(RecordArgs),
    /// Record a running JVM for a while (Ctrl-C stops early), then symbolize and report.
    Attach(AttachArgs),
    /// Build the bundled Java + JNI demo (hot paths in C, zlib and libc), record and report.
    Demo(DemoArgs),
}

impl Cmd {
    fn common(&self) -> &Common {
        match self {
            Cmd::Record(a) => &a.common,
            Cmd::Attach(a) => &a.common,
            Cmd::Demo(a) => &a.common,
        }
    }

    /// The upload flags and the output they go with.
    fn upload(&self) -> Option<(&ContinuousFlags, Option<&Path>)> {
        match self {
            Cmd::Record(a) => Some((&a.upload, a.output.as_deref())),
            Cmd::Attach(a) => Some((&a.upload, a.output.as_deref())),
            Cmd::Demo(_) => None,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Bad agent options stop here, once, before any JVM or build starts (2, as clap's own
    // usage errors).
    if let Err(message) = cli.command.common().agent_flags.validate() {
        eprintln!("jfrnative: {message}");
        return ExitCode::from(2);
    }
    // So do a bad upload endpoint, header, variable or spool bound.
    let upload = match cli.command.upload() {
        Some((flags, output)) => match checked_upload(flags, output) {
            Ok(u) => u,
            Err(message) => {
                eprintln!("jfrnative: {message}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let result =
        jdk::check_platform(std::env::consts::OS, std::env::consts::ARCH).and_then(|()| match cli
            .command
        {
            Cmd::Record(a) => record(a, upload),
            Cmd::Attach(a) => attach_command(a, upload),
            Cmd::Demo(a) => demo_command(a),
        });
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("jfrnative: {message}");
            ExitCode::from(1)
        }
    }
}

/// Runs `java` with the agent and follows it; returns the JVM's exit status.
fn run_java(
    session: &mut Session,
    java: &Path,
    args: &[String],
) -> Result<std::process::ExitStatus, Failure> {
    let child_pid = Arc::new(AtomicI32::new(0));
    let interrupted = session::on_interrupt(child_pid.clone())?;
    let agentpath = format!(
        "-agentpath:{}={}",
        session.agent.display(),
        session.agent_options()
    );
    if let Some(jdk) = &mut session.jdk_events {
        // A JVM older than 17 takes no EVENT#setting options: its settings in a file instead.
        if let Some(derived) =
            one_recording::settings_for_java(&jdk.settings, java, &jdk.directory)?
        {
            jdk.settings = derived.display().to_string();
        }
    }
    let jdk_options = match &session.jdk_events {
        Some(jdk) => jdk.jvm_options()?,
        None => Vec::new(),
    };
    let mut child = Command::new(java)
        .arg(agentpath)
        .args(jdk_options)
        .args(args)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", java.display()))?;
    child_pid.store(child.id() as i32, Ordering::Release);
    if let Some(jdk) = &mut session.jdk_events {
        jdk.pid = Some(child.id());
    }
    let mut exit = None;
    let mut told = false;
    session.follow(|_| {
        if interrupted.load(Ordering::Acquire) && !told {
            told = true;
            eprintln!("\njfrnative: interrupted: the JVM is finishing the recording");
        }
        exit = child.try_wait().ok().flatten();
        exit.is_some()
    });
    let status = match exit {
        Some(s) => s,
        None => child
            .wait()
            .map_err(|e| format!("waiting for the JVM: {e}"))?,
    };
    child_pid.store(0, Ordering::Release);
    if let Some(jdk) = &session.jdk_events {
        let _ = std::fs::remove_file(one_recording::derived_settings(&jdk.directory));
    }
    Ok(status)
}

fn record(a: RecordArgs, upload: Option<Upload>) -> Result<ExitCode, Failure> {
    let (program, args) = a
        .command
        .split_first()
        .ok_or("give the Java command to run: jfrnative record -- java -jar app.jar")?;
    if Path::new(program).file_name() != Some(std::ffi::OsStr::new("java")) {
        if upload.is_some() {
            return Err(format!(
                "--upload records one JVM into -o DIR/; {program} is not java and may start \
                 several (record them one by one with java, or attach to each)"
            ));
        }
        return record_any(&a, program, args);
    }
    let java = jdk::resolve_java(
        program,
        std::env::var_os("JAVA_HOME").as_deref(),
        std::env::var_os("PATH").as_deref(),
    )?;
    let output = a.output.unwrap_or_else(|| default_name("jfrnative"));
    let mut session = a.common.session(&output)?;
    let upload = start_upload(&session, upload, &session.outputs.recording)?;
    let status = run_java(&mut session, &java, args);
    if let Some(u) = &upload {
        u.stop_watching();
    }
    let status = status?;
    let finished = session.finish(a.common.top);
    finish_upload(upload);
    finished?;
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

/// Runs a command that is not `java` with the agent in `JAVA_TOOL_OPTIONS`; each JVM it starts
/// writes `OUT-PID.jfr`, and each finished one is reported. Returns the command's exit status.
fn record_any(a: &RecordArgs, program: &str, args: &[String]) -> Result<ExitCode, Failure> {
    let output = a
        .output
        .clone()
        .unwrap_or_else(|| default_name("jfrnative"));
    if output.to_string_lossy().ends_with('/') || output.is_dir() {
        return Err(format!(
            "-o {}: a directory recording records one JVM; a command that may start several \
             writes one file per JVM: give a file name (OUT.jfr becomes OUT-PID.jfr)",
            output.display()
        ));
    }
    let pattern = any_command::pattern_of(&session::absolute(&output)?);
    // Checks the agent and that files can be written there (with the pattern's own name).
    let template = a.common.session(&pattern)?;
    let mut tool_options = any_command::tool_options(
        std::env::var_os("JAVA_TOOL_OPTIONS").as_deref(),
        &template.agent,
        &template.agent_options(),
    )?;
    // The JDK's recordings of every JVM go into one directory, each named by its pid.
    let jdk_events = template.jdk_events.clone().map(|mut j| {
        j.directory = one_recording::jdk_directory(&session::absolute(&output).unwrap_or_default());
        j
    });
    if let Some(jdk) = &jdk_events {
        for option in jdk.jvm_options()? {
            tool_options.push(" ");
            tool_options.push(option);
        }
    }
    let child_pid = Arc::new(AtomicI32::new(0));
    let interrupted = session::on_interrupt(child_pid.clone())?;
    let mut child = Command::new(program)
        .args(args)
        .env("JAVA_TOOL_OPTIONS", &tool_options)
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    child_pid.store(child.id() as i32, Ordering::Release);
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| format!("waiting for {program}: {e}"))?
        {
            break status;
        }
        if terminal {
            let jvms = any_command::recordings(&pattern).len();
            eprint!(
                "\r{:.0?} {program}: {jvms} JVM(s) recorded{}\x1b[K",
                started.elapsed(),
                if interrupted.load(Ordering::Acquire) {
                    " (interrupted)"
                } else {
                    ""
                }
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    child_pid.store(0, Ordering::Release);
    if terminal {
        eprint!("\r\x1b[K");
    }
    let found = any_command::recordings(&pattern);
    if found.is_empty() {
        return Err(format!(
            "no JVM recorded: {program} started no HotSpot JVM, or did not pass \
             JAVA_TOOL_OPTIONS on to it (a JVM that reads it prints \"Picked up \
             JAVA_TOOL_OPTIONS\"); the recordings would be {}",
            pattern.display()
        ));
    }
    println!(
        "jfrnative: {} JVM(s) recorded by {program} ({}):",
        found.len(),
        pattern.display()
    );
    for (pid, file) in &found {
        println!("  JVM {pid}: {}", file.display());
    }
    for (pid, file) in found {
        let mut status_file = file.clone().into_os_string();
        status_file.push(".status");
        let jvm = Session {
            agent: template.agent.clone(),
            outputs: tools::report::Outputs::beside(&file),
            status_file: PathBuf::from(status_file),
            settings: template.settings.clone(),
            sysroots: Vec::new(),
            jdk_events: jdk_events.clone().map(|j| session::JdkEvents {
                pid: Some(pid),
                ..j
            }),
        };
        println!("\n== JVM {pid}: {}", file.display());
        if process_alive(pid) && jvm.status().is_some_and(|s| s.state == "recording") {
            println!(
                "still running after {program} exited (a daemon?): it keeps recording into {}; \
                 symbolize it with jfr-symbolize once it has stopped",
                file.display()
            );
            continue;
        }
        if let Err(e) = jvm.finish(a.common.top) {
            eprintln!("jfrnative: JVM {pid}: {e}");
        }
    }
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

fn demo_command(a: DemoArgs) -> Result<ExitCode, Failure> {
    let java_home = std::env::var_os("JAVA_HOME").filter(|h| !h.is_empty());
    let java =
        jdk::java_in_home_or_path(java_home.as_deref(), std::env::var_os("PATH").as_deref())?;
    let home = match java_home {
        Some(home) => PathBuf::from(home),
        None => jdk::home_of(&java)
            .ok_or_else(|| format!("cannot find the JDK home of {}", java.display()))?,
    };
    std::fs::create_dir_all(&a.dir).map_err(|e| {
        format!(
            "cannot create {}: {e}; choose another --dir",
            a.dir.display()
        )
    })?;
    eprintln!(
        "jfrnative demo: building the demo program with {} ...",
        home.display()
    );
    let build = session::absolute(&demo::build(&a.dir, &home)?)?;
    let mut session = a.common.session(&a.dir.join("demo.jfr"))?;
    eprintln!(
        "jfrnative demo: recording {:.1} s of 4 threads: c-checksum (our C), zlib-compress \
         (zlib), libc-qsort (libc's qsort calling a C comparator), java-hashmap (Java)",
        a.duration.as_secs_f64()
    );
    // The demo loads its JNI library: JDK 22+ warn about that unless it is allowed (the option
    // exists from JDK 17 on; JDK 11 refuses it).
    let native_access = jdk::feature_release(&home)
        .is_some_and(|release| release >= 17)
        .then(|| "--enable-native-access=ALL-UNNAMED".to_string());
    let args: Vec<String> = native_access
        .into_iter()
        .chain([
            format!("-Djava.library.path={}", build.display()),
            "-cp".to_string(),
            build.display().to_string(),
            demo::MAIN_CLASS.to_string(),
            format!("{}", a.duration.as_secs_f64()),
        ])
        .collect();
    let status = run_java(&mut session, &java, &args)?;
    if !status.success() && session.status().is_none() {
        return Err(format!("the demo program failed ({status})"));
    }
    println!();
    session.finish(a.common.top)?;
    println!(
        "\nThe native functions above are what the JDK's own profilers show only as \
         JfrNativeDemo.checksum, .compress and .sort.\nzlib and libc's qsort are built \
         without frame pointers on Debian: their stacks are whole because the agent unwinds \
         them from call-frame information (.eh_frame; --cstack fp would cut them short); \
         functions without a symbol show as the nearest exported symbol plus an offset \
         (grey in the flame graph).\nOpen {} in JDK Mission Control \
         (File > Open File) to see the native frames in its stack traces.",
        session.outputs.symbolized.display()
    );
    Ok(ExitCode::SUCCESS)
}
