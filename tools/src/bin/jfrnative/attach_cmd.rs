//! `jfrnative attach PID`: the agent loaded into a running JVM, the recording followed, stopped
//! and reported. A JVM that cannot see our files (a container's, another user's) gets the agent
//! and the recording through a stage in its own `/tmp` ([`tools::stage`]), copied to this side
//! as the agent finishes it ([`tools::mirror`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicI32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tools::atomic_file::copy_atomically;
use tools::mirror::{Mirror, RECORDING_BYTES};
use tools::session::{self, Session};
use tools::stage::{self, Stage};
use tools::upload::continuous::Continuous;
use tools::{attach, kept_libraries, one_recording};

use super::args::{default_name, process_alive, AttachArgs, Failure};
use super::upload_cmd::{finish_upload, start_upload, Upload};

/// The recording's name in a stage: the `-o` file's (or directory's) own name.
fn staged_name(session: &Session) -> String {
    session
        .outputs
        .recording
        .file_name()
        .map_or("recording".into(), |n| n.to_string_lossy().into_owned())
}

/// The agent's path and options as the JVM takes them; for a staged JVM, the recording's
/// directory made in the stage first.
fn agent_and_options(
    session: &Session,
    target: &stage::Target,
    stage: Option<&Stage>,
) -> Result<(PathBuf, String), Failure> {
    let Some(st) = stage else {
        return Ok((session.agent.clone(), session.agent_options()));
    };
    let name = staged_name(session);
    if session.outputs.directory {
        st.make_dir(&name)?;
    }
    let options = session.agent_options_for(&st.path(&name), &st.path("status"));
    eprintln!(
        "jfrnative: JVM {} {}: the agent and the recording go through its /tmp ({})",
        target.pid,
        match (target.other_root, target.uid) {
            (true, _) => "has a root filesystem of its own".to_string(),
            (false, uid) => format!("runs as uid {uid}"),
        },
        st.dir_path.display()
    );
    Ok((st.agent.clone(), options))
}

/// A staged attach's stage and mirror, together.
struct Staged<'s> {
    stage: &'s Stage,
    mirror: Mirror,
}

impl Staged<'_> {
    fn tick(&mut self) {
        self.mirror.tick(self.stage);
    }
}

