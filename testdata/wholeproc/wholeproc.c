/* The JNI side of WholeProcess: pthreads of the library's own, started after the JVM is up,
 * named with prctl, compressing with zlib; and many short-lived pthreads. */
#include <jni.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <zlib.h>

#define MAX_WORKERS 8

struct worker {
    pthread_t thread;
    int index;
    double seconds;
    long long start_epoch_ns;
    long long cpu_ns;
    unsigned long compressed;
};

static struct worker workers[MAX_WORKERS];
static int worker_count;

static long long clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Kept out of line, so that it is a frame of its own in every sample. */
__attribute__((noinline)) static unsigned long compress_block(unsigned char *in, size_t n,
                                                             unsigned char *out, uLongf room) {
    uLongf size = room;
    compress2(out, &size, in, n, 6);
    return size;
}

static void *work(void *arg) {
    struct worker *w = arg;
    char name[16];
    snprintf(name, sizeof name, "zlib-worker-%d", w->index);
    prctl(PR_SET_NAME, name, 0, 0, 0);
    w->start_epoch_ns = clock_ns(CLOCK_REALTIME);
    size_t n = 256 * 1024;
    unsigned char *in = malloc(n);
    uLongf room = compressBound(n);
    unsigned char *out = malloc(room);
    unsigned int x = 12345 + w->index;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245 + 12345;
        in[i] = (unsigned char)((x >> 16) % 24 + 'a');
    }
    long long end = clock_ns(CLOCK_MONOTONIC) + (long long)(w->seconds * 1e9);
    while (clock_ns(CLOCK_MONOTONIC) < end) {
        w->compressed += compress_block(in, n, out, room);
    }
    w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    free(in);
    free(out);
    return NULL;
}

JNIEXPORT void JNICALL Java_WholeProcess_startWorkers(JNIEnv *env, jclass cls, jint count,
                                                      jdouble seconds) {
    worker_count = count > MAX_WORKERS ? MAX_WORKERS : count;
    for (int i = 0; i < worker_count; i++) {
        workers[i].index = i;
        workers[i].seconds = seconds;
        pthread_create(&workers[i].thread, NULL, work, &workers[i]);
    }
}

JNIEXPORT jstring JNICALL Java_WholeProcess_joinWorkers(JNIEnv *env, jclass cls) {
    char text[1024] = "";
    size_t used = 0;
    for (int i = 0; i < worker_count; i++) {
        pthread_join(workers[i].thread, NULL);
        used += snprintf(text + used, sizeof text - used, "WORKER\tzlib-worker-%d\t%lld\t%lld\n",
                         i, workers[i].start_epoch_ns, workers[i].cpu_ns);
    }
    return (*env)->NewStringUTF(env, text);
}

static void *short_life(void *arg) {
    volatile unsigned long x = (unsigned long)arg;
    for (int i = 0; i < 200000; i++) {
        x = x * 2862933555777941757UL + 3037000493UL;
    }
    return NULL;
}

JNIEXPORT jint JNICALL Java_WholeProcess_churn(JNIEnv *env, jclass cls, jint count) {
    int done = 0;
    while (done < count) {
        pthread_t batch[8];
        int n = 0;
        for (; n < 8 && done + n < count; n++) {
            pthread_create(&batch[n], NULL, short_life, (void *)(unsigned long)n);
        }
        for (int i = 0; i < n; i++) {
            pthread_join(batch[i], NULL);
        }
        done += n;
    }
    return done;
}
