//! The agent's lifecycle: load (options, JVMTI, signal), VM start (prime methods, start the
//! writer), one timer per Java thread (ThreadStart/ThreadEnd), and stop (VMDeath).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

use crate::fault;
use crate::hotspot::agct;
use crate::hotspot::threads::ThreadLayout;
use crate::hotspot::{self, codecache};
use crate::jvmti::sys::*;
use crate::jvmti::{JMethodId, JObject, Jni, JniEnv, Jvmti, JvmtiEnvPtr, JvmtiEventCallbacks, Vm};
use crate::options::{self, Command, Options};
use crate::os;
use crate::sampling::record::EPOCH;
use crate::sampling::signal;
use crate::sampling::slots::{Identity, Slot, FREE, SLOTS, SLOTS_CREATED, SLOTS_REUSED};
use crate::sampling::source::{INTERVAL_NS, RECORDING};
use crate::sampling::stack::ThreadStack;
use crate::sampling::stats::STATS;
use crate::sampling::{buffers, engine};
use crate::writer::cpu::{Part, WriterCpu};
use crate::writer::drain::{self, Drain, DRAIN_PERIOD};
use crate::writer::status::{self, State};

/// The agent's refusal when it is attached to a JVM that is still starting: before JVMTI's live
/// phase the JVM gives no JVMTI environment (`GetEnv` answers `JNI_EDETACHED`), although its
/// attach listener already answers. `jfrnative attach` loads the agent again a moment later.
pub const NOT_LIVE_YET: &str = "jfr-native: the JVM is still starting (JVMTI is not live yet)";

/// Runs a JVM-facing entry point. A bug in the recorder must never take the JVM down: a panic
/// is caught, sampling is disabled, and `fallback` is returned.
pub(crate) fn ffi_guard<T>(what: &'static str, fallback: T, f: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        disable(what);
        fallback
    })
}

struct Agent {
    vm: Vm,
    jvmti: Jvmti,
    signal: i32,
    /// The running recording's options; `None` between recordings.
    options: Mutex<Option<Options>>,
    drain: Mutex<Option<JoinHandle<()>>>,
    stop: AtomicBool,
}

static AGENT: OnceLock<Agent> = OnceLock::new();
/// Held while a recording starts or stops (VMDeath and a `stop` attach may race).
static LIFECYCLE: Mutex<()> = Mutex::new(());
/// Held by [`load`], around [`LIFECYCLE`]: loads and commands one at a time.
static LOAD: Mutex<()> = Mutex::new(());
/// The writer thread's tid: it is attached to the VM but never sampled.
static DRAIN_TID: AtomicI32 = AtomicI32::new(0);
/// Whether the signal handlers are installed (once, by the first recording that starts).
static HANDLERS_INSTALLED: AtomicBool = AtomicBool::new(false);
/// HotSpot's thread layout, read once (`None` if the JVM does not describe it).
static THREAD_LAYOUT: OnceLock<Option<ThreadLayout>> = OnceLock::new();

fn thread_layout() -> Option<ThreadLayout> {
    *THREAD_LAYOUT.get_or_init(|| hotspot::vm_structs().and_then(ThreadLayout::new))
}

fn timestamp() -> String {
    jfr_writer::utc_timestamp(os::realtime_ns() / 1_000_000_000)
}

/// Who loads the agent or gives it a command.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Origin {
    /// `-agentpath:` at the JVM's start (`Agent_OnLoad`).
    Startup,
    /// A runtime attach (`Agent_OnAttach`), on the JVM's attach listener thread, which is not
    /// sampled.
    Attach,
    /// The Java API (`crate::java_api`), on the caller's Java thread, which is sampled too.
    JavaApi,
}

/// Agent_OnLoad / Agent_OnAttach: everything that can fail with a message for the user. The
/// first load installs the agent; later loads (attach) take the command `stop`, or the options
/// of a new recording once the previous one has stopped. A failure is also written to the
/// `status` file, if the options name one, for a tool that cannot see the JVM's stderr.
pub fn load(vm: Vm, option_text: &str, origin: Origin) -> Result<(), String> {
    let (pid, ts) = (std::process::id(), timestamp());
    // One load at a time: the Java API's callers are any threads, beside an attach; two first
    // loads must not both install.
    let _load = LOAD.lock().map_err(|_| "jfr-native: agent state lost")?;
    let result = options::parse_command(option_text, pid, &ts)
        .map_err(|e| e.to_string())
        .and_then(|command| match AGENT.get() {
            None => install(vm, command, origin),
            Some(agent) => command_loaded(agent, command, origin),
        });
    if let (Err(message), Some(path)) = (&result, options::status_path(option_text, pid, &ts)) {
        status::write(&path, State::Failed, &status::Counts::default(), message);
    }
    result
}

/// Fails early, not at the first chunk, if the output cannot be written.
fn check_file(options: &Options) -> Result<(), String> {
    crate::writer::output::check(options)
}

/// The oldest Java feature release the agent runs on. Before it, HotSpot's structures that the
/// Java walk reads are laid out differently (see `docs/agent.md`, "JDK 8"); and on JDK 8
/// HotSpot's own `_vm_major_version` is 25 (HotSpot 25.x), which [`hotspot::java_major`] would
/// take for JDK 25.
const MIN_JAVA_FEATURE: u32 = 11;

/// The Java feature release in `java.vm.specification.version`: "1.8" on JDK 8 ("1.N" up to
/// 8), the release alone from JDK 9 on ("11", "17", "25").
fn parse_spec_version(text: &str) -> Result<u32, String> {
    let number = |s: &str| -> Option<u32> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let mut parts = text.split('.');
    let feature = match parts.next().and_then(number) {
        Some(1) => parts.next().and_then(number),
        first => first,
    };
    feature
        .filter(|&f| f > 0)
        .ok_or_else(|| format!("'{text}' is not a Java specification version"))
}