/// Loads the agent, tried again every 200 ms within the attach timeout while the JVM is still
/// starting (it answers the attach but gives the agent no JVMTI yet).
fn load(
    a: &AttachArgs,
    session: &Session,
    agent: &Path,
    options: &str,
    staged: &mut Option<Staged<'_>>,
) -> Result<(), Failure> {
    let first_try = Instant::now();
    loop {
        let reply = match attach::load_agent(a.pid, agent, options, a.attach_timeout) {
            Ok(reply) => reply,
            Err(e) if attach::not_live_yet(&e) && first_try.elapsed() < a.attach_timeout => {
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
            Err(e) => return Err(e.to_string()),
        };
        if reply.agent_code == 0 {
            return Ok(());
        }
        if let Some(s) = staged.as_mut() {
            s.mirror.status(s.stage);
            s.stage.remove("status");
        }
        let failure = session.status().filter(|s| s.is_failed());
        let _ = std::fs::remove_file(&session.status_file);
        let starting = failure
            .as_ref()
            .is_some_and(|s| s.message == agent::NOT_LIVE_YET);
        if starting && first_try.elapsed() < a.attach_timeout {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        return Err(failure
            .map(|s| session::agent_message(&s.message))
            .unwrap_or_else(|| attach::refusal(a.pid, agent, &reply)));
    }
}

pub(super) fn attach_command(a: AttachArgs, upload: Option<Upload>) -> Result<ExitCode, Failure> {
    let output = a
        .output
        .clone()
        .unwrap_or_else(|| default_name(&format!("jfrnative-{}", a.pid)));
    let mut session = a.common.session(&output)?;
    attach::check_target(a.pid, a.attach_timeout).map_err(|e| e.to_string())?;
    let target = stage::Target::of(a.pid)?;
    // A JVM in a container, or of another user, cannot see our files: the agent and the
    // recording go into its own /tmp (removed when `stage` is dropped).
    let stage = if target.needs_stage() {
        Some(Stage::create(&target, &session.agent)?)
    } else {
        None
    };
    let (agent, options) = agent_and_options(&session, &target, stage.as_ref())?;
    let mut staged = stage.as_ref().map(|st| Staged {
        stage: st,
        mirror: Mirror::new(
            &staged_name(&session),
            session.outputs.directory,
            &session.outputs.recording,
            &session.status_file,
        ),
    });
    let jdk_recording = match session.jdk_events.as_mut() {
        Some(jdk) => {
            jdk.pid = Some(a.pid);
            Some(JdkRecording::start(
                &target,
                jdk,
                stage.as_ref(),
                a.attach_timeout,
            )?)
        }
        None => None,
    };
    // Before the agent starts, so that its first chunk file is new to the watcher (which
    // watches our side: a staged recording's mirror).
    let mut upload = start_upload(&session, upload, &session.outputs.recording)?;
    let interrupted = session::on_interrupt(Arc::new(AtomicI32::new(0)))?;
    load(&a, &session, &agent, &options, &mut staged)?;
    eprintln!(
        "jfrnative: recording JVM {} for {:.0?} (Ctrl-C stops early)",
        a.pid, a.duration
    );
    let deadline = Instant::now() + a.duration;
    let mut jvm_gone = false;
    session.follow(|s| {
        if let Some(st) = staged.as_mut() {
            st.tick();
        }
        jvm_gone = !process_alive(a.pid);
        jvm_gone
            || interrupted.load(std::sync::atomic::Ordering::Acquire)
            || Instant::now() >= deadline
            || s.is_some_and(|s| s.state != "recording")
    });
    if jvm_gone {
        eprintln!("jfrnative: the JVM {} exited during the recording", a.pid);
    } else {
        stop(&a, &session, &agent, &mut staged)?;
    }
    if let Some(jdk) = &jdk_recording {
        if jvm_gone {
            eprintln!(
                "jfrnative: the JVM's own recording ended with it: only jfr-native's samples are \
                 kept"
            );
        } else if let Err(e) = jdk.stop(stage.as_ref(), a.attach_timeout) {
            eprintln!("jfrnative: --jdk-events: {e}");
        }
    }
    let finished = match staged.as_mut() {
        Some(st) if !jvm_gone => Some(st.mirror.finish(st.stage)),
        Some(st) => {
            // Its /tmp may be gone with it: what was mirrored is what there is.
            st.tick();
            None
        }
        None => None,
    };
    for line in staged.iter().flat_map(|s| s.mirror.skipped()) {
        eprintln!("jfrnative: {line}");
    }
    // The watcher takes the last chunk files, mirrored above.
    if let Some(u) = &mut upload {
        u.finish_watching();
    }
    if jvm_gone && stage.is_some() {
        return attach_of_a_dead_jvm(&session, a.pid, a.common.top, upload);
    }
    if session.status().is_none() {
        let _ = std::fs::remove_file(&session.status_file);
        return Err(format!(
            "the JVM {} loaded the agent {} but the agent wrote no status",
            a.pid,
            agent.display(),
        ));
    }
    if let Some(Err(e)) = finished {
        return Err(format!(
            "cannot copy the recording to {}: {e}",
            session.outputs.recording.display()
        ));
    }
    if let Some(stage) = &stage {
        // RECORDING.libs, made afresh for what this process copies as root.
        let fresh = fresh_kept_root(&session.outputs.recording);
        session.sysroots = keep_staged_libraries(&target, &session.outputs.recording, fresh);
        if fresh {
            keep_agent_kept_libraries(stage, &session);
        }
    }
    drop(staged);
    drop(stage);
    let finished = session.finish(a.common.top);
    finish_upload(upload);
    finished?;
    Ok(ExitCode::SUCCESS)
}

/// Stops the agent's recording (a second load with `stop`), if it is still recording.
fn stop(
    a: &AttachArgs,
    session: &Session,
    agent: &Path,
    staged: &mut Option<Staged<'_>>,
) -> Result<(), Failure> {
    if let Some(st) = staged.as_mut() {
        st.mirror.status(st.stage);
    }
    if session.status().is_none_or(|s| s.state != "recording") {
        return Ok(());
    }
    let reply = attach::load_agent(a.pid, agent, "stop", a.attach_timeout)
        .map_err(|e| format!("stopping the recording: {e}"))?;
    if reply.agent_code != 0 {
        return Err(format!(
            "the agent in JVM {} did not stop ({})",
            a.pid,
            attach::quoted(reply.text.trim())
        ));
    }
    Ok(())
}

/// The JDK's own recording that `attach --jdk-events` starts in the JVM (`JFR.start`) under a
/// name of its own, so that recordings the JVM already runs are left alone, and stops into
/// the JDK directory of the session (`JFR.stop filename=`; through the JVM's /tmp when it
/// cannot see our files).
struct JdkRecording {
    pid: u32,
    name: String,
    /// Where the JVM writes it, as the JVM sees it.
    written: PathBuf,
    /// Where the merge finds it ([`one_recording::jdk_files_of`]).
    destination: PathBuf,
}

/// The JDK recording's name in a stage.
const STAGED_JDK_RECORDING: &str = "jdk.jfr";

impl JdkRecording {
    fn start(
        target: &stage::Target,
        jdk: &session::JdkEvents,
        stage: Option<&Stage>,
        timeout: Duration,
    ) -> Result<JdkRecording, Failure> {
        let pid = target.pid;
        std::fs::create_dir_all(&jdk.directory)
            .map_err(|e| format!("cannot create {}: {e}", jdk.directory.display()))?;
        let destination = jdk.directory.join(format!("hotspot-pid-{pid}-attach.jfr"));
        // A JVM older than 17 takes no EVENT#setting options: its settings with the samplers
        // off in a file instead. A JVM that does not say its release is given the options.
        let jvm = attach::jcmd(pid, "VM.version", timeout)
            .map_err(|e| e.to_string())
            .and_then(|said| tools::jfc::release_of(pid, &said));
        let derived = match &jvm {
            Ok(release) if *release < tools::jfc::OVERRIDES_SINCE => {
                let home = attach::jcmd(pid, "VM.system_properties", timeout)
                    .map_err(|e| e.to_string())
                    .and_then(|text| tools::jfc::home_of(pid, &text))
                    .map_err(|e| {
                        format!(
                            "JVM {pid} runs JDK {release}, which takes no EVENT#setting options, \
                             and its JDK's home, whose settings jfrnative would copy with the \
                             samplers off, is not known: {e}"
                        )
                    });
                Some(
                    home.and_then(|home| {
                        settings_with_samplers_off(target, &jdk.settings, *release, &home)
                    })
                    .map_err(|e| format!("--jdk-events: {e}"))?,
                )
            }
            _ => None,
        };
        let mut settings = jdk.settings.clone();
        // The derived file written beside the JDK's recording, for a JVM that sees our files.
        let mut written_here = None;
        let written = match stage {
            Some(st) => {
                if let Some(bytes) = &derived {
                    st.create_file("settings.jfc", bytes)
                        .map_err(|e| format!("--jdk-events: {e}"))?;
                    settings = st.path("settings.jfc").display().to_string();
                } else if settings.ends_with(".jfc") {
                    let bytes = std::fs::read(&settings)
                        .map_err(|e| format!("--jdk-events: reading {settings}: {e}"))?;
                    st.create_file("settings.jfc", &bytes)
                        .map_err(|e| format!("--jdk-events: {e}"))?;
                    settings = st.path("settings.jfc").display().to_string();
                }
                st.path(STAGED_JDK_RECORDING)
            }
            None => {
                if let Some(bytes) = &derived {
                    let path = one_recording::derived_settings(&jdk.directory);
                    one_recording::write_derived(&path, bytes).map_err(|e| {
                        format!("--jdk-events: cannot write {}: {e}", path.display())
                    })?;
                    settings = path.display().to_string();
                    written_here = Some(path);
                }
                destination.clone()
            }
        };
        let name = format!("jfrnative-{}", std::process::id());
        let command = if derived.is_some() {
            format!("JFR.start name={name} settings={settings}")
        } else {
            format!(
                "JFR.start name={name} settings={settings} {}",
                one_recording::JDK_SAMPLERS_OFF.join(" ")
            )
        };
        let said = jfr_start(pid, &command, timeout);
        // The JVM read its settings as it started the recording (or refused it).
        if let Some(path) = written_here {
            let _ = std::fs::remove_file(path);
        }
        let said = said.map_err(|e| match &jvm {
            Err(why) if e.0.contains("Unknown argument") => format!(
                "--jdk-events: {e} (a JVM older than 17 takes no EVENT#setting options; its \
                 release could not be learned: {why})"
            ),
            _ => format!("--jdk-events: {e}"),
        })?;
        if !said.contains("Started recording") {
            return Err(format!(
                "--jdk-events: the JVM did not start its recording: {}",
                attach::quoted(said.trim())
            ));
        }
        eprintln!("jfrnative: JVM {pid} records its own events too (JFR recording {name})");
        Ok(JdkRecording {
            pid,
            name,
            written,
            destination,
        })
    }

    fn stop(&self, stage: Option<&Stage>, timeout: Duration) -> Result<(), String> {
        let command = format!(
            "JFR.stop name={} filename={}",
            self.name,
            self.written.display()
        );
        attach::jcmd(self.pid, &command, timeout).map_err(|e| e.to_string())?;
        let Some(st) = stage else {
            return Ok(());
        };
        let copied = st
            .open(None, STAGED_JDK_RECORDING.as_ref(), RECORDING_BYTES)
            .map_err(|e| e.to_string())
            .and_then(|(file, len)| {
                copy_atomically(file, len, &self.destination).map_err(|e| e.to_string())
            });
        copied.map_err(|e| {
            format!(
                "copying the JVM's recording {} to {}: {e}",
                self.written.display(),
                self.destination.display()
            )
        })
    }
}

/// The settings `--jdk-events` `settings` (`default`, `profile`, or the user's `.jfc`) for the
/// JVM of `target`, JDK `release` (older than 17) at `home` (as the JVM names it), with the
/// samplers off. `default` and `profile` are the JVM's own `HOME/lib/jfr/NAME.jfc`, read inside
/// its root as its user ([`tools::jfc::read_in_root`]), never by a path through
/// `/proc/PID/root`; where that cannot be done, the error says so (no settings are made up).
fn settings_with_samplers_off(
    target: &stage::Target,
    settings: &str,
    release: u32,
    home: &Path,
) -> Result<Vec<u8>, String> {
    let from = tools::jfc::source(settings, home);
    let bytes = if settings.ends_with(".jfc") {
        // The user's own file, on this side.
        std::fs::read(&from).map_err(|e| format!("reading {}: {e}", from.display()))?
    } else {
        tools::jfc::read_in_root(target.pid, (target.uid, target.gid), &from).map_err(|e| {
            format!(
                "JVM {} runs JDK {release}, which takes no EVENT#setting options: jfrnative \
                 switches its samplers off in a copy of the JVM's own settings, which could not \
                 be read safely: {e}",
                target.pid
            )
        })?
    };
    tools::jfc::samplers_off_bytes(&bytes, &from).map_err(|e| {
        format!(
            "JVM {} runs JDK {release}, which takes no EVENT#setting options, and its settings \
             could not be copied with the samplers off: {e}",
            target.pid
        )
    })
}

/// The end of a staged attach whose JVM died while recording: the chunks mirrored before are
/// reported, symbolized with this machine's files where their build-ids match.
fn attach_of_a_dead_jvm(
    session: &Session,
    pid: u32,
    top: usize,
    upload: Option<Continuous>,
) -> Result<ExitCode, Failure> {
    eprintln!(
        "jfrnative: the recording of JVM {pid} ended with it; the chunks finished before are in {}",
        session.outputs.recording.display()
    );
    let summary = tools::report::write(&session.outputs, top, &[], &[]);
    finish_upload(upload);
    let summary = summary.map_err(|e| format!("no finished chunk was kept: {e}"))?;
    println!("{}", summary.text.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// Copies the libraries the agent kept in the stage (those whose files may be gone: see the
/// agent's `keep_libs`) beside the recording, where the symbolizer looks for them
/// (`RECORDING.libs`, [`symbolize::driver::kept_library_root`]).
fn keep_agent_kept_libraries(stage: &Stage, session: &Session) {
    let staged = format!("{}.libs", staged_name(session));
    let to = symbolize::driver::kept_library_root(&session.outputs.recording);

    let (files, bytes, refused) =
        stage.copy_tree(std::ffi::OsStr::new(&staged), &to, KEPT_LIBRARIES_BYTES);
    if files > 0 {
        eprintln!(
            "jfrnative: the libraries the agent kept while the JVM ran ({files}, {:.1} MB) are in {}",
            bytes as f64 / f64::from(1 << 20),
            to.display()
        );
    }
    for r in refused {
        eprintln!("jfrnative: a library the agent kept was not copied: {r}");
    }
}

/// Makes `RECORDING.libs` afresh for the copies this process writes as root: whatever is at
/// that name (an earlier attach's copies, or a link planted by a user who can write beside the
/// output) is removed, never followed, and a new directory made for this process alone;
/// `false`, said, when it cannot be.
fn fresh_kept_root(recording: &Path) -> bool {
    use std::os::unix::fs::DirBuilderExt;
    let root = symbolize::driver::kept_library_root(recording);
    if root.is_symlink() {
        let _ = std::fs::remove_file(&root);
    } else {
        let _ = std::fs::remove_dir_all(&root);
    }
    match std::fs::DirBuilder::new().mode(0o700).create(&root) {
        Ok(()) => true,
        Err(e) => {
            eprintln!(
                "jfrnative: cannot make {} for the libraries the JVM may not keep: {e}",
                root.display()
            );
            false
        }
    }
}

/// Copies the libraries the JVM maps with their files deleted, whole, through the kernel's
/// `/proc/PID/map_files` (root can open them), to where the symbolizer looks for the agent's
/// kept libraries: these copies keep the symbol tables an image rebuilt from memory lacks.
fn keep_deleted_libraries(pid: u32, libraries: &[(String, u64)], recording: &Path, bound: u64) {
    let to = symbolize::driver::kept_library_root(recording);
    let k = kept_libraries::keep_deleted(pid, libraries, &to, bound);
    if k.files > 0 {
        eprintln!(
            "jfrnative: libraries deleted after the JVM loaded them ({}, {:.1} MB) are copied from \
             its mappings into {}",
            k.files,
            k.bytes as f64 / f64::from(1 << 20),
            to.display()
        );
    }
    for (path, why) in &k.skipped {
        eprintln!("jfrnative: the deleted library {path} was not copied: {why}");
    }
}

/// The most bytes of a staged JVM's libraries kept beside a recording.
const KEPT_LIBRARIES_BYTES: u64 = 512 << 20;

/// The roots to symbolize a staged JVM's recording with: a copy of the libraries the recording
/// names, read inside the JVM's root as its user while it runs, kept beside `recording`
/// (`NAME.libs/`, also for later: `jfr-symbolize --sysroot NAME.libs`). The JVM's root itself
/// is never given to the symbolizer: a path through `/proc/PID/root` follows the container's
/// links out of it. With `fresh` (`RECORDING.libs` made afresh for this process), the libraries
/// the JVM maps with their files deleted are copied there whole.
fn keep_staged_libraries(target: &stage::Target, recording: &Path, fresh: bool) -> Vec<PathBuf> {
    let kept = recording.with_extension("libs");
    if !process_alive(target.pid) {
        eprintln!(
            "jfrnative: the JVM {} is gone: its libraries could not be read, and its frames are \
             named from this machine's files only where their build-ids match",
            target.pid
        );
        return vec![kept];
    }
    let _ = std::fs::remove_dir_all(&kept);
    // The recording is read once, for both copies.
    let libraries = kept_libraries::recorded_libraries(recording);
    let paths = kept_libraries::paths_of(&libraries);
    let k = kept_libraries::keep_libraries(target, &paths, &kept, KEPT_LIBRARIES_BYTES);
    if fresh {
        let room = KEPT_LIBRARIES_BYTES.saturating_sub(k.bytes);
        keep_deleted_libraries(target.pid, &libraries, recording, room);
    }
    eprintln!(
        "jfrnative: the JVM's libraries ({}, {:.1} MB) are kept in {} for jfr-symbolize \
         --sysroot{}",
        k.files,
        k.bytes as f64 / f64::from(1 << 20),
        kept.display(),
        if k.left_out.is_empty() {
            String::new()
        } else {
            format!(
                "; left out past {} MB: {}",
                KEPT_LIBRARIES_BYTES >> 20,
                k.left_out.join(", ")
            )
        }
    );
    for (path, why) in &k.skipped {
        eprintln!("jfrnative: the library {path} was not kept: {why}");
    }
    vec![kept]
}

/// `JFR.start` sent to JVM `pid`. A JVM that has just started may not have registered the
/// Flight Recorder's commands yet ("Unknown diagnostic command"): asked again every 100 ms
/// within `timeout`, as the agent's own load is while the JVM is not live yet.
fn jfr_start(pid: u32, command: &str, timeout: Duration) -> Result<String, attach::AttachError> {
    let deadline = Instant::now() + timeout;
    loop {
        match attach::jcmd(pid, command, timeout) {
            Err(e) if e.0.contains("Unknown diagnostic command") && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) if e.0.contains("Unknown diagnostic command") => {
                return Err(attach::AttachError(format!(
                    "{} (for {} s: this JVM has no Flight Recorder, the jdk.jfr module)",
                    e.0,
                    timeout.as_secs()
                )));
            }
            said => return said,
        }
    }
}
