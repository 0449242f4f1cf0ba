//! A small safe wrapper over the JVMTI and JNI calls the agent makes. The raw table layouts are
//! generated (`sys.rs`); each function used here gets its C signature by hand, next to the call.

mod jni_text;
pub mod sys;

use std::ffi::{c_char, c_void, CStr};
use std::ptr;

pub use sys::JvmtiEventCallbacks;

/// `JavaVM*`.
pub type JavaVm = *mut *const sys::JniInvokeInterface;
/// `jvmtiEnv*`.
pub type JvmtiEnvPtr = *mut *const sys::JvmtiInterface;
/// `JNIEnv*`.
pub type JniEnv = *mut *const sys::JniNativeInterface;
/// `jobject` (also `jclass`, `jthread`).
pub type JObject = *mut c_void;
/// `jmethodID`.
pub type JMethodId = *mut c_void;

const JVMTI_VERSION_1_2: i32 = 0x3001_0200;
const JNI_VERSION_1_8: i32 = 0x0001_0008;
/// `JVMTI_ENABLE`.
const JVMTI_ENABLE: u32 = 1;

/// A JVMTI error code (0 = none).
pub type JvmtiError = u32;

macro_rules! jvmti_call {
    ($self:expr, $slot:ident, fn($($arg:ty),*) , $($val:expr),*) => {{
        let table = $self.table();
        let slot = table.$slot;
        if slot.is_null() {
            Err(99) // JVMTI_ERROR_NOT_AVAILABLE
        } else {
            // SAFETY: the slot is non-null and holds the JVMTI function of this name, whose C
            // signature is the one spelled out here (jvmti.h); the environment pointer is the
            // live one the JVM gave us.
            let f: unsafe extern "system" fn(JvmtiEnvPtr, $($arg),*) -> JvmtiError = unsafe { std::mem::transmute(slot) };
            // SAFETY: see above; the arguments are valid for the call (checked by callers).
            let code = unsafe { f($self.env, $($val),*) };
            if code == 0 { Ok(()) } else { Err(code) }
        }
    }};
}

/// A JVMTI environment.
#[derive(Clone, Copy)]
pub struct Jvmti {
    env: JvmtiEnvPtr,
}

// SAFETY: a jvmtiEnv may be used from any thread (JVMTI spec, "Environments").
unsafe impl Send for Jvmti {}
// SAFETY: as above; JVMTI functions are thread-safe.
unsafe impl Sync for Jvmti {}

/// One entry of a method's line-number table.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LineNumberEntry {
    /// First bytecode index of the line.
    pub start_location: i64,
    /// Source line.
    pub line_number: i32,
}

#[repr(C)]
struct ThreadInfoRaw {
    name: *mut c_char,
    priority: i32,
    is_daemon: u8,
    thread_group: JObject,
    context_class_loader: JObject,
}

/// The `JavaVM` the agent was loaded into.
#[derive(Clone, Copy)]
pub struct Vm(pub JavaVm);

// SAFETY: a JavaVM pointer is process-global and valid from any thread.
unsafe impl Send for Vm {}
// SAFETY: as above.
unsafe impl Sync for Vm {}

impl Vm {
    fn invoke(&self) -> &sys::JniInvokeInterface {
        // SAFETY: `self.0` is the JavaVM* passed to Agent_OnLoad/OnAttach, valid for the process
        // lifetime; its first word points at the invocation table.
        unsafe { &**self.0 }
    }

    /// `GetEnv` for an interface `version`.
    fn get_env(&self, version: i32) -> Option<*mut c_void> {
        let get_env = self.invoke().GetEnv;
        if get_env.is_null() {
            return None;
        }
        let mut env: *mut c_void = ptr::null_mut();
        // SAFETY: GetEnv has signature jint (JavaVM*, void**, jint) (jni.h).
        let f: unsafe extern "system" fn(JavaVm, *mut *mut c_void, i32) -> i32 =
            unsafe { std::mem::transmute(get_env) };
        // SAFETY: valid VM pointer and out-pointer.
        let rc = unsafe { f(self.0, &mut env, version) };
        (rc == 0 && !env.is_null()).then_some(env)
    }

    /// The JVMTI environment (version 1.2).
    pub fn jvmti(&self) -> Option<Jvmti> {
        self.get_env(JVMTI_VERSION_1_2)
            .map(|env| Jvmti { env: env.cast() })
    }