/// The Java feature release a JVMTI version number tells (`GetVersionNumber`): JVMTI 1.x up to
/// JDK 8 (taken as 8, the newest it can be), the release itself as major version from JDK 9 on.
fn jvmti_feature(version: i32) -> Option<u32> {
    const INTERFACE_JVMTI: i32 = 0x3000_0000;
    if version & 0x7000_0000 != INTERFACE_JVMTI {
        return None;
    }
    match (version & 0x0FFF_0000) >> 16 {
        1 => Some(8),
        major if major >= 9 => u32::try_from(major).ok(),
        _ => None,
    }
}

/// Refuses a JVM older than [`MIN_JAVA_FEATURE`], with one line naming its release and why.
/// Learned from properties the VM sets before any agent loads (JDK 8 included), else from the
/// JVMTI version.
fn check_java_version(jvmti: &Jvmti) -> Result<(), String> {
    let spec = jvmti.system_property(c"java.vm.specification.version");
    let (feature, release) = match spec.as_deref().map(parse_spec_version) {
        Some(Ok(f)) => (f, format!("JDK {f}")),
        _ => match jvmti.version_number().and_then(jvmti_feature) {
            Some(8) => (8, "JDK 8 or older".to_string()),
            Some(f) => (f, format!("JDK {f}")),
            None => {
                return Err(format!(
                "jfr-native: cannot tell this JVM's Java release (java.vm.specification.version \
                     {}, no JVMTI version): needs JDK {MIN_JAVA_FEATURE} or later",
                spec.as_deref().unwrap_or("unset")
            ))
            }
        },
    };
    if feature >= MIN_JAVA_FEATURE {
        return Ok(());
    }
    let vm = jvmti
        .system_property(c"java.vm.version")
        .map_or_else(String::new, |v| format!(" (VM {v})"));
    Err(format!(
        "jfr-native: {release}{vm} is not supported: needs JDK {MIN_JAVA_FEATURE} or later (the \
         agent reads HotSpot's own structures, laid out differently before JDK \
         {MIN_JAVA_FEATURE}; see docs/agent.md, \"JDK 8\")"
    ))
}

/// A load while the agent is installed: stop the recording, or start a new one.
fn command_loaded(agent: &'static Agent, command: Command, origin: Origin) -> Result<(), String> {
    let _lifecycle = LIFECYCLE
        .lock()
        .map_err(|_| "jfr-native: agent state lost")?;
    let running = current_options(agent);
    match (command, running) {
        (Command::Stop, Some(_)) => {
            stop(agent);
            Ok(())
        }
        (Command::Stop, None) => Err("jfr-native: stop: no recording is running".into()),
        (Command::Start(_), Some(running)) => Err(format!(
            "jfr-native: a recording is already running (file={}); stop it first{}",
            running.file,
            match origin {
                Origin::JavaApi => " (JfrNative.stop())",
                _ => " by loading the agent with the option 'stop'",
            }
        )),
        (Command::Start(options), None) => {
            if options.signal.is_some_and(|s| s != agent.signal) {
                return Err(format!(
                    "jfr-native: bad agent option 'signal': the agent already uses signal {} in \
                     this JVM",
                    agent.signal
                ));
            }
            check_file(&options)?;
            set_callbacks(&agent.jvmti)?;
            set_options(agent, Some(options));
            start(agent, None)?;
            arm_existing_threads(agent, origin == Origin::JavaApi);
            Ok(())
        }
    }
}

/// Whether a recording runs (the Java API's `isRunning`).
pub fn is_running() -> bool {
    AGENT.get().and_then(current_options).is_some()
}

/// The running recording's output (`file=`), if one runs.
pub fn running_file() -> Option<String> {
    AGENT.get().and_then(current_options).map(|o| o.file)
}

/// How long a dump may wait for the writer: a turn, a chunk and the copy.
const DUMP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Copies the recording so far into a new file at `path` (the Java API's `dump`); the
/// recording goes on. Returns the bytes written.
pub fn dump(path: &std::path::Path) -> Result<u64, String> {
    let not_running = "jfr-native: dump: no recording is running";
    let agent = AGENT.get().ok_or(not_running)?;
    let answer = {
        // Queued under the lifecycle lock: a stop waits for the writer, which answers every
        // request it has not served (see `run_drain`), so none is left for a later recording.
        let _lifecycle = LIFECYCLE
            .lock()
            .map_err(|_| "jfr-native: agent state lost")?;
        let writer = agent
            .drain
            .lock()
            .ok()
            .and_then(|d| d.as_ref().map(|h| h.thread().clone()));
        // A writer that stopped on a write error leaves the options set: RECORDING says so.
        let Some(writer) = writer
            .filter(|_| current_options(agent).is_some() && RECORDING.load(Ordering::Acquire))
        else {
            return Err(not_running.into());
        };
        let answer = crate::writer::dump::request(path)?;
        writer.unpark();
        answer
    };
    match answer.recv_timeout(DUMP_TIMEOUT) {
        Ok(result) => result,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "jfr-native: dump: the writer did not answer within {} s",
            DUMP_TIMEOUT.as_secs()
        )),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err("jfr-native: dump: the recording stopped before the dump".into())
        }
    }
}

fn set_options(agent: &Agent, options: Option<Options>) {
    if let Ok(mut o) = agent.options.lock() {
        *o = options;
    }
}

fn current_options(agent: &Agent) -> Option<Options> {
    agent.options.lock().ok().and_then(|o| o.clone())
}

