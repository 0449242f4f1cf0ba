//! The JNI calls of the Java API's native methods (`crate::java_api`): a `jstring`'s text, a
//! new `jstring`, a thrown exception and the `JavaVM` of a `JNIEnv`.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;

use super::{JObject, Jni, JniEnv, Vm};

impl Jni {
    /// The JNI function in a table slot, if the slot is set.
    fn slot(
        &self,
        pick: impl FnOnce(&super::sys::JniNativeInterface) -> *const c_void,
    ) -> Option<*const c_void> {
        // SAFETY: a JNIEnv handed to us by the JVM for the current thread; its first word points
        // at the function table.
        let table = unsafe { &**self.0 };
        let slot = pick(table);
        (!slot.is_null()).then_some(slot)
    }

    /// The `JavaVM` this thread's env belongs to (`GetJavaVM`).
    pub fn java_vm(&self) -> Option<Vm> {
        let slot = self.slot(|t| t.GetJavaVM)?;
        // SAFETY: GetJavaVM is jint (JNIEnv*, JavaVM**) (jni.h).
        let f: unsafe extern "system" fn(JniEnv, *mut super::JavaVm) -> i32 =
            unsafe { std::mem::transmute(slot) };
        let mut vm: super::JavaVm = ptr::null_mut();
        // SAFETY: this thread's env and an out-pointer that outlives the call.
        let rc = unsafe { f(self.0, &mut vm) };
        (rc == 0 && !vm.is_null()).then_some(Vm(vm))
    }

    /// The text of a `java.lang.String` (`GetStringUTFChars`: modified UTF-8, which equals
    /// UTF-8 outside NUL and supplementary characters; those become U+FFFD). `None` for null.
    pub fn string_text(&self, string: JObject) -> Option<String> {
        if string.is_null() {
            return None;
        }
        let get = self.slot(|t| t.GetStringUTFChars)?;
        let release = self.slot(|t| t.ReleaseStringUTFChars)?;
        // SAFETY: GetStringUTFChars is const char* (JNIEnv*, jstring, jboolean*) (jni.h).
        let get: unsafe extern "system" fn(JniEnv, JObject, *mut u8) -> *const c_char =
            unsafe { std::mem::transmute(get) };
        // SAFETY: ReleaseStringUTFChars is void (JNIEnv*, jstring, const char*) (jni.h).
        let release: unsafe extern "system" fn(JniEnv, JObject, *const c_char) =
            unsafe { std::mem::transmute(release) };
        // SAFETY: a live local reference to a String; a null is-copy pointer is allowed.
        let chars = unsafe { get(self.0, string, ptr::null_mut()) };
        if chars.is_null() {
            return None; // OutOfMemoryError pending
        }
        // SAFETY: the JVM returned a NUL-terminated string, valid until released below.
        let text = unsafe { CStr::from_ptr(chars) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: the pointer GetStringUTFChars returned for this string, released once.
        unsafe { release(self.0, string, chars) };
        Some(text)
    }

    /// A new `java.lang.String` (`NewStringUTF`; a NUL in `text` ends it); null on failure.
    pub fn new_string(&self, text: &str) -> JObject {
        let text = CString::new(text.split('\0').next().unwrap_or_default()).unwrap_or_default();
        let Some(slot) = self.slot(|t| t.NewStringUTF) else {
            return ptr::null_mut();
        };
        // SAFETY: NewStringUTF is jstring (JNIEnv*, const char*) (jni.h).
        let f: unsafe extern "system" fn(JniEnv, *const c_char) -> JObject =
            unsafe { std::mem::transmute(slot) };
        // SAFETY: this thread's env and a NUL-terminated string.
        unsafe { f(self.0, text.as_ptr()) }
    }

    /// Throws a new `class` (a `java.lang` exception with a `(String)` constructor) with
    /// `message`, unless an exception is already pending.
    pub fn throw(&self, class: &CStr, message: &str) {
        let (Some(find), Some(throw)) = (self.slot(|t| t.FindClass), self.slot(|t| t.ThrowNew))
        else {
            return;
        };
        // SAFETY: FindClass is jclass (JNIEnv*, const char*) (jni.h).
        let find: unsafe extern "system" fn(JniEnv, *const c_char) -> JObject =
            unsafe { std::mem::transmute(find) };
        // SAFETY: ThrowNew is jint (JNIEnv*, jclass, const char*) (jni.h).
        let throw: unsafe extern "system" fn(JniEnv, JObject, *const c_char) -> i32 =
            unsafe { std::mem::transmute(throw) };
        let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: this thread's env, a NUL-terminated class name; a null class means FindClass
        // left its own exception pending, which is thrown instead.
        unsafe {
            let class = find(self.0, class.as_ptr());
            if !class.is_null() {
                throw(self.0, class, message.as_ptr());
            }
        }
    }
}
