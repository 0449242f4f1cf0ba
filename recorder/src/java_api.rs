//! The native methods of the Java API (`io.jfrnative.JfrNative` in `tools/java`): start with
//! options, stop, dump, whether a recording runs, its file, the version.
//!
//! They are found by HotSpot in this library whether the Java API loaded it (`System.load`) or
//! the JVM has it as an agent (`-agentpath:`, `jcmd JVMTI.agent_load`, `jfrnative attach`):
//! HotSpot looks native methods up in agent libraries too. So one library serves both, and the
//! Java API never loads a second copy into a JVM that has one.
//!
//! Each call runs in the agent's guard (`agent::ffi_guard`): a panic disables the agent and throws, never
//! unwinds into the JVM. A failure throws `java.lang.IllegalStateException` with the agent's
//! message (the one `-agentpath:` would print: "bad agent option 'interval': ...").

use std::ffi::CStr;

use crate::agent::{self, ffi_guard};
use crate::jvmti::{JObject, Jni, JniEnv};

/// The agent's version and the commit it was built from: "jfr-native 0.1.0 (abc1234)".
pub fn version() -> String {
    format!(
        "jfr-native {} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("JFRNATIVE_COMMIT")
    )
}

const ILLEGAL_STATE: &CStr = c"java/lang/IllegalStateException";

/// Runs a native method's body under the guard; a panic throws instead of returning.
fn guarded<T>(env: JniEnv, what: &'static str, fallback: T, f: impl FnOnce(&Jni) -> T) -> T {
    let jni = Jni(env);
    match ffi_guard(what, None, || Some(f(&jni))) {
        Some(value) => value,
        None => {
            jni.throw(
                ILLEGAL_STATE,
                "jfr-native: internal error; sampling is disabled",
            );
            fallback
        }
    }
}

/// `String version0()`.
#[no_mangle]
pub extern "system" fn Java_io_jfrnative_JfrNative_version0(
    env: JniEnv,
    _class: JObject,
) -> JObject {
    guarded(env, "JfrNative.version0", std::ptr::null_mut(), |jni| {
        jni.new_string(&version())
    })
}

/// A native method taking one `String` and returning nothing: its text to `f`, whose error
/// (or a null or invalid string, named by `what_arg`) is thrown as `IllegalStateException`.
fn with_text(
    env: JniEnv,
    what: &'static str,
    string: JObject,
    what_arg: &str,
    f: impl FnOnce(&Jni, &str) -> Result<(), String>,
) {
    guarded(env, what, (), |jni| {
        let result = match jni.string_text(string) {
            Some(text) => f(jni, &text),
            None => Err(format!(
                "jfr-native: no {what_arg} (null, or not valid Unicode)"
            )),
        };
        if let Err(message) = result {
            jni.throw(ILLEGAL_STATE, &message);
        }
    })
}

/// `void execute0(String command)`: `stop`, or the options of a new recording (as after
/// `-agentpath:libjfrnative.so=`).
#[no_mangle]
pub extern "system" fn Java_io_jfrnative_JfrNative_execute0(
    env: JniEnv,
    _class: JObject,
    command: JObject,
) {
    with_text(
        env,
        "JfrNative.execute0",
        command,
        "command",
        |jni, text| {
            let vm = jni.java_vm().ok_or("jfr-native: GetJavaVM failed")?;
            agent::load(vm, text, agent::Origin::JavaApi)
        },
    )
}

/// `boolean isRunning0()`.
#[no_mangle]
pub extern "system" fn Java_io_jfrnative_JfrNative_isRunning0(env: JniEnv, _class: JObject) -> u8 {
    guarded(env, "JfrNative.isRunning0", 0, |_| {
        u8::from(agent::is_running())
    })
}

/// `String file0()`: the running recording's output, or null.
#[no_mangle]
pub extern "system" fn Java_io_jfrnative_JfrNative_file0(env: JniEnv, _class: JObject) -> JObject {
    guarded(env, "JfrNative.file0", std::ptr::null_mut(), |jni| {
        agent::running_file().map_or(std::ptr::null_mut(), |f| jni.new_string(&f))
    })
}

/// `void dump0(String path)`: the recording so far into a new file; the recording goes on.
#[no_mangle]
pub extern "system" fn Java_io_jfrnative_JfrNative_dump0(
    env: JniEnv,
    _class: JObject,
    path: JObject,
) {
    with_text(env, "JfrNative.dump0", path, "dump path", |_, path| {
        agent::dump(std::path::Path::new(path)).map(drop)
    })
}