/// Points the JVMTI events at this library's callbacks.
fn set_callbacks(jvmti: &Jvmti) -> Result<(), String> {
    let mut callbacks = JvmtiEventCallbacks::default();
    // SAFETY: each function has the exact signature JVMTI calls the slot with (jvmti.h); the
    // struct stores them as untyped `fn()` pointers.
    unsafe {
        callbacks.VMInit = Some(std::mem::transmute::<
            extern "system" fn(JvmtiEnvPtr, JniEnv, JObject),
            unsafe extern "system" fn(),
        >(on_vm_init));
        callbacks.VMDeath = Some(std::mem::transmute::<
            extern "system" fn(JvmtiEnvPtr, JniEnv),
            unsafe extern "system" fn(),
        >(on_vm_death));
        callbacks.ThreadStart = Some(std::mem::transmute::<
            extern "system" fn(JvmtiEnvPtr, JniEnv, JObject),
            unsafe extern "system" fn(),
        >(on_thread_start));
        callbacks.ThreadEnd = Some(std::mem::transmute::<
            extern "system" fn(JvmtiEnvPtr, JniEnv, JObject),
            unsafe extern "system" fn(),
        >(on_thread_end));
        callbacks.ClassLoad = Some(std::mem::transmute::<
            extern "system" fn(JvmtiEnvPtr, JniEnv, JObject, JObject),
            unsafe extern "system" fn(),
        >(on_class_load));
        callbacks.ClassPrepare = Some(std::mem::transmute::<
            extern "system" fn(JvmtiEnvPtr, JniEnv, JObject, JObject),
            unsafe extern "system" fn(),
        >(on_class_prepare));
        callbacks.DynamicCodeGenerated = Some(std::mem::transmute::<
            extern "system" fn(JvmtiEnvPtr, *const std::ffi::c_char, *const c_void, i32),
            unsafe extern "system" fn(),
        >(on_dynamic_code_generated));
        callbacks.NativeMethodBind = Some(std::mem::transmute::<
            NativeMethodBindFn,
            unsafe extern "system" fn(),
        >(on_native_method_bind));
        callbacks.CompiledMethodLoad = Some(std::mem::transmute::<
            CompiledMethodLoadFn,
            unsafe extern "system" fn(),
        >(on_compiled_method_load));
    }
    jvmti
        .set_event_callbacks(&callbacks)
        .map_err(|e| format!("jfr-native: SetEventCallbacks failed ({e})"))
}

/// The first load: options, JVMTI, signal handler, events; on attach also the recording.
fn install(vm: Vm, command: Command, origin: Origin) -> Result<(), String> {
    let live = origin != Origin::Startup;
    let Command::Start(options) = command else {
        return Err("jfr-native: stop: no recording is running".into());
    };
    let jvmti = vm.jvmti().ok_or(if live {
        NOT_LIVE_YET
    } else {
        "jfr-native: JVMTI 1.2 is not available"
    })?;
    // Before anything else is touched (the output file included).
    if let Err(refusal) = check_java_version(&jvmti).and_then(|()| crate::single_copy::check()) {
        jvmti.dispose();
        return Err(refusal);
    }
    check_file(&options)?;
    jvmti
        .add_capabilities(&[CAN_GET_LINE_NUMBERS])
        .map_err(|e| format!("jfr-native: JVMTI refused the line-number capability (error {e})"))?;
    // Optional: without it, a JNI library loaded later is found by the writer's periodic check
    // only (its first samples may come before its unwind table).
    let _ = jvmti.add_capabilities(&[CAN_GENERATE_NATIVE_METHOD_BIND_EVENTS]);
    // With CompiledMethodLoad events on from the start, HotSpot's compilers record debug
    // information between safepoints (as `-XX:+DebugNonSafepoints`, unless the command line
    // sets the flag: `-XX:-DebugNonSafepoints` keeps it off), so that a sample inside compiled
    // code gets its own inlined scopes, as async-profiler's do. Not on attach: the methods
    // compiled before would lack it, and the walk could not tell which do.
    let non_safepoints = !live
        && jvmti
            .add_capabilities(&[CAN_GENERATE_COMPILED_METHOD_LOAD_EVENTS])
            .is_ok();
    let signal = match options.signal {
        Some(s) if !os::signal_is_free(s) => {
            return Err(format!(
                "jfr-native: bad agent option 'signal': signal {s} already has a handler"
            ))
        }
        Some(s) => s,
        None => os::free_realtime_signal()
            .ok_or("jfr-native: no free real-time signal for the timers")?,
    };
    if !agct::resolve() {
        return Err(
            "jfr-native: this JVM does not export AsyncGetCallTrace (HotSpot 17 to 25 do)".into(),
        );
    }
    // The signal handlers are installed by the first recording that starts, last of all: a
    // load that fails leaves nothing behind (HotSpot unloads the library).
    set_callbacks(&jvmti)?;
    let agent = Agent {
        vm,
        jvmti,
        signal,
        options: Mutex::new(Some(options)),
        drain: Mutex::new(None),
        stop: AtomicBool::new(false),
    };
    let agent = AGENT.get_or_init(|| agent);
    for event in [JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH] {
        agent
            .jvmti
            .enable_event(event)
            .map_err(|e| format!("jfr-native: enabling event {event} failed ({e})"))?;
    }
    if non_safepoints
        && agent
            .jvmti
            .enable_event(JVMTI_EVENT_COMPILED_METHOD_LOAD)
            .is_ok()
    {
        hotspot::scopes::set_recorded_from_start();
    }
    if live {
        let _lifecycle = LIFECYCLE
            .lock()
            .map_err(|_| "jfr-native: agent state lost")?;
        if let Err(e) = start(agent, None) {
            // HotSpot unloads a library whose Agent_OnAttach fails: no callback may point
            // into it any more (a later load sets them again).
            let _ = agent
                .jvmti
                .set_event_callbacks(&JvmtiEventCallbacks::default());
            return Err(e);
        }
        arm_existing_threads(agent, origin == Origin::JavaApi);
    }
    Ok(())
}

/// The kernel thread ids of this process by thread name (`/proc/self/task/*/comm`).
fn tids_by_name() -> std::collections::HashMap<String, Vec<i32>> {
    use crate::process_threads::{task_ids, thread_name};
    let mut map: std::collections::HashMap<String, Vec<i32>> = std::collections::HashMap::new();
    for tid in task_ids() {
        if let Some(name) = thread_name(tid) {
            map.entry(name).or_default().push(tid);
        }
    }
    map
}

