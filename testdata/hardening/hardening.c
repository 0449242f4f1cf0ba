/*
 * Native code that puts the sampler in the places where it used to crash or hang the JVM
 * (see Hardening.java): a thread close to its stack's guard zone, code on a fiber stack and on
 * an alternate signal stack whose rbp points into an unmapped gap, a page of the thread's own
 * stack made unreadable with rbp pointing into it. Each spins on its own CPU so that the
 * agent's timer fires there. Build: gcc -O2 -fomit-frame-pointer -mno-red-zone -shared -fPIC
 * (x86_64), aarch64-linux-gnu-gcc -O2 -fomit-frame-pointer -shared -fPIC (aarch64, where rbp
 * is x29, the frame record's pointer).
 */
#define _GNU_SOURCE
#include <jni.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burns CPU for `seconds` of thread CPU time with rbp set to `fake_rbp`, touching no stack. */
static void spin_with_rbp(uintptr_t fake_rbp, double seconds) {
    double end = thread_cpu_s() + seconds;
    while (thread_cpu_s() < end) {
        long n = 2000000;
#if defined(__aarch64__)
        /* x29 kept in a register of its own and put back by the asm itself: GCC neither saves
         * nor restores x29 for a clobber (a caller's frame record was lost that way). */
        uintptr_t saved;
        __asm__ volatile(
            "mov %1, x29\n\t"
            "mov x29, %2\n\t"
            "1: subs %0, %0, #1\n\t"
            "b.ne 1b\n\t"
            "mov x29, %1\n\t"
            : "+r"(n), "=&r"(saved)
            : "r"(fake_rbp)
            : "memory", "cc");
#else
        __asm__ volatile(
            "push %%rbp\n\t"
            "mov %1, %%rbp\n\t"
            "1: dec %0\n\t"
            "jnz 1b\n\t"
            "pop %%rbp\n\t"
            : "+r"(n)
            : "r"(fake_rbp)
            : "memory", "cc");
#endif
    }
}

/* The usable low end of the current thread's stack: the start of the mapping that holds sp
 * (HotSpot's guard zones and glibc's guard page are separate mappings below it). */
static uintptr_t usable_stack_low(void) {
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    uintptr_t low = 0;
    while (maps && fgets(line, sizeof line, maps)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a <= sp && sp < b) {
            low = a;
            break;
        }
    }
    if (maps) fclose(maps);
    return low;
}

static volatile long sink;

/* Recurses with 1 KiB frames until less than `left` bytes of usable stack remain, then spins. */
static __attribute__((noinline)) long descend(uintptr_t low, long left, double seconds, long *reached) {
    volatile char frame[1024];
    frame[0] = 1;
    uintptr_t here = (uintptr_t)&frame[0];
    if (here - low > (uintptr_t)left + sizeof frame) {
        return descend(low, left, seconds, reached) + frame[0];
    }
    *reached = (long)(here - low);
    double end = thread_cpu_s() + seconds;
    long n = 0;
    while (thread_cpu_s() < end) {
        for (int i = 0; i < 100000; i++) n += i ^ (n >> 3);
    }
    sink = n;
    return frame[0];
}

/* Spins with only `left` bytes of stack below; returns the bytes left where it spun. */
JNIEXPORT jlong JNICALL Java_Hardening_nearGuard(JNIEnv *env, jclass c, jlong left, jdouble seconds) {
    uintptr_t low = usable_stack_low();
    if (low == 0) return -1;
    /* Bound before the descent: a first call at the bottom would run the dynamic linker's lazy
     * binding there (about 2.7 KB of stack with AVX-512 state), leaving too little for the
     * kernel's signal frame; the kernel then kills the process on any signal, the agent's or
     * another's. The library is also linked with -z now. */
    (void)thread_cpu_s();
    long reached = 0;
    descend(low, (long)left, seconds, &reached);
    return reached;
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* A readable region with unmapped gaps of 16 pages below and above it, placed a little below
 * the current thread's stack when that address is free (so that the thread's stack top is
 * near: a walker that trusts "from sp up to the thread's stack top" reaches the gap). */