    /// The calling thread's JNIEnv, if it is attached.
    pub fn jni_env(&self) -> Option<JniEnv> {
        self.get_env(JNI_VERSION_1_8).map(|env| env.cast())
    }

    /// Attaches the calling native thread to the VM as a daemon named `name`.
    pub fn attach_current_thread_as_daemon(&self, name: &CStr) -> Option<JniEnv> {
        #[repr(C)]
        struct AttachArgs {
            version: i32,
            name: *const c_char,
            group: JObject,
        }
        let mut args = AttachArgs {
            version: JNI_VERSION_1_8,
            name: name.as_ptr(),
            group: ptr::null_mut(),
        };
        let slot = self.invoke().AttachCurrentThreadAsDaemon;
        if slot.is_null() {
            return None;
        }
        let mut env: *mut c_void = ptr::null_mut();
        // SAFETY: AttachCurrentThreadAsDaemon is jint (JavaVM*, void**, void*) (jni.h).
        let f: unsafe extern "system" fn(JavaVm, *mut *mut c_void, *mut c_void) -> i32 =
            unsafe { std::mem::transmute(slot) };
        // SAFETY: valid VM, out-pointer and JavaVMAttachArgs that outlive the call.
        let rc = unsafe { f(self.0, &mut env, (&mut args as *mut AttachArgs).cast()) };
        (rc == 0 && !env.is_null()).then_some(env.cast())
    }

    /// Detaches the calling thread.
    pub fn detach_current_thread(&self) {
        let slot = self.invoke().DetachCurrentThread;
        if !slot.is_null() {
            // SAFETY: DetachCurrentThread is jint (JavaVM*) (jni.h).
            let f: unsafe extern "system" fn(JavaVm) -> i32 = unsafe { std::mem::transmute(slot) };
            // SAFETY: valid VM; called on a thread we attached.
            unsafe { f(self.0) };
        }
    }
}

impl Jvmti {
    fn table(&self) -> &sys::JvmtiInterface {
        // SAFETY: `env` came from GetEnv and stays valid while the VM lives.
        unsafe { &**self.env }
    }

    /// Frees memory JVMTI allocated for us.
    fn deallocate<T>(&self, p: *mut T) {
        if !p.is_null() {
            let _ = jvmti_call!(self, Deallocate, fn(*mut u8), p.cast());
        }
    }

    /// Requests capabilities by bit position (`sys::CAN_*`).
    pub fn add_capabilities(&self, bits: &[u32]) -> Result<(), JvmtiError> {
        let mut caps = [0u32; 4];
        for &b in bits {
            caps[(b / 32) as usize] |= 1 << (b % 32);
        }
        jvmti_call!(self, AddCapabilities, fn(*const [u32; 4]), &caps)
    }

    /// Installs the event callbacks.
    pub fn set_event_callbacks(&self, callbacks: &JvmtiEventCallbacks) -> Result<(), JvmtiError> {
        let size = std::mem::size_of::<JvmtiEventCallbacks>() as i32;
        jvmti_call!(
            self,
            SetEventCallbacks,
            fn(*const JvmtiEventCallbacks, i32),
            callbacks,
            size
        )
    }

    /// Sends the events of `event` (`sys::JVMTI_EVENT_*`: compiled methods, generated code)
    /// for what exists already.
    pub fn generate_events(&self, event: u32) -> Result<(), JvmtiError> {
        jvmti_call!(self, GenerateEvents, fn(u32), event)
    }

    /// Enables an event (`sys::JVMTI_EVENT_*`) for all threads.
    pub fn enable_event(&self, event: u32) -> Result<(), JvmtiError> {
        jvmti_call!(
            self,
            SetEventNotificationMode,
            fn(u32, u32, JObject),
            JVMTI_ENABLE,
            event,
            ptr::null_mut()
        )
    }

    /// Every loaded class (local references).
    pub fn loaded_classes(&self) -> Result<Vec<JObject>, JvmtiError> {
        let mut count = 0i32;
        let mut classes: *mut JObject = ptr::null_mut();
        jvmti_call!(
            self,
            GetLoadedClasses,
            fn(*mut i32, *mut *mut JObject),
            &mut count,
            &mut classes
        )?;
        Ok(self.take_array(classes, count))
    }

