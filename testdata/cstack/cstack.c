/* JNI functions whose time is spent in code without frame pointers or without frames: the
 * system zlib, libc's memcpy/memset, qsort (with a frameless comparator), malloc/free, and the
 * vDSO. Built by the tests with -O2 -fno-omit-frame-pointer, so that our own frames are as
 * friendly as they get and every frame an unwinder loses is lost in system code. Each function
 * does `reps` rounds of its work and does something after every call (no tail calls). */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define MIB (1024 * 1024)

static volatile uint64_t sink;

/* Compressible input: random words from a small vocabulary, so that deflate searches for
 * matches (longest_match, deflate_slow) rather than storing. */
static void fill_text(unsigned char *buf, size_t n) {
    static const char *words[] = {"native", "frame", "stack", "unwind", "sample", "thread",
                                  "java", "zlib", "pointer", "call", "return", "deflate"};
    uint64_t x = 0x2545f4914f6cdd1du;
    size_t i = 0;
    while (i < n) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for (const char *w = words[x % 12]; *w && i < n; w++) buf[i++] = (unsigned char)*w;
        if (i < n) buf[i++] = (x >> 8) % 5 ? ' ' : '\n';
    }
}

/* compress2 (level 6) of 2 MiB of text with the system libz, `reps` times. */
JNIEXPORT jlong JNICALL Java_Cstack_libz(JNIEnv *env, jclass cls, jint reps) {
    (void)env;
    (void)cls;
    static unsigned char *src, *dst;
    const uLong n = 2 * MIB, bound = compressBound(n);
    if (!src) {
        src = malloc(n);
        dst = malloc(bound);
        if (!src || !dst) return -1;
        fill_text(src, n);
    }
    uint64_t total = 0;
    for (int r = 0; r < reps; r++) {
        uLongf len = bound;
        if (compress2(dst, &len, src, n, 6) != Z_OK) return -1;
        total += len + dst[len / 2];
    }
    sink += total;
    return (jlong)total;
}

/* memcpy then memset of 64 MiB, `reps` times. */
JNIEXPORT jlong JNICALL Java_Cstack_memcpy(JNIEnv *env, jclass cls, jint reps) {
    (void)env;
    (void)cls;
    static unsigned char *a, *b;
    const size_t n = 64 * MIB;
    if (!a) {
        a = malloc(n);
        b = malloc(n);
        if (!a || !b) return -1;
        memset(a, 1, n);
        memset(b, 2, n);
    }
    uint64_t total = 0;
    for (int r = 0; r < reps; r++) {
        memcpy(b, a, n);
        total += b[r % n];
        memset(a, r & 0xff, n);
        total += a[n / 2];
    }
    sink += total;
    return (jlong)total;
}

/* The comparator: a leaf with no frame, called from inside libc's sort. */
static int cmp_int(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb;
    return (a > b) - (a < b);
}

/* qsort of 200,000 random ints, `reps` times. */
JNIEXPORT jlong JNICALL Java_Cstack_qsort(JNIEnv *env, jclass cls, jint reps) {
    (void)env;
    (void)cls;
    enum { N = 200000 };
    static int v[N];
    uint64_t x = 0x9e3779b97f4a7c15u, total = 0;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < N; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v[i] = (int)x;
        }
        qsort(v, N, sizeof v[0], cmp_int);
        total += (uint64_t)v[N / 2];
    }
    sink += total;
    return (jlong)total;
}

/* malloc/free churn: 200,000 allocations of 16 bytes to 32 KiB into 4,096 slots, `reps`
 * times; each allocation is written to, and replaces (frees) a random slot's block. */
JNIEXPORT jlong JNICALL Java_Cstack_malloc(JNIEnv *env, jclass cls, jint reps) {
    (void)env;
    (void)cls;
    enum { SLOTS = 4096 };
    static unsigned char *slot[SLOTS];
    uint64_t x = 0x853c49e6748fea9bu, total = 0;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < 200000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t size = 16 + (x >> 20) % (32 * 1024 - 16);
            unsigned char **s = &slot[x % SLOTS];
            free(*s);
            *s = malloc(size);
            if (!*s) return -1;
            (*s)[0] = (unsigned char)x;
            total += (*s)[0];
        }
    }
    sink += total;
    return (jlong)total;
}

/* clock_gettime(CLOCK_MONOTONIC), which the vDSO answers, 1,000,000 times per rep. */
JNIEXPORT jlong JNICALL Java_Cstack_vdso(JNIEnv *env, jclass cls, jint reps) {
    (void)env;
    (void)cls;
    uint64_t total = 0;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < 1000000; i++) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            total += (uint64_t)ts.tv_nsec;
        }
    }
    sink += total;
    return (jlong)total;
}

/* JNI upcalls: native code calling Java (JNIEnv's CallStaticLongMethod, through the VM's call
 * stub) `reps` times; Cstack.upcallWork burns the CPU in Java, under this frame. */
JNIEXPORT jlong JNICALL Java_Cstack_upcall(JNIEnv *env, jclass cls, jint reps) {
    static jmethodID work;
    if (!work) {
        work = (*env)->GetStaticMethodID(env, cls, "upcallWork", "(I)J");
        if (!work) return 0;
    }
    jlong total = 0;
    for (int r = 0; r < reps; r++) {
        total += (*env)->CallStaticLongMethod(env, cls, work, 200000);
        if ((*env)->ExceptionCheck(env)) return total;
    }
    sink += (uint64_t)total;
    return total;
}
