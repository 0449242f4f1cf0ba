/* "Another profiler" in the same JVM, as common CPU profilers are built: a per-thread CPU-time
 * timer (timer_create on the thread's CPU clock, SIGEV_THREAD_ID) whose real-time signal has
 * an SA_SIGINFO | SA_RESTART handler with an empty sa_mask. The handler does a little work
 * (a few hundred ns, in a function of its own) as a real profiler's would. Built by the tests
 * with -O2 (call-frame information, no frame pointers).
 *
 * When this timer and the agent's expire at the same scheduler tick, the kernel delivers both
 * signals at once: the lower-numbered one first, whose handler is then interrupted at its first
 * instruction by the other. */
#define _GNU_SOURCE
#include <errno.h>
#include <jni.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static volatile uint64_t handled;
static int the_signal;

/* The handler's work: a few hundred nanoseconds. */
__attribute__((noinline)) void other_profiler_work(void) {
    uint64_t x = sink | 1;
    for (int i = 0; i < 300; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink = x;
}

void other_profiler_handler(int signal, siginfo_t *info, void *uc) {
    (void)signal;
    (void)info;
    (void)uc;
    other_profiler_work();
    __atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
}

/* Installs the handler for `signal`, which must have none yet. 0, or -errno. */
JNIEXPORT jint JNICALL Java_Coincident_install(JNIEnv *env, jclass cls, jint signal) {
    (void)env;
    (void)cls;
    struct sigaction old;
    if (sigaction(signal, NULL, &old) != 0) return -errno;
    if (old.sa_handler != SIG_DFL) return -EBUSY;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = other_profiler_handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(signal, &action, NULL) != 0) return -errno;
    the_signal = signal;
    return 0;
}

/* Arms a CPU-time timer of the calling thread, every `interval_ns` of its CPU time, that
 * signals this thread. 0, or -errno. */
JNIEXPORT jint JNICALL Java_Coincident_startTimer(JNIEnv *env, jclass cls, jlong interval_ns) {
    (void)env;
    (void)cls;
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = the_signal;
    event._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_t timer;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &event, &timer) != 0) return -errno;
    struct itimerspec spec;
    spec.it_interval.tv_sec = interval_ns / 1000000000;
    spec.it_interval.tv_nsec = interval_ns % 1000000000;
    spec.it_value = spec.it_interval;
    if (timer_settime(timer, 0, &spec, NULL) != 0) return -errno;
    return 0;
}

/* How many signals the handler has taken. */
JNIEXPORT jlong JNICALL Java_Coincident_handled(JNIEnv *env, jclass cls) {
    (void)env;
    (void)cls;
    return (jlong)handled;
}