    /// The methods of a class. Calling this creates their jmethodIDs, which AsyncGetCallTrace
    /// needs (without it, its frames carry null method ids).
    pub fn class_methods(&self, class: JObject) -> Result<Vec<JMethodId>, JvmtiError> {
        let mut count = 0i32;
        let mut methods: *mut JMethodId = ptr::null_mut();
        jvmti_call!(
            self,
            GetClassMethods,
            fn(JObject, *mut i32, *mut *mut JMethodId),
            class,
            &mut count,
            &mut methods
        )?;
        Ok(self.take_array(methods, count))
    }

    /// A method's name and descriptor.
    pub fn method_name(&self, method: JMethodId) -> Result<(String, String), JvmtiError> {
        let (mut name, mut sig): (*mut c_char, *mut c_char) = (ptr::null_mut(), ptr::null_mut());
        jvmti_call!(
            self,
            GetMethodName,
            fn(JMethodId, *mut *mut c_char, *mut *mut c_char, *mut *mut c_char),
            method,
            &mut name,
            &mut sig,
            ptr::null_mut()
        )?;
        let r = (self.take_string(name), self.take_string(sig));
        Ok(r)
    }

    /// A method's access flags.
    pub fn method_modifiers(&self, method: JMethodId) -> Result<i32, JvmtiError> {
        let mut m = 0i32;
        jvmti_call!(
            self,
            GetMethodModifiers,
            fn(JMethodId, *mut i32),
            method,
            &mut m
        )?;
        Ok(m)
    }

    /// The class declaring a method (a local reference).
    pub fn method_declaring_class(&self, method: JMethodId) -> Result<JObject, JvmtiError> {
        let mut class: JObject = ptr::null_mut();
        jvmti_call!(
            self,
            GetMethodDeclaringClass,
            fn(JMethodId, *mut JObject),
            method,
            &mut class
        )?;
        Ok(class)
    }

    /// A class's JVM signature, e.g. `Ljava/lang/String;`.
    pub fn class_signature(&self, class: JObject) -> Result<String, JvmtiError> {
        let mut sig: *mut c_char = ptr::null_mut();
        jvmti_call!(
            self,
            GetClassSignature,
            fn(JObject, *mut *mut c_char, *mut *mut c_char),
            class,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok(self.take_string(sig))
    }

    /// A method's line-number table (empty if it has none).
    pub fn line_number_table(&self, method: JMethodId) -> Vec<LineNumberEntry> {
        let mut count = 0i32;
        let mut table: *mut LineNumberEntry = ptr::null_mut();
        match jvmti_call!(
            self,
            GetLineNumberTable,
            fn(JMethodId, *mut i32, *mut *mut LineNumberEntry),
            method,
            &mut count,
            &mut table
        ) {
            Ok(()) => self.take_array(table, count),
            Err(_) => Vec::new(),
        }
    }

    /// A thread's name (null `thread` = the current thread).
    pub fn thread_name(&self, thread: JObject) -> Option<String> {
        let mut info = ThreadInfoRaw {
            name: ptr::null_mut(),
            priority: 0,
            is_daemon: 0,
            thread_group: ptr::null_mut(),
            context_class_loader: ptr::null_mut(),
        };
        jvmti_call!(
            self,
            GetThreadInfo,
            fn(JObject, *mut ThreadInfoRaw),
            thread,
            &mut info
        )
        .ok()?;
        Some(self.take_string(info.name))
    }

    /// A property the VM itself sets (`GetSystemProperty`; from the OnLoad phase on, also on
    /// JDK 8): `java.vm.specification.version`, `java.vm.version`. `None` if it has none.
    pub fn system_property(&self, name: &CStr) -> Option<String> {
        let mut value: *mut c_char = ptr::null_mut();
        jvmti_call!(
            self,
            GetSystemProperty,
            fn(*const c_char, *mut *mut c_char),
            name.as_ptr(),
            &mut value
        )
        .ok()?;
        Some(self.take_string(value))
    }

    /// The JVMTI version the VM implements (`GetVersionNumber`): 1.2 (`0x3001_02xx`) up to
    /// JDK 8, the feature release as major version from JDK 9 on (JDK 11: `0x300B_0000`).
    pub fn version_number(&self) -> Option<i32> {
        let mut version = 0i32;
        jvmti_call!(self, GetVersionNumber, fn(*mut i32), &mut version).ok()?;
        Some(version)
    }

    /// Gives this environment back to the VM (`DisposeEnvironment`), for a load that refuses
    /// after `GetEnv`: nothing of the agent is left in the VM.
    pub fn dispose(&self) {
        let _ = jvmti_call!(self, DisposeEnvironment, fn(),);
    }

    /// Every live Java thread (local references).
    pub fn all_threads(&self) -> Result<Vec<JObject>, JvmtiError> {
        let mut count = 0i32;
        let mut threads: *mut JObject = ptr::null_mut();
        jvmti_call!(
            self,
            GetAllThreads,
            fn(*mut i32, *mut *mut JObject),
            &mut count,
            &mut threads
        )?;
        Ok(self.take_array(threads, count))
    }

    /// The calling thread's `java.lang.Thread`.
    pub fn current_thread(&self) -> Result<JObject, JvmtiError> {
        let mut thread: JObject = ptr::null_mut();
        jvmti_call!(self, GetCurrentThread, fn(*mut JObject), &mut thread)?;
        Ok(thread)
    }

    /// Copies an array JVMTI allocated for us (`count` elements at `p`) and frees it.
    fn take_array<T: Copy>(&self, p: *mut T, count: i32) -> Vec<T> {
        let v = if p.is_null() || count <= 0 {
            Vec::new()
        } else {
            // SAFETY: JVMTI returned an array of `count` elements at `p`, still allocated.
            unsafe { std::slice::from_raw_parts(p, count as usize) }.to_vec()
        };
        self.deallocate(p);
        v
    }

    fn take_string(&self, p: *mut c_char) -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: JVMTI returned a NUL-terminated modified-UTF-8 string it allocated.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        self.deallocate(p);
        s
    }
}

