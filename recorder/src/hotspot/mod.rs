//! What the agent reads from HotSpot's own structures, described by the JVM itself
//! ([`vmstructs`]): the OS thread id and the stack of each `JavaThread`, so that threads that
//! ran before an attach are matched by thread id, not by name, and sampled within their real
//! stack bounds ([`threads`]); the code cache's reserved range ([`codecache`]); the virtual
//! thread a carrier runs ([`vthread`]); and the Java frames of a sample: the walk through
//! HotSpot's frame descriptions ([`javawalk`], over [`layout`], [`codeblob`], [`scopes`],
//! [`method`]), across the boundaries where native code calls Java ([`boundaries`]: the call
//! stub and FFM upcall stubs, with the stubs JVMTI names in [`stubs`]) and into a virtual
//! thread's frames frozen in heap stack chunks ([`continuation`], references decoded by
//! [`oops`]), AsyncGetCallTrace ([`agct`]), and the Java step of the handler that runs both
//! ([`sample`]). Layouts HotSpot does not describe come from libjvm's symbol table ([`symtab`])
//! and the JVM's flags ([`flags`]).
//!
//! Every read of a JVM structure goes through [`crate::fault`]: a thread that exits meanwhile
//! gives "unknown", never a crash. What runs in the signal handler here follows the sampling
//! wing's rules ([`crate::sampling`]): no allocation, no locks, no panics.

#[cfg(any(target_arch = "aarch64", test))]
pub mod a64_decode;
pub mod agct;
pub mod boundaries;
pub mod code_names;
pub mod code_types;
pub mod codeblob;
pub mod codecache;
pub mod continuation;
#[cfg(any(target_arch = "aarch64", test))]
pub mod cpu_aarch64;
#[cfg(target_arch = "x86_64")]
pub mod cpu_x86_64;
pub mod flags;
pub mod javawalk;
pub mod layout;
pub mod mem;
pub mod method;
pub mod oops;
pub mod sample;
pub mod scopes;
#[cfg(target_arch = "x86_64")]
pub mod stub_exit;
pub mod stubs;
pub mod symtab;
pub mod threads;
pub mod vmstructs;
pub mod vthread;

/// HotSpot's frames and generated code on the architecture built for: one wing per
/// architecture, the same names in each.
#[cfg(target_arch = "aarch64")]
pub use cpu_aarch64 as cpu;
#[cfg(target_arch = "x86_64")]
pub use cpu_x86_64 as cpu;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;

use layout::JavaLayout;

use vmstructs::VmStructs;

static VM_STRUCTS: OnceLock<Option<VmStructs>> = OnceLock::new();

/// The running JVM's structure table, read once; `None` if libjvm does not export it.
pub fn vm_structs() -> Option<&'static VmStructs> {
    VM_STRUCTS.get_or_init(VmStructs::read).as_ref()
}

static JAVA_LAYOUT: OnceLock<Result<JavaLayout, String>> = OnceLock::new();

/// Offset of the JNIEnv inside a `JavaThread` (0: not measured yet).
static JNI_ENV_OFFSET: AtomicI64 = AtomicI64::new(0);

/// The Java-frame walk's layout, read once; the error names the first field this JVM does
/// not describe.
pub fn init_java_layout() -> &'static Result<JavaLayout, String> {
    JAVA_LAYOUT.get_or_init(|| {
        // The decoder's tables, built here, off the signal handler that reads them.
        cpu::prime();
        let v = vm_structs().ok_or("gHotSpotVMStructs")?;
        let major = java_major(v).ok_or("Abstract_VM_Version::_vm_major_version")?;
        JavaLayout::new(v, major)
    })
}

/// The Java feature release of the running JVM (17, 21, 25, ...).
pub fn java_major(v: &VmStructs) -> Option<u32> {
    v.static_u32("Abstract_VM_Version", "_vm_major_version")
}

/// Whether `pc` is in code the JVM generated that is no Java frame: a stub (arraycopy and the
/// other `StubRoutines`, vtable and itable stubs), an adapter, a runtime stub. Not an nmethod
/// or the interpreter (Java frames), and not a stub between native code and Java (the call
/// stub, `jni_fast_Get*Field`): the Java walk writes those itself, as the native frame at its
/// boundary. Signal-safe: fault-safe reads of the code cache.
pub fn in_vm_stub(pc: u64) -> bool {
    let boundary = stubs::find(pc).is_some_and(|s| {
        matches!(
            s.kind,
            stubs::StubKind::CallStub | stubs::StubKind::NativeLeaf
        )
    });
    !boundary
        && java_layout()
            .and_then(|l| l.find_blob(pc))
            .is_some_and(|b| b.kind == codeblob::BlobKind::Stub)
}

/// The layout, if [`init_java_layout`] succeeded (a lock-free read for the signal handler).
#[inline]
pub fn java_layout() -> Option<&'static JavaLayout> {
    JAVA_LAYOUT.get().and_then(|r| r.as_ref().ok())
}

/// Records where the JNIEnv is inside a `JavaThread`, measured on one thread: its JNIEnv minus
/// its `Thread.eetop`. The same for every thread of the VM.
pub fn set_jni_env_offset(offset: i64) {
    JNI_ENV_OFFSET.store(offset, Ordering::Release);
}

/// The `JavaThread*` of a thread whose JNIEnv is `env`, once the offset is known.
#[inline]
pub fn java_thread(env: u64) -> Option<u64> {
    let offset = JNI_ENV_OFFSET.load(Ordering::Acquire);
    (offset != 0 && env != 0).then(|| env.wrapping_sub(offset as u64))
}
