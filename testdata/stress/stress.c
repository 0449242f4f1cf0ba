/* The JNI side of the stress program (Stress.java) and the parity program (Parity.java), both
 * through the Jni class: dlopen/dlclose churn of small libraries built by the harness, and a
 * Java -> native -> Java recursion that ends in a StackOverflowError. */
#include <dlfcn.h>
#include <jni.h>
#include <stdint.h>

static volatile uint64_t sink;

static void throw_runtime(JNIEnv *env, const char *message) {
    jclass c = (*env)->FindClass(env, "java/lang/RuntimeException");
    if (c) (*env)->ThrowNew(env, c, message ? message : "dlopen failed");
}

/* `rounds` times: dlopen one of `paths` (in turn), call its churn_work, dlclose it. Every fourth
 * round keeps a second library open across the call, so that two are mapped at once. Returns
 * the number of calls made; throws RuntimeException with dlerror() on a failure. */
JNIEXPORT jlong JNICALL Java_Jni_dlchurn(JNIEnv *env, jclass cls, jobjectArray paths,
                                         jint rounds) {
    (void)cls;
    jsize n = (*env)->GetArrayLength(env, paths);
    if (n <= 0) return 0;
    jlong calls = 0;
    for (jint r = 0; r < rounds; r++) {
        void *held = NULL;
        for (int k = 0; k < ((r & 3) == 0 ? 2 : 1); k++) {
            jstring p = (jstring)(*env)->GetObjectArrayElement(env, paths, (r + k) % n);
            const char *path = (*env)->GetStringUTFChars(env, p, NULL);
            if (!path) return calls;
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            (*env)->ReleaseStringUTFChars(env, p, path);
            (*env)->DeleteLocalRef(env, p);
            if (!h) {
                if (held) dlclose(held);
                throw_runtime(env, dlerror());
                return calls;
            }
            int (*work)(int) = (int (*)(int))dlsym(h, "churn_work");
            if (!work) {
                dlclose(h);
                if (held) dlclose(held);
                throw_runtime(env, dlerror());
                return calls;
            }
            sink += (uint64_t)work(r);
            calls++;
            if (held) dlclose(held);
            held = h;
        }
        if (held) dlclose(held);
    }
    return calls;
}

/* Jni.nativeRecurse(depth): calls back into Jni.recurse(depth + 1) with a little native stack
 * of its own, and returns at once when the call left an exception (the StackOverflowError
 * unwinding through every native frame to the Java catch). */
JNIEXPORT void JNICALL Java_Jni_nativeRecurse(JNIEnv *env, jclass cls, jint depth) {
    static jmethodID recurse;
    volatile char pad[256];
    pad[depth & 255] = (char)depth;
    if (!recurse) {
        recurse = (*env)->GetStaticMethodID(env, cls, "recurse", "(I)V");
        if (!recurse) return;
    }
    (*env)->CallStaticVoidMethod(env, cls, recurse, depth + 1);
    if ((*env)->ExceptionCheck(env)) return;
    sink += (uint64_t)pad[depth & 255];
}