/// JNI calls on the current thread's `JNIEnv`.
pub struct Jni(pub JniEnv);

/// The JNI functions the agent calls, typed (jni.h).
struct JniFns {
    find_class: unsafe extern "system" fn(JniEnv, *const c_char) -> JObject,
    get_object_class: unsafe extern "system" fn(JniEnv, JObject) -> JObject,
    get_method_id:
        unsafe extern "system" fn(JniEnv, JObject, *const c_char, *const c_char) -> JMethodId,
    get_field_id:
        unsafe extern "system" fn(JniEnv, JObject, *const c_char, *const c_char) -> *mut c_void,
    call_long_method: unsafe extern "system" fn(JniEnv, JObject, JMethodId, *const u64) -> i64,
    get_long_field: unsafe extern "system" fn(JniEnv, JObject, *mut c_void) -> i64,
    exception_check: unsafe extern "system" fn(JniEnv) -> u8,
    exception_clear: unsafe extern "system" fn(JniEnv),
    delete_local_ref: unsafe extern "system" fn(JniEnv, JObject),
}

impl Jni {
    fn table(&self) -> &sys::JniNativeInterface {
        // SAFETY: a JNIEnv handed to us by the JVM for the current thread.
        unsafe { &**self.0 }
    }

    /// The typed functions, or `None` if any slot is null.
    // The target type of each transmute is the `JniFns` field it initializes.
    #[allow(clippy::missing_transmute_annotations)]
    fn fns(&self) -> Option<JniFns> {
        let t = self.table();
        let slots = [
            t.FindClass,
            t.GetObjectClass,
            t.GetMethodID,
            t.GetFieldID,
            t.CallLongMethodA,
            t.GetLongField,
            t.ExceptionCheck,
            t.ExceptionClear,
            t.DeleteLocalRef,
        ];
        if slots.iter().any(|p| p.is_null()) {
            return None;
        }
        // SAFETY: every slot is non-null and holds the JNI function of that name, whose C
        // signature is the field's type (jni.h).
        unsafe {
            Some(JniFns {
                find_class: std::mem::transmute(t.FindClass),
                get_object_class: std::mem::transmute(t.GetObjectClass),
                get_method_id: std::mem::transmute(t.GetMethodID),
                get_field_id: std::mem::transmute(t.GetFieldID),
                call_long_method: std::mem::transmute(t.CallLongMethodA),
                get_long_field: std::mem::transmute(t.GetLongField),
                exception_check: std::mem::transmute(t.ExceptionCheck),
                exception_clear: std::mem::transmute(t.ExceptionClear),
                delete_local_ref: std::mem::transmute(t.DeleteLocalRef),
            })
        }
    }

