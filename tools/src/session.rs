//! One recording as the `jfrnative` CLI runs it: where the agent and the files are, the agent's
//! option string, following the recording on a live status line, and the report at the end.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::one_recording;
use crate::report::{self, Outputs};
use crate::status::{self, Status};

/// The agent's file name, looked for next to the CLI's executable.
pub const AGENT_FILE: &str = "libjfrnative.so";

/// The agent library: `given`, else `libjfrnative.so` next to this executable (a cargo build),
/// else in `../lib/` from it (the release bundle's `bin/` and `lib/`).
pub fn agent_library(given: Option<&Path>) -> Result<PathBuf, String> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => {
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot locate this executable: {e}"))?;
            let beside = exe.with_file_name(AGENT_FILE);
            let bundled = exe
                .parent()
                .and_then(Path::parent)
                .map(|d| d.join("lib").join(AGENT_FILE));
            match bundled {
                Some(lib) if !beside.is_file() && lib.is_file() => lib,
                _ => beside,
            }
        }
    };
    if !path.is_file() {
        let how = if given.is_some() {
            "give the path of libjfrnative.so with --agent"
        } else {
            "build it next to jfrnative with `cargo build --release -p recorder -p tools`, or \
             give its path with --agent (a release bundle has it in lib/)"
        };
        return Err(format!(
            "agent library not found: {}; {how}",
            path.display()
        ));
    }
    path.canonicalize()
        .map_err(|e| format!("agent library {}: {e}", path.display()))
}