/// The name the kernel shows for a Java thread: HotSpot sets the native name to the Java name,
/// cut to the kernel's 15 bytes.
fn kernel_name(java_name: &str) -> String {
    let mut end = java_name.len().min(15);
    while !java_name.is_char_boundary(end) {
        end -= 1;
    }
    java_name[..end].to_string()
}

/// On attach (and at every later recording), arms the Java threads that already run. JVMTI
/// gives neither their kernel tid nor their JNIEnv nor their stack: the JNIEnv is
/// `Thread.eetop` (the `JavaThread*`) plus the offset of the JNIEnv inside a JavaThread,
/// measured on the calling thread; the tid and the stack come from the JavaThread through the
/// offsets HotSpot describes ([`crate::hotspot`]). Without those, a thread is matched by its
/// kernel name if that is unique, and sampled with its leaf pc only (stack unknown).
fn arm_existing_threads(agent: &'static Agent, arm_caller: bool) {
    let Some(env) = agent.vm.jni_env() else {
        return;
    };
    let jni = Jni(env);
    let Some(env_offset) = jni_env_offset(agent, env) else {
        eprintln!("jfr-native: cannot read Thread.eetop: threads started before the attach are not sampled");
        return;
    };
    let layout = thread_layout();
    let tids = if layout.is_none() {
        eprintln!(
            "jfr-native: this JVM does not describe its threads (gHotSpotVMStructs): threads \
             started before the attach are matched by name and sampled without native stacks"
        );
        tids_by_name()
    } else {
        Default::default()
    };
    let own_tid = os::gettid();
    let mut skipped = Vec::new();
    for thread in agent.jvmti.all_threads().unwrap_or_default() {
        let Some(eetop) = jni.thread_eetop(thread).filter(|&e| e != 0) else {
            continue;
        };
        let name = agent.jvmti.thread_name(thread).unwrap_or_default();
        let (tid, stack) = match layout {
            Some(layout) => {
                let Some(tid) = layout.tid(eetop as u64).filter(|&t| os::thread_exists(t)) else {
                    continue; // exited meanwhile
                };
                let stack = layout
                    .stack(eetop as u64)
                    .map_or_else(ThreadStack::unknown, |(lo, hi)| ThreadStack::new(lo, hi));
                (tid, stack)
            }
            None => match tids.get(&kernel_name(&name)).map(Vec::as_slice) {
                Some([tid]) => (*tid, ThreadStack::unknown()),
                _ => {
                    skipped.push(name);
                    continue;
                }
            },
        };
        if (tid == own_tid && !arm_caller) || tid == DRAIN_TID.load(Ordering::Acquire) {
            continue;
        }
        let thread_env = eetop.wrapping_add(env_offset) as JniEnv;
        let java_id = jni.java_thread_id(thread).unwrap_or(0);
        arm_thread(agent, tid, thread_env, Identity { name, java_id }, stack);
    }
    if !skipped.is_empty() {
        eprintln!("jfr-native: not sampling {} threads started before the attach whose names are not unique: {}", skipped.len(), skipped.join(", "));
    }
}

/// Where the JNIEnv is inside a `JavaThread`, measured on the calling thread (whose JNIEnv is
/// `env`): the JNIEnv minus `Thread.eetop`, the same for every thread of the VM.
fn jni_env_offset(agent: &'static Agent, env: JniEnv) -> Option<i64> {
    let thread = agent.jvmti.current_thread().ok()?;
    let eetop = Jni(env).thread_eetop(thread).filter(|&e| e != 0)?;
    Some((env as i64).wrapping_sub(eetop))
}

/// Finds where `java.lang.Thread.tid` is in a thread object, on the live threads (see
/// [`hotspot::vthread`]), so that samples of a virtual thread name it. Once per process; said
/// once if the JVM has virtual threads but the offset cannot be found.
fn prepare_virtual_threads(agent: &'static Agent) {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        let Some(v) = hotspot::vm_structs() else {
            return;
        };
        if v.offset("JavaThread", "_vthread").is_none() {
            return; // before JDK 19: no virtual threads
        }
        // Through fault-safe reads: the fault hook is installed by now.
        if let Some(major) = hotspot::java_major(v) {
            hotspot::continuation::prepare(v, major);
        }
        if hotspot::vthread::ready() {
            return; // set up with HotSpot's own tid offset
        }
        let Some(env) = agent.vm.jni_env() else {
            return;
        };
        let jni = Jni(env);
        let objects: Vec<(u64, i64)> = agent
            .jvmti
            .all_threads()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|thread| {
                let id = jni.thread_tid(thread)?;
                // A local JNI reference is the address of a slot holding the object's address.
                let object = fault::read_u64(thread as u64)?;
                Some((object, id))
            })
            .collect();
        let found = hotspot::vthread::tid_offset(&objects)
            .is_some_and(|offset| hotspot::vthread::init(v, offset));
        if !found {
            eprintln!(
                "jfr-native: cannot find java.lang.Thread.tid in {} thread objects: samples of \
                 virtual threads go to their carrier thread",
                objects.len()
            );
        }
    });
}

