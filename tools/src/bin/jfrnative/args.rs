//! The command line of `jfrnative`'s subcommands: the options each takes, and the name of a
//! recording when none is given.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use tools::agent_flags::AgentFlags;
use tools::session::{self, Session};
use tools::upload::continuous::ContinuousFlags;
use tools::{duration, one_recording};

#[derive(Args, Debug)]
pub struct Common {
    #[command(flatten)]
    pub agent_flags: AgentFlags,
    /// The agent library (default: libjfrnative.so next to this executable).
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// Rows per table in the report.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Also record the JDK's own Flight Recorder events (GC, allocation, locks, I/O, class
    /// loading, safepoints, ...) with these settings: `default`, `profile` or a .jfc file. Its
    /// CPU samplers are off; OUT.jfr holds the JDK's chunks and ours on one clock, and
    /// OUT.symbolized.jfr is that recording with native frames in the stacks. Reports and
    /// exports count only CPU samples.
    #[arg(
        long,
        value_name = "SETTINGS",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "default"
    )]
    pub jdk_events: Option<String>,
}

impl Common {
    /// A recording into `output` with these options (checked by `main` before any command
    /// starts).
    pub fn session(&self, output: &Path) -> Result<Session, String> {
        let mut session = Session::new(self.agent.as_deref(), output, self.agent_flags.pairs())?;
        if let Some(value) = &self.jdk_events {
            session.jdk_events = Some(session::JdkEvents {
                settings: one_recording::settings(value)?,
                directory: one_recording::jdk_directory(&session.outputs.recording),
                pid: None,
            });
        }
        Ok(session)
    }
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    #[command(flatten)]
    pub common: Common,
    /// The recording (default: jfrnative-YYYYMMDD-HHMMSS.jfr).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The command: `java` (from JAVA_HOME, else PATH) or a path to java, and its arguments;
    /// or any other command (gradle, mvn, a script), whose JVMs get the agent through
    /// JAVA_TOOL_OPTIONS and each write OUT-PID.jfr.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
    /// Send each finished chunk (with -o DIR/) to an OTLP endpoint.
    #[command(flatten)]
    pub upload: ContinuousFlags,
}

#[derive(Args, Debug)]
pub struct AttachArgs {
    /// The JVM's process id (`jps`, `jcmd`).
    pub pid: u32,
    /// How long to record.
    #[arg(short, long, default_value = "30s", value_parser = duration::parse)]
    pub duration: Duration,
    /// The recording (default: jfrnative-PID-YYYYMMDD-HHMMSS.jfr).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// How long to wait for the JVM to answer the attach request.
    #[arg(long, default_value = "10s", value_parser = duration::parse)]
    pub attach_timeout: Duration,
    #[command(flatten)]
    pub common: Common,
    /// Send each finished chunk (with -o DIR/) to an OTLP endpoint.
    #[command(flatten)]
    pub upload: ContinuousFlags,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// How long the demo program runs.
    #[arg(short, long, default_value = "5s", value_parser = duration::parse)]
    pub duration: Duration,
    /// Where the demo is built and its recording written.
    #[arg(long, default_value = "jfrnative-demo")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub common: Common,
}

/// A failure, printed as `jfrnative: MESSAGE`.
pub type Failure = String;

/// `PREFIX-YYYYMMDD-HHMMSS.jfr`: the recording's name when `-o` is not given.
pub fn default_name(prefix: &str) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    PathBuf::from(format!("{prefix}-{}.jfr", jfr_writer::utc_timestamp(now)))
}

/// Whether process `pid` runs (exists and is no zombie).
pub fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
}