/// An absolute path (the JVM may run in another directory).
pub fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A recording's files and agent options.
#[derive(Debug, Clone)]
pub struct Session {
    /// The agent library.
    pub agent: PathBuf,
    /// The recording and the files beside it.
    pub outputs: Outputs,
    /// The agent's status file (removed at the end).
    pub status_file: PathBuf,
    /// The agent's options other than `file` and `status`, as (option, value).
    pub settings: Vec<(&'static str, String)>,
    /// Roots the recording's libraries are looked for under first (a container's root).
    pub sysroots: Vec<PathBuf>,
    /// The JDK's own Flight Recorder beside the agent (`--jdk-events`).
    pub jdk_events: Option<JdkEvents>,
}

/// The JDK's recording that `--jdk-events` starts beside ours.
#[derive(Debug, Clone)]
pub struct JdkEvents {
    /// `default`, `profile` or a `.jfc` path.
    pub settings: String,
    /// Where the JDK writes it ([`one_recording::jdk_directory`]).
    pub directory: PathBuf,
    /// The JVM's pid, when known (several JVMs write into one directory).
    pub pid: Option<u32>,
}

impl JdkEvents {
    /// The JVM options that start the JDK's recording (the directory is created).
    pub fn jvm_options(&self) -> Result<Vec<String>, String> {
        let repository = self.directory.join("repository");
        std::fs::create_dir_all(&repository)
            .map_err(|e| format!("cannot create {}: {e}", repository.display()))?;
        let options = vec![
            format!(
                "-XX:FlightRecorderOptions:repository={}",
                repository.display()
            ),
            one_recording::start_option(&self.settings, &self.directory),
        ];
        if let Some(o) = options.iter().find(|o| o.chars().any(char::is_whitespace)) {
            return Err(format!(
                "--jdk-events: the path has a space, which JAVA_TOOL_OPTIONS cannot carry: {o}"
            ));
        }
        Ok(options)
    }
}

impl Session {
    /// Checks the agent and the output files; `settings` are the agent's other options (checked
    /// by the caller).
    pub fn new(
        agent: Option<&Path>,
        output: &Path,
        settings: Vec<(&'static str, String)>,
    ) -> Result<Session, String> {
        let agent = agent_library(agent)?;
        // A path ending in '/' (or an existing directory): a directory of chunk files.
        let directory = output.to_string_lossy().ends_with('/') || output.is_dir();
        if let Some((key, _)) = settings
            .iter()
            .find(|(key, _)| !directory && matches!(*key, "maxsize" | "maxage"))
        {
            return Err(format!(
                "--{key} bounds a directory recording: give -o DIR/ (one file per chunk), not \
                 the file {}",
                output.display()
            ));
        }
        let recording = absolute(output)?;
        if recording.to_string_lossy().contains(',') {
            return Err(format!(
                "the output path {} contains ',', which separates the agent's options: choose \
                 another with -o",
                recording.display()
            ));
        }
        let outputs = if directory {
            // Without its trailing '/': the other files go beside the directory, not into it.
            let dir: PathBuf = recording.components().collect();
            Outputs::beside_directory(&dir)
        } else {
            Outputs::beside(&recording)
        };
        outputs.check_writable()?;
        let mut status_file = recording.clone().into_os_string();
        status_file.push(".status");
        let status_file = PathBuf::from(status_file);
        let _ = std::fs::remove_file(&status_file);
        Ok(Session {
            agent,
            outputs,
            status_file,
            settings,
            sysroots: Vec::new(),
            jdk_events: None,
        })
    }

    /// The agent's option string.
    pub fn agent_options(&self) -> String {
        self.agent_options_for(&self.outputs.recording, &self.status_file)
    }

    /// The agent's option string with the recording and the status file at other paths (as a
    /// JVM that sees other files than ours names them: [`crate::stage`]).
    pub fn agent_options_for(&self, recording: &Path, status_file: &Path) -> String {
        let slash = if self.outputs.directory { "/" } else { "" };
        let mut options = format!("file={}{slash}", recording.display());
        for (key, value) in &self.settings {
            options.push_str(&format!(",{key}={value}"));
        }
        options.push_str(&format!(",status={}", status_file.display()));
        options
    }

    /// What the agent last wrote.
    pub fn status(&self) -> Option<Status> {
        Status::read(&self.status_file)
    }

    /// Calls `done` every 200 ms, drawing the status line on a terminal, until it returns true.
    pub fn follow(&self, mut done: impl FnMut(Option<&Status>) -> bool) {
        let started = Instant::now();
        let terminal = std::io::stderr().is_terminal();
        loop {
            let s = self.status();
            if done(s.as_ref()) {
                break;
            }
            if terminal {
                eprint!("\r{}\x1b[K", status::line(started.elapsed(), s.as_ref()));
                let _ = std::io::stderr().flush();
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        if terminal {
            eprint!("\r\x1b[K");
        }
    }

    /// After the recording: checks the agent's last word, symbolizes, writes the views, prints
    /// the short report and where the files are.
    pub fn finish(&self, top: usize) -> Result<(), String> {
        let last = self.status();
        let _ = std::fs::remove_file(&self.status_file);
        let last =
            last.ok_or("the agent did not start recording (the JVM's own messages above say why)")?;
        if last.is_failed() {
            return Err(agent_message(&last.message));
        }
        if last.state != "finished" {
            eprintln!(
                "jfrnative: the recording was not finished (the JVM died?); using the chunks \
                 written before"
            );
        }
        let mut notes = Vec::new();
        let mut jdk_for_report = Vec::new();
        if let Some(jdk) = &self.jdk_events {
            match self.merge_jdk_recording(jdk) {
                Ok((lines, kept)) => {
                    notes = lines;
                    jdk_for_report = kept;
                }
                Err(e) => eprintln!("jfrnative: {e}"),
            }
        }
        let summary = report::write(&self.outputs, top, &self.sysroots, &jdk_for_report)
            .map_err(|e| e.to_string())?;
        println!("{}", summary.text.trim_end());
        for line in notes.iter().chain(&summary.notes) {
            println!("jfrnative: {line}");
        }
        for w in &summary.warnings {
            eprintln!("jfrnative: {w}");
        }
        let o = &self.outputs;
        println!();
        println!("Files:");
        for (path, what) in [
            (
                &o.recording,
                if o.directory {
                    "the recording, one file per chunk: native PCs and jdk.NativeLibrary events"
                } else {
                    "the recording: native PCs and jdk.NativeLibrary events"
                },
            ),
            (
                &o.symbolized,
                "native frames in the stacks: JDK Mission Control, `jfr print`, `jfr view`",
            ),
            (
                &o.html,
                "flame graph: open in a browser (search, zoom, reverse view)",
            ),
            (&o.flame_graph, "the same flame graph as SVG"),
            (&o.report, "the full report: top stacks and threads too"),
        ] {
            println!("  {}\n      {what}", path.display());
        }
        Ok(())
    }
}

impl Session {
    /// Merges the JDK's recording of this JVM into ours (a file recording), or, for a directory
    /// recording, returns it for the symbolized JFR only (the directory's chunk files, sent
    /// and mirrored as they finished, stay ours). Returns what the merge said.
    fn merge_jdk_recording(&self, jdk: &JdkEvents) -> Result<(Vec<String>, Vec<PathBuf>), String> {
        let files = one_recording::jdk_files_of(&jdk.directory, jdk.pid);
        if files.is_empty() {
            return Err(format!(
                "--jdk-events: the JDK wrote no recording into {} (did the JVM start it? its \
                 messages above say); {} holds jfr-native's samples alone",
                jdk.directory.display(),
                self.outputs.recording.display()
            ));
        }
        if self.outputs.directory {
            return Ok((Vec::new(), files));
        }
        let mut all = files.clone();
        all.push(self.outputs.recording.clone());
        let (bytes, summary) = one_recording::merge_files(&all, symbolize::merge::JdkSamples::Drop)
            .map_err(|e| {
                format!(
                    "--jdk-events: the JDK's recording could not be merged ({e}); {} holds \
                     jfr-native's samples alone",
                    self.outputs.recording.display()
                )
            })?;
        one_recording::replace(&self.outputs.recording, &bytes)
            .map_err(|e| format!("--jdk-events: {e}"))?;
        one_recording::remove_jdk_files(&jdk.directory, &files);
        Ok((one_recording::describe(&summary), Vec::new()))
    }
}

/// An agent message without the agent's own `jfr-native: ` prefix.
pub fn agent_message(message: &str) -> String {
    message
        .strip_prefix("jfr-native: ")
        .unwrap_or(message)
        .to_string()
}

/// Ctrl-C (and SIGTERM, SIGHUP): recorded in a flag, and forwarded as SIGINT to the process
/// in `forward_to` (if not 0), so that a JVM started by `record` finishes its file even when
/// the signal was not sent to the whole process group.
pub fn on_interrupt(forward_to: Arc<AtomicI32>) -> Result<Arc<AtomicBool>, String> {
    let flag = Arc::new(AtomicBool::new(false));
    let set = flag.clone();
    ctrlc::set_handler(move || {
        set.store(true, Ordering::Release);
        let pid = forward_to.load(Ordering::Acquire);
        if pid > 0 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGINT,
            );
        }
    })
    .map_err(|e| format!("cannot handle Ctrl-C: {e}"))?;
    Ok(flag)
}