/// Readies the Java-frame walk (`jstack=vm` or `agct-vm`): HotSpot's layout, read once, and where a
/// thread's JNIEnv is inside its `JavaThread`, measured on this thread. Without either, or on
/// an architecture whose frames the walk does not know ([`crate::arch::VM_WALK`]), the walk
/// is off, said once, and AsyncGetCallTrace works alone.
fn prepare_java_walk(agent: &'static Agent, jstack: options::JStack) {
    let asked = jstack != options::JStack::Agct;
    if asked && !crate::arch::VM_WALK {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            eprintln!(
                "jfr-native: {}: Java frames from AsyncGetCallTrace alone (the VM walk is \
                 x86_64 only so far)",
                crate::arch::NAME
            )
        });
    }
    let wanted = asked && crate::arch::VM_WALK;
    let mut ready = false;
    if wanted {
        match hotspot::init_java_layout() {
            Ok(_) => {
                let offset = agent
                    .vm
                    .jni_env()
                    .and_then(|env| jni_env_offset(agent, env));
                match offset {
                    Some(offset) => {
                        hotspot::set_jni_env_offset(offset);
                        ready = true;
                    }
                    None => eprintln!(
                        "jfr-native: cannot read Thread.eetop: Java frames come from \
                         AsyncGetCallTrace alone"
                    ),
                }
            }
            Err(missing) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    eprintln!(
                        "jfr-native: this JVM does not describe {missing} (gHotSpotVMStructs): \
                         Java frames come from AsyncGetCallTrace alone, without frame types"
                    )
                });
            }
        }
    }
    hotspot::sample::PREFER_VM_WALK.store(jstack == options::JStack::Vm, Ordering::Release);
    hotspot::sample::USE_VM_WALK.store(wanted && ready, Ordering::Release);
}

/// Starts the recording configured in `agent.options` (see [`try_start`]); if it cannot start,
/// no recording is configured any more. The caller holds `LIFECYCLE`.
fn start(agent: &'static Agent, this_thread: Option<(JniEnv, JObject)>) -> Result<(), String> {
    let started = try_start(agent, this_thread);
    if started.is_err() {
        set_options(agent, None);
    }
    started
}

/// Primes jmethodIDs, enables the events AsyncGetCallTrace needs, starts the writer, and arms
/// the calling thread if it is a Java thread (`this_thread`).
fn try_start(agent: &'static Agent, this_thread: Option<(JniEnv, JObject)>) -> Result<(), String> {
    let options = current_options(agent).ok_or("jfr-native: no recording options")?;
    // AsyncGetCallTrace returns -1 for every sample unless ClassLoad is enabled, and null method
    // ids unless jmethodIDs exist: create them for every loaded class now, new ones on prepare.
    for event in [
        JVMTI_EVENT_CLASS_LOAD,
        JVMTI_EVENT_CLASS_PREPARE,
        JVMTI_EVENT_THREAD_START,
        JVMTI_EVENT_THREAD_END,
    ] {
        agent
            .jvmti
            .enable_event(event)
            .map_err(|e| format!("jfr-native: enabling event {event} failed ({e})"))?;
    }
    // Refused without the capability (see `install`): the periodic check remains.
    let _ = agent.jvmti.enable_event(JVMTI_EVENT_NATIVE_METHOD_BIND);
    // The stubs the Java walk must know by name (the call stub, continuation stubs): those
    // generated so far, then each new one.
    if agent
        .jvmti
        .enable_event(JVMTI_EVENT_DYNAMIC_CODE_GENERATED)
        .and_then(|()| {
            agent
                .jvmti
                .generate_events(JVMTI_EVENT_DYNAMIC_CODE_GENERATED)
        })
        .is_err()
    {
        eprintln!(
            "jfr-native: JVMTI gives no generated-code events: samples inside the call stub \
             keep no frames"
        );
    }
    for class in agent.jvmti.loaded_classes().unwrap_or_default() {
        let _ = agent.jvmti.class_methods(class);
    }
    STATS.reset();
    crate::unwind::USE_CFI.store(options.cstack == options::CStack::Dwarf, Ordering::Release);
    crate::sampling::source::INTERVAL_NS.store(options.interval_ns, Ordering::Release);
    // Tried on this thread before any is armed; perf refused is said once and the recording
    // goes on with timers.
    let (effective, message) = engine::choose(options.engine, options.interval_ns);
    if let Some(message) = message {
        eprintln!("{message}");
    }

    agent.stop.store(false, Ordering::Release);
    let options_depth = (options.depth, options.native_depth);
    // Before the first code map is read: JIT code is known by the code cache's bounds.
    match hotspot::vm_structs().and_then(codecache::read) {
        Some((low, high)) => crate::unwind::jvm_code::set(low, high),
        None => eprintln!(
            "jfr-native: this JVM does not describe its code cache (gHotSpotVMStructs): JIT \
             code is told from native code by its mappings only"
        ),
    }
    prepare_java_walk(agent, options.jstack);
    let clock = drain::clock();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let handle = std::thread::Builder::new()
        .name("jfr-native writer".into())
        .spawn(move || run_drain(agent, options, clock, ready_tx))
        .map_err(|e| format!("jfr-native: cannot start the writer thread: {e}"))?;
    let ready = ready_rx
        .recv()
        .unwrap_or_else(|_| Err("jfr-native: the writer thread died".into()));
    if let Err(e) = ready {
        let _ = handle.join();
        return Err(e);
    }
    if let Ok(mut d) = agent.drain.lock() {
        *d = Some(handle);
    }
    buffers::prepare(options_depth.0, options_depth.1);
    EPOCH.fetch_add(1, Ordering::SeqCst);
    if let Err(e) = install_handlers(agent.signal) {
        stop_writer(agent);
        return Err(e);
    }
    // Last, like the other handlers (nothing after this fails, so no handler is left in a
    // library HotSpot unloads after a failed attach).
    if matches!(effective, engine::Effective::Perf(_)) {
        crate::sampling::perf::protect_from_sigio();
    }
    // After the fault hook: the thread objects and the flag table are read through it.
    if hotspot::sample::USE_VM_WALK.load(Ordering::Acquire) {
        if let Some(v) = hotspot::vm_structs() {
            hotspot::scopes::find_non_safepoint_flag(v);
        }
        prepare_virtual_threads(agent);
    }
    RECORDING.store(true, Ordering::Release);
    if let Some((env, thread)) = this_thread {
        register_current_thread(agent, env, thread);
    }
    Ok(())
}

