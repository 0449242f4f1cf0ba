/* JNI test library with known native call chains (built by the tests with
 * -O2 -fno-omit-frame-pointer). Each level does work after its call, so no call is a tail call
 * and every frame stays on the stack:  Java_Burner_nativeBurn -> level1 -> level2 -> level3. */
#include <jni.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The busy leaf: pure arithmetic, no calls, for about `ns` of this thread's CPU time. */
__attribute__((noinline)) uint64_t level3(uint64_t ns) {
    uint64_t x = 0x9e3779b97f4a7c15u, end = thread_cpu_ns() + ns;
    for (;;) {
        for (int i = 0; i < 200000; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        }
        if (thread_cpu_ns() >= end) return x;
    }
}

__attribute__((noinline)) uint64_t level2(uint64_t ns) { uint64_t r = level3(ns); sink += r; return r + 2; }
__attribute__((noinline)) uint64_t level1(uint64_t ns) { uint64_t r = level2(ns); sink += r; return r + 1; }

JNIEXPORT jlong JNICALL Java_Burner_nativeBurn(JNIEnv *env, jclass cls, jlong ns) {
    (void)env; (void)cls;
    uint64_t r = level1((uint64_t)ns);
    sink += r;
    return (jlong)(r + 3);
}

/* The same chain with every signal blocked (but the ones a fault raises), as native code that
 * masks signals around its work does: the agent's signals queue until the mask is restored. */
JNIEXPORT jlong JNICALL Java_Burner_maskedBurn(JNIEnv *env, jclass cls, jlong ns) {
    (void)env; (void)cls;
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGFPE);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    uint64_t r = level1((uint64_t)ns);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    sink += r;
    return (jlong)(r + 3);
}
