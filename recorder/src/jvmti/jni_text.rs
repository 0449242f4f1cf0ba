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

    /// The text of a `java.lang.String`, read as its UTF-16 code units (`GetStringRegion`):
    /// exact for every character, supplementary ones and NUL included. `None` for null, and
    /// for a string that is not valid Unicode (a lone surrogate).
    pub fn string_text(&self, string: JObject) -> Option<String> {
        if string.is_null() {
            return None;
        }
        let length = self.slot(|t| t.GetStringLength)?;
        let region = self.slot(|t| t.GetStringRegion)?;
        // SAFETY: GetStringLength is jsize (JNIEnv*, jstring) (jni.h).
        let length: unsafe extern "system" fn(JniEnv, JObject) -> i32 =
            unsafe { std::mem::transmute(length) };
        // SAFETY: GetStringRegion is void (JNIEnv*, jstring, jsize, jsize, jchar*) (jni.h).
        let region: unsafe extern "system" fn(JniEnv, JObject, i32, i32, *mut u16) =
            unsafe { std::mem::transmute(region) };
        // SAFETY: a live local reference to a String.
        let units = unsafe { length(self.0, string) };
        let mut buffer = vec![0u16; usize::try_from(units).ok()?];
        // SAFETY: the region [0, units) of the string, into a buffer of `units` code units.
        unsafe { region(self.0, string, 0, units, buffer.as_mut_ptr()) };
        String::from_utf16(&buffer).ok()
    }

    /// Whether an exception is pending on this thread (`ExceptionCheck`).
    fn exception_pending(&self) -> bool {
        let Some(slot) = self.slot(|t| t.ExceptionCheck) else {
            return false;
        };
        // SAFETY: ExceptionCheck is jboolean (JNIEnv*) (jni.h).
        let check: unsafe extern "system" fn(JniEnv) -> u8 = unsafe { std::mem::transmute(slot) };
        // SAFETY: this thread's env.
        unsafe { check(self.0) != 0 }
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
        if self.exception_pending() {
            return;
        }
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