/// Installs the fault hook and the timers' handler, once, right before the first timer is
/// armed: the last step of a start, so a load that fails leaves no handler behind. If the
/// second cannot be installed, the first is removed again.
fn install_handlers(signal: i32) -> Result<(), String> {
    if HANDLERS_INSTALLED.load(Ordering::Acquire) {
        return Ok(());
    }
    if !os::signal_is_free(signal) {
        return Err(format!(
            "jfr-native: signal {signal} got another handler before the recording started"
        ));
    }
    fault::install()
        .map_err(|e| format!("jfr-native: installing the fault handler failed: {e}"))?;
    if let Err(e) = os::install_handler(signal, signal::on_sample) {
        fault::uninstall();
        return Err(format!(
            "jfr-native: installing the handler for signal {signal}: {e}"
        ));
    }
    HANDLERS_INSTALLED.store(true, Ordering::Release);
    Ok(())
}

/// Stops the writer thread, if one runs, and waits for it (it finishes the file).
fn stop_writer(agent: &'static Agent) {
    agent.stop.store(true, Ordering::Release);
    if let Some(handle) = agent.drain.lock().ok().and_then(|mut d| d.take()) {
        handle.thread().unpark();
        let _ = handle.join();
    }
}

fn run_drain(
    agent: &'static Agent,
    options: Options,
    clock: jfr_writer::Clock,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    DRAIN_TID.store(os::gettid(), Ordering::Release);
    // Attached so that JVMTI calls (method names, line tables) are made from a VM thread.
    let attached = agent
        .vm
        .attach_current_thread_as_daemon(c"jfr-native writer")
        .is_some();
    let file = options.file.clone();
    let options_threads = options.threads;
    let print_summary = options.summary;
    let mut cpu = WriterCpu::default();
    let mut drain = match cpu.time(Part::Start, || Drain::new(agent.jvmti, options, clock)) {
        Ok(d) => d,
        Err(e) => {
            let _ = ready.send(Err(format!("jfr-native: cannot write {file}: {e}")));
            if attached {
                agent.vm.detach_current_thread();
            }
            return;
        }
    };
    // Requests of an earlier recording that nobody answered (none should be): refused, never
    // served from this one.
    crate::writer::dump::refuse_pending();
    let _ = ready.send(Ok(()));
    let mut scanner = (options_threads == options::Threads::All).then(|| {
        crate::process_threads::Scanner::new(
            &crate::process_threads::task_ids(),
            &engine::thread_cpu_ns,
        )
    });
    while !agent.stop.load(Ordering::Acquire) {
        std::thread::park_timeout(DRAIN_PERIOD);
        // Not before the recording is on: `start` sets it after the writer is ready, and a
        // thread the first scan found and could not arm then would be taken as armed.
        if let Some(scanner) = scanner.as_mut() {
            if RECORDING.load(Ordering::Acquire) && scanner.due(os::monotonic_ns()) {
                cpu.time(Part::ThreadScan, || scan_threads(agent, scanner));
            }
        }
        cpu.time(Part::CodeMap, || drain.refresh_code_map());
        cpu.time(Part::Samples, || drain.drain_all());
        cpu.time(Part::Counters, || drain.check_counters());
        // Layouts HotSpot computes only once a class is used (virtual threads' stack chunks,
        // at the first virtual thread): tried until known, then a no-op.
        if let Some(v) = hotspot::vm_structs() {
            hotspot::continuation::retry(v);
        }
        let chunks = || drain.serve_dumps().and_then(|()| drain.maybe_rotate());
        if let Err(e) = cpu.time(Part::Chunks, chunks) {
            let message = format!("jfr-native: writing {file} failed, recording stops: {e}");
            eprintln!("{message}");
            RECORDING.store(false, Ordering::Release);
            drain.write_status(State::Failed, &message);
            break;
        }
        cpu.time(Part::Chunks, || drain.maybe_write_status());
    }
    crate::writer::dump::refuse_pending();
    let (mut summary, result) = cpu.time(Part::Chunks, || drain.finish());
    summary.writer_cpu = cpu;
    match result {
        Ok(totals) if print_summary => {
            eprintln!("{}", drain::summary_text(&file, &summary, totals.chunks))
        }
        Ok(_) => {}
        Err(e) => eprintln!("jfr-native: finishing {file} failed: {e}"),
    }
    if attached {
        agent.vm.detach_current_thread();
    }
}

/// One scan of the process's threads (`threads=all`, see [`crate::process_threads`]): arms the
/// new ones, marks the gone ones ended, and gives the stack of its first sample to each that
/// has one.
fn scan_threads(agent: &'static Agent, scanner: &mut crate::process_threads::Scanner) {
    use crate::process_threads as pt;
    let slots: Vec<&'static Slot> = SLOTS.lock().map(|s| s.clone()).unwrap_or_default();
    // Threads sampled now, and Java threads (armed by JVMTI's paths); a found thread's slot of
    // an earlier recording (disarmed when it stopped) does not count.
    let live: std::collections::HashSet<i32> = slots
        .iter()
        .filter(|s| !s.ended.load(Ordering::Acquire) && (s.is_armed() || s.is_java()))
        .map(|s| s.tid())
        .collect();
    let skip = [DRAIN_TID.load(Ordering::Acquire)];
    let scan = scanner.scan(
        os::monotonic_ns(),
        &pt::task_ids(),
        &|tid| live.contains(&tid),
        &skip,
        &pt::start_time,
    );
    for tid in &scan.gone {
        for slot in slots
            .iter()
            .filter(|s| s.tid() == *tid && !s.is_java() && !s.ended.load(Ordering::Acquire))
        {
            slot.ended.store(true, Ordering::SeqCst);
            slot.disarm();
        }
    }
    let interval_ns = current_options(agent).map_or(1, |o| o.interval_ns.max(1));
    for found in scan.arm {
        let identity = Identity {
            name: found.name,
            java_id: 0,
        };
        let before_ns = engine::thread_cpu_ns(found.tid);
        let slot = arm(
            agent,
            found.tid,
            std::ptr::null_mut(),
            identity,
            ThreadStack::unknown(),
            true,
        );
        if let Some(slot) = slot {
            // Its CPU time from the recording's start (or its own) until it was armed: lost,
            // with its reason, so that the recording's total stays the process's.
            let unseen = before_ns.saturating_sub(found.cpu_at_start_ns.unwrap_or(0));
            slot.unseen.add(unseen, unseen / interval_ns);
        }
    }
    // Stacks from the first samples' stack pointers.
    let waiting: Vec<(&'static Slot, u64)> = slots
        .iter()
        .filter(|s| !s.is_java() && s.stack.range().2 == 0)
        .filter_map(|s| {
            let sp = s.unknown_stack_sp.load(Ordering::Acquire);
            (sp != 0).then_some((*s, sp))
        })
        .collect();
    if !waiting.is_empty() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        for (slot, sp) in waiting {
            if let Some((lo, hi)) = pt::stack_mapping(&maps, sp) {
                slot.stack.set(&ThreadStack::new(lo, hi));
            }
            slot.unknown_stack_sp.store(0, Ordering::Release);
        }
    }
}