static char *region_with_gap_below(size_t size, uintptr_t *gap) {
    size_t total = size + 2 * 4096 * 16;
    uintptr_t low = usable_stack_low();
    char *m = MAP_FAILED;
    for (uintptr_t below = 1 << 20; low > (8u << 20) && below <= (8u << 20) && m == MAP_FAILED; below += 1 << 20) {
        m = mmap((void *)(low - below - total), total, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    }
    if (m == MAP_FAILED) m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    /* [m, m + 16 pages): unmapped gap; then the region; then 16 pages unmapped. */
    munmap(m, 4096 * 16);
    munmap(m + 4096 * 16 + size, 4096 * 16);
    *gap = (uintptr_t)m + 4096 * 8;
    return m + 4096 * 16;
}

static ucontext_t fiber_main, fiber_ctx;
static double fiber_seconds;
static uintptr_t fiber_gap;

static void fiber_body(void) { spin_with_rbp(fiber_gap, fiber_seconds); }

/* Runs on a fiber stack (makecontext/swapcontext) with rbp pointing into an unmapped gap
 * between the thread's stack and the fiber's. */
JNIEXPORT jint JNICALL Java_Hardening_onFiber(JNIEnv *env, jclass c, jdouble seconds) {
    size_t size = 256 << 10;
    uintptr_t gap;
    char *stack = region_with_gap_below(size, &gap);
    if (!stack) return -1;
    /* The gap must lie above the fiber's stack for a walk from it to reach it: put rbp in
     * the unmapped pages above the fiber stack instead. */
    fiber_gap = (uintptr_t)stack + size + 4096 * 8;
    fiber_seconds = seconds;
    getcontext(&fiber_ctx);
    fiber_ctx.uc_stack.ss_sp = stack;
    fiber_ctx.uc_stack.ss_size = size;
    fiber_ctx.uc_link = &fiber_main;
    makecontext(&fiber_ctx, fiber_body, 0);
    swapcontext(&fiber_main, &fiber_ctx);
    munmap(stack, size);
    return 0;
}

static double alt_seconds;
static uintptr_t alt_gap;
static sigset_t alt_thread_mask;

/* The handler first takes back the thread's own signal mask (plus its own signal). A signal
 * the kernel delivered at the same moment as this one (the agent's sampling signal, say) has
 * its frame set up beneath this handler's and stays blocked while this handler runs: without
 * this, a 1-second spin here was, now and then, a spin with the agent's signal blocked and not
 * one sample on the alternate stack. */
static void on_alt_signal(int sig) {
    sigset_t mask = alt_thread_mask;
    sigaddset(&mask, sig);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    spin_with_rbp(alt_gap, alt_seconds);
}

/* Spins in a signal handler that runs on an alternate signal stack, rbp in an unmapped gap. */
JNIEXPORT jint JNICALL Java_Hardening_onAltStack(JNIEnv *env, jclass c, jint signal, jdouble seconds) {
    size_t size = 256 << 10;
    uintptr_t gap;
    char *stack = region_with_gap_below(size, &gap);
    if (!stack) return -1;
    alt_gap = (uintptr_t)stack + size + 4096 * 8;
    alt_seconds = seconds;
    stack_t ss = {.ss_sp = stack, .ss_size = size, .ss_flags = 0}, old;
    if (sigaltstack(&ss, &old) != 0) return -2;
    struct sigaction sa, prev;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alt_signal;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signal, &sa, &prev) != 0) return -3;
    pthread_sigmask(SIG_BLOCK, NULL, &alt_thread_mask);
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), signal);
    sigaction(signal, &prev, NULL);
    sigaltstack(&old, NULL);
    munmap(stack, size);
    return 0;
}

/* Makes a page of this thread's own stack (above sp, inside this frame) unreadable and spins
 * with rbp pointing into it. */
JNIEXPORT jint JNICALL Java_Hardening_guardPage(JNIEnv *env, jclass c, jdouble seconds) {
    volatile char area[3 * 4096];
    area[0] = 0;
    uintptr_t page = ((uintptr_t)&area[0] + 4095) & ~(uintptr_t)4095;
    if (mprotect((void *)page, 4096, PROT_NONE) != 0) return -1;
    spin_with_rbp(page + 64, seconds);
    mprotect((void *)page, 4096, PROT_READ | PROT_WRITE);
    return area[0];
}

JNIEXPORT jint JNICALL Java_Hardening_gettid(JNIEnv *env, jclass c) { return (jint)syscall(SYS_gettid); }
