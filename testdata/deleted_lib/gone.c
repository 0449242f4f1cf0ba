/* A JNI library built without frame pointers (-O2 -fomit-frame-pointer): its frames are
 * unwound from its call-frame information only, which the agent must read from memory once
 * the file is deleted. */
#include <jni.h>

__attribute__((noinline)) long gone_mix(long a) {
    long x = a;
    for (int i = 0; i < 8; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
}

__attribute__((noinline)) long gone_inner(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) s ^= gone_mix(i + s);
    return s;
}

__attribute__((noinline)) long gone_outer(long n) { return gone_inner(n) + 1; }

JNIEXPORT jlong JNICALL Java_Gone_spin(JNIEnv *env, jclass cls, jlong n) {
    (void)env;
    (void)cls;
    return gone_outer(n);
}