/// Creates the calling thread's slot and arms its CPU timer.
fn register_current_thread(agent: &'static Agent, env: JniEnv, thread: JObject) {
    let tid = os::gettid();
    if tid == DRAIN_TID.load(Ordering::Acquire) || !RECORDING.load(Ordering::Acquire) {
        return;
    }
    let name = agent.jvmti.thread_name(thread).unwrap_or_default();
    let java_id = Jni(env).java_thread_id(thread).unwrap_or(0);
    arm_thread(
        agent,
        tid,
        env,
        Identity { name, java_id },
        ThreadStack::of_current_thread(),
    );
}

/// Arms the CPU timer of thread `tid` (from any thread), in the thread's slot from an earlier
/// recording if it has one (named anew), else in a free or new slot. Holds the slot list's lock
/// and checks `RECORDING` under it, so that `stop` (which disarms under the same lock) never
/// misses a timer.
fn arm_thread(
    agent: &'static Agent,
    tid: i32,
    env: JniEnv,
    identity: Identity,
    stack: ThreadStack,
) {
    arm(agent, tid, env, identity, stack, false);
}

/// Arms thread `tid` as [`arm_thread`] does; a `found` thread (one the `/proc/self/task` scan
/// found, `threads=all`) only if it has no slot yet. A Java thread whose slot the scan made
/// first takes it over, with its JNIEnv and stack.
fn arm(
    agent: &'static Agent,
    tid: i32,
    env: JniEnv,
    identity: Identity,
    stack: ThreadStack,
    found: bool,
) -> Option<&'static Slot> {
    let o = current_options(agent)?;
    let Ok(mut slots) = SLOTS.lock() else {
        return None;
    };
    if !RECORDING.load(Ordering::Acquire) {
        return None;
    }
    let mut reused = None;
    let live = |s: &&&'static Slot| s.tid() == tid && !s.ended.load(Ordering::Acquire);
    // A thread the scan found keeps a slot armed for it, and a Java thread's slot is left to
    // JVMTI's paths (ThreadStart, the threads of an attach); its own slot of an earlier
    // recording, disarmed when that stopped, is armed again below.
    if found
        && slots
            .iter()
            .any(|s| live(&s) && (s.is_armed() || s.is_java()))
    {
        return None;
    }
    for &slot in slots.iter().filter(|s| live(s)) {
        if reused.is_none() {
            if !slot.is_java() && !env.is_null() {
                slot.become_java(env, &stack);
            }
            slot.set_identity(identity.clone());
            slot.reset_lost();
            reused = Some(slot);
        } else {
            slot.disarm();
            slot.ended.store(true, Ordering::Release);
        }
    }
    let slot = match reused {
        Some(slot) => slot,
        None => {
            let free = FREE.lock().ok().and_then(|mut free| free.pop());
            let slot = match free {
                Some(slot) => {
                    slot.reuse(tid, env, identity, &stack);
                    SLOTS_REUSED.fetch_add(1, Ordering::Relaxed);
                    slot
                }
                None => match Slot::make(tid, env, identity, stack) {
                    Some(slot) => {
                        SLOTS_CREATED.fetch_add(1, Ordering::Relaxed);
                        slot
                    }
                    None => {
                        eprintln!("jfr-native: thread table full; thread {tid} is not sampled");
                        return None;
                    }
                },
            };
            slots.push(slot);
            slot
        }
    };
    let armed = engine::sampler_for(tid, agent.signal, o.interval_ns, slot.signal_value())
        .and_then(|sampler| slot.arm(sampler, o.interval_ns, engine::thread_cpu_ns(tid)));
    match armed {
        // A thread the scan found that exited meanwhile: nothing to say.
        Err(_) if found && !os::thread_exists(tid) => slot.ended.store(true, Ordering::SeqCst),
        Err(e) => eprintln!("jfr-native: arming the sampling of thread {tid} failed: {e}"),
        Ok(()) => {}
    }
    Some(slot)
}

fn unregister_current_thread() {
    let tid = os::gettid();
    let slots: Vec<&'static Slot> = SLOTS.lock().map(|s| s.clone()).unwrap_or_default();
    for slot in slots
        .iter()
        .filter(|s| s.tid() == tid && !s.ended.load(Ordering::Acquire))
    {
        // Ended first: an arm from another thread that races with this disarms after itself.
        slot.ended.store(true, Ordering::SeqCst);
        slot.disarm_counting_tail(INTERVAL_NS.load(Ordering::Relaxed), || {
            os::thread_cpu_ns().max(0) as u64
        });
    }
}

/// Stops sampling, deletes every timer, and lets the writer finish the file. The caller holds
/// `LIFECYCLE`.
fn stop(agent: &'static Agent) {
    RECORDING.store(false, Ordering::SeqCst);
    if let Ok(slots) = SLOTS.lock() {
        let detached = slots
            .iter()
            .filter_map(|&slot| slot.detach().map(|s| (slot, s)))
            .collect();
        crate::sampling::slots::retire(detached);
    }
    // A handler that passed its RECORDING check before the store above finishes its record
    // now; the writer's last drain below then sees it.
    if !signal::wait_for_handlers(std::time::Duration::from_secs(1)) {
        eprintln!("jfr-native: a sample was still being taken after 1 s; it is left out");
    }
    stop_writer(agent);
    set_options(agent, None);
}

