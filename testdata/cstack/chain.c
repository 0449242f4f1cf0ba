/* The call chain Java_<CHAIN_CLASS>_burn -> chain_outer -> chain_middle -> chain_leaf, built
 * three ways by the tests (plain -O2, -fno-omit-frame-pointer, -fomit-frame-pointer), with
 * CHAIN_CLASS naming the Java class whose native method it is.
 *
 * chain_leaf is the hard case: it makes no call and uses no stack, so GCC gives it no frame
 * even with -fno-omit-frame-pointer; the return address stays at [rsp] and rbp still holds
 * chain_middle's frame. Each caller does work after its call (no tail calls), and chain_middle,
 * not the leaf, reads the clock between leaf calls. The helpers are static, noinline and
 * noclone: the three libraries share these names, and no call may go through a PLT. */
#include <jni.h>
#include <stdint.h>
#include <time.h>

#ifndef CHAIN_CLASS
#error "build with -DCHAIN_CLASS=<Java class>"
#endif
#define JNI_NAME3(a, b, c) a##b##c
#define JNI_NAME(cls) JNI_NAME3(Java_, cls, _burn)

static volatile uint64_t sink;

/* About 2 ms of xorshift: registers only. (With a clock read every 0.2 ms instead, the chain
 * threads got about half the timer signals of the other threads when ten shared two cores.) */
static __attribute__((noinline, noclone)) uint64_t chain_leaf(uint64_t x) {
    for (int i = 0; i < 2000000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Calls the leaf until this thread has used `ns` more CPU time. */
static __attribute__((noinline, noclone)) uint64_t chain_middle(uint64_t ns) {
    uint64_t x = 0x9e3779b97f4a7c15u, end = thread_cpu_ns() + ns;
    do {
        x = chain_leaf(x) + 1;
    } while (thread_cpu_ns() < end);
    return x;
}

static __attribute__((noinline, noclone)) uint64_t chain_outer(uint64_t ns) {
    uint64_t r = chain_middle(ns);
    sink += r;
    return r + 1;
}

JNIEXPORT jlong JNICALL JNI_NAME(CHAIN_CLASS)(JNIEnv *env, jclass cls, jlong ns) {
    (void)env;
    (void)cls;
    uint64_t r = chain_outer((uint64_t)ns);
    sink += r;
    return (jlong)(r + 3);
}