    /// Runs `read(class)` on the class (`Some`) or on `thread`'s class (`None`), then releases
    /// the class reference and clears any pending exception (which makes the result `None`).
    fn with_class(
        &self,
        name: Option<&CStr>,
        thread: JObject,
        read: impl FnOnce(&JniFns, JObject) -> Option<i64>,
    ) -> Option<i64> {
        let f = self.fns()?;
        if thread.is_null() {
            return None;
        }
        // SAFETY: JNI calls with this thread's env; `thread` is a live local reference to a
        // java.lang.Thread and `name` a NUL-terminated class name.
        unsafe {
            let class = match name {
                Some(name) => (f.find_class)(self.0, name.as_ptr()),
                None => (f.get_object_class)(self.0, thread),
            };
            if class.is_null() {
                (f.exception_clear)(self.0);
                return None;
            }
            let value = read(&f, class);
            (f.delete_local_ref)(self.0, class);
            if (f.exception_check)(self.0) != 0 {
                (f.exception_clear)(self.0);
                return None;
            }
            value
        }
    }

    /// `Thread.getId()` of `thread` (a `java.lang.Thread`), if it can be called.
    pub fn java_thread_id(&self, thread: JObject) -> Option<i64> {
        self.with_class(None, thread, |f, class| {
            // SAFETY: JNI calls on a live class and thread reference with this thread's env.
            unsafe {
                let method = (f.get_method_id)(self.0, class, c"getId".as_ptr(), c"()J".as_ptr());
                (!method.is_null())
                    .then(|| (f.call_long_method)(self.0, thread, method, ptr::null()))
            }
        })
    }

    /// The private `long eetop` field of a `java.lang.Thread`: HotSpot's `JavaThread*` for a live
    /// thread (0 once it has ended). Read through JNI, which ignores access modifiers.
    pub fn thread_eetop(&self, thread: JObject) -> Option<i64> {
        self.thread_long_field(thread, c"eetop")
    }

    /// The private `long tid` field of a `java.lang.Thread`: its `threadId()`.
    pub fn thread_tid(&self, thread: JObject) -> Option<i64> {
        self.thread_long_field(thread, c"tid")
    }

    fn thread_long_field(&self, thread: JObject, name: &CStr) -> Option<i64> {
        self.with_class(Some(c"java/lang/Thread"), thread, |f, class| {
            // SAFETY: JNI calls on a live class and thread reference with this thread's env.
            unsafe {
                let field = (f.get_field_id)(self.0, class, name.as_ptr(), c"J".as_ptr());
                (!field.is_null()).then(|| (f.get_long_field)(self.0, thread, field))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::sys::*;
    use std::mem::{offset_of, size_of};

    /// Slot positions from jvmti.h / jni.h ("N : Name" comments are 1-based).
    #[test]
    fn generated_layouts_match_the_headers() {
        assert_eq!(offset_of!(JvmtiInterface, SetEventNotificationMode), 8);
        assert_eq!(offset_of!(JvmtiInterface, GetClassMethods), 51 * 8);
        assert_eq!(offset_of!(JvmtiInterface, GetLineNumberTable), 69 * 8);
        assert_eq!(offset_of!(JvmtiInterface, AddCapabilities), 141 * 8);
        assert_eq!(size_of::<JvmtiInterface>(), 156 * 8);
        assert_eq!(offset_of!(JniInvokeInterface, GetEnv), 6 * 8);
        assert_eq!(offset_of!(JniNativeInterface, GetVersion), 4 * 8);
        assert_eq!(offset_of!(JniNativeInterface, GetMethodID), 33 * 8);
        assert_eq!(offset_of!(JvmtiEventCallbacks, VMInit), 0);
        assert_eq!(offset_of!(JvmtiEventCallbacks, ThreadStart), 2 * 8);
        assert_eq!(offset_of!(JvmtiEventCallbacks, ClassPrepare), 6 * 8);
        assert_eq!(CAN_GENERATE_ALL_CLASS_HOOK_EVENTS, 26);
        assert_eq!(JVMTI_EVENT_CLASS_LOAD, 55);
    }
}