extern "system" fn on_vm_init(_jvmti: JvmtiEnvPtr, env: JniEnv, thread: JObject) {
    ffi_guard("VMInit", (), || {
        if let Some(agent) = AGENT.get() {
            let _lifecycle = LIFECYCLE.lock();
            if let Err(e) = start(agent, Some((env, thread))) {
                eprintln!("{e}; recording is off");
            } else if current_options(agent).is_some_and(|o| o.threads == options::Threads::All) {
                // The Java threads started before VMInit get no ThreadStart: armed as Java
                // threads here, before the scan would take them for the JVM's own.
                arm_existing_threads(agent, false);
            }
        }
    })
}

extern "system" fn on_vm_death(_jvmti: JvmtiEnvPtr, _env: JniEnv) {
    ffi_guard("VMDeath", (), || {
        if let Some(agent) = AGENT.get() {
            let _lifecycle = LIFECYCLE.lock();
            stop(agent);
        }
    })
}

extern "system" fn on_thread_start(_jvmti: JvmtiEnvPtr, env: JniEnv, thread: JObject) {
    ffi_guard("ThreadStart", (), || {
        if let Some(agent) = AGENT.get() {
            register_current_thread(agent, env, thread);
        }
    })
}

extern "system" fn on_thread_end(_jvmti: JvmtiEnvPtr, _env: JniEnv, _thread: JObject) {
    ffi_guard("ThreadEnd", (), unregister_current_thread)
}

/// Must be enabled for AsyncGetCallTrace to work; nothing to do.
extern "system" fn on_class_load(
    _jvmti: JvmtiEnvPtr,
    _env: JniEnv,
    _thread: JObject,
    _class: JObject,
) {
}

extern "system" fn on_class_prepare(
    _jvmti: JvmtiEnvPtr,
    _env: JniEnv,
    _thread: JObject,
    class: JObject,
) {
    ffi_guard("ClassPrepare", (), || {
        if let Some(agent) = AGENT.get() {
            let _ = agent.jvmti.class_methods(class);
        }
    })
}

/// `CompiledMethodLoad`'s signature (jvmti.h): method, code size and address, the address to
/// location map and its length, the compile information.
type CompiledMethodLoadFn = extern "system" fn(
    JvmtiEnvPtr,
    JMethodId,
    i32,
    *const c_void,
    i32,
    *const c_void,
    *const c_void,
);

/// A method was compiled: nothing to do. The event is on only so that HotSpot records debug
/// information between safepoints ([`hotspot::scopes::set_recorded_from_start`]).
extern "system" fn on_compiled_method_load(
    _jvmti: JvmtiEnvPtr,
    _method: JMethodId,
    _code_size: i32,
    _code: *const c_void,
    _map_length: i32,
    _map: *const c_void,
    _compile_info: *const c_void,
) {
    ffi_guard("CompiledMethodLoad", (), || ());
}

/// A stub HotSpot generated: recorded by name for the Java walk ([`hotspot::stubs`]).
extern "system" fn on_dynamic_code_generated(
    _jvmti: JvmtiEnvPtr,
    name: *const std::ffi::c_char,
    address: *const c_void,
    length: i32,
) {
    ffi_guard("DynamicCodeGenerated", (), || {
        if name.is_null() {
            return;
        }
        // SAFETY: JVMTI passes the stub's NUL-terminated name, valid during the callback.
        let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
        let (start, len) = (address as u64, u64::try_from(length).unwrap_or(0));
        hotspot::stubs::record(&name, start, len);
        hotspot::code_names::record(&name, start, start.saturating_add(len));
    })
}

type NativeMethodBindFn =
    extern "system" fn(JvmtiEnvPtr, JniEnv, JObject, *mut c_void, *mut c_void, *mut *mut c_void);

/// A native method is about to be bound, before its first call: if its library was loaded
/// since the code map was read, the map and the library's unwind table are made now, so that
/// no sample of the new code finds it unknown.
extern "system" fn on_native_method_bind(
    _jvmti: JvmtiEnvPtr,
    _env: JniEnv,
    _thread: JObject,
    _method: *mut c_void,
    _address: *mut c_void,
    _new_address: *mut *mut c_void,
) {
    ffi_guard("NativeMethodBind", (), || {
        if RECORDING.load(Ordering::Acquire) {
            crate::unwind::watcher::refresh();
        }
    })
}

/// Called when an entry point panicked: sampling stops for good (the JVM keeps running).
pub fn disable(what: &str) {
    RECORDING.store(false, Ordering::Release);
    eprintln!("jfr-native: internal error in {what}; sampling is disabled");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_java_release_is_read_from_the_specification_version() {
        for (text, feature) in [("1.8", 8), ("1.7", 7), ("11", 11), ("17", 17), ("25", 25)] {
            assert_eq!(parse_spec_version(text), Ok(feature), "{text}");
        }
        for junk in [
            "", "abc", "1", "1.", "1.x", "0", "+11", "-11", "11a", " 11", ".11",
        ] {
            assert!(parse_spec_version(junk).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn the_java_release_is_read_from_the_jvmti_version() {
        assert_eq!(jvmti_feature(0x3001_0203), Some(8)); // JDK 8: JVMTI 1.2.3
        assert_eq!(jvmti_feature(0x3009_0000), Some(9));
        assert_eq!(jvmti_feature(0x300B_0000), Some(11));
        assert_eq!(jvmti_feature(0x3019_0000), Some(25));
        assert_eq!(jvmti_feature(0x0001_0008), None); // a JNI version
        assert_eq!(jvmti_feature(0x3000_0000), None);
    }
}
