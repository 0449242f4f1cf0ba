/* dlopen/dlclose churn for the agent's memory test. Java_DlChurn_churn loads a small library,
 * calls into it and unloads it, over and over for the given wall time. Each load is of a fresh
 * copy of the library (a new file, so a new inode, under one of COPIES names in turn), as
 * loaders that extract a library to a temporary file before loading it do; and before each
 * load an anonymous placeholder of varying size is reserved, so that the library lands at
 * varying base addresses (as in a process that maps and unmaps other things between loads). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define COPIES 256

static volatile uint64_t sink;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Writes `len` bytes of `data` to a new file at `path` (replacing any). 0 on success. */
static int write_copy(const char *path, const char *data, size_t len) {
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0755);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return close(fd);
}

/* Loads fresh copies of `library` (written into `dir`) for `ns` of wall time; returns the
 * number of load/unload cycles, or -1 on an error. The copies are removed at the end. */
JNIEXPORT jlong JNICALL Java_DlChurn_churn(JNIEnv *env, jclass cls, jstring jlibrary,
                                           jstring jdir, jlong ns) {
    (void)cls;
    const char *library = (*env)->GetStringUTFChars(env, jlibrary, NULL);
    const char *dir = (*env)->GetStringUTFChars(env, jdir, NULL);
    if (!library || !dir) return -1;
    static char image[1 << 20];
    size_t len = 0;
    FILE *f = fopen(library, "rb");
    if (f) {
        len = fread(image, 1, sizeof image, f);
        fclose(f);
    }
    jlong cycles = len > 0 ? 0 : -1;
    char path[4096];
    int64_t end = now_ns() + ns;
    while (cycles >= 0 && now_ns() < end) {
        snprintf(path, sizeof path, "%s/libchurn-%d.so", dir, (int)(cycles % COPIES));
        if (write_copy(path, image, len) != 0) {
            cycles = -1;
            break;
        }
        size_t placeholder_len = (size_t)(1 + cycles % 13) << 16;
        void *placeholder =
            mmap(NULL, placeholder_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            cycles = -1;
            break;
        }
        uint64_t (*work)(uint64_t) = (uint64_t(*)(uint64_t))dlsym(lib, "churn_work");
        if (work) sink += work(20000);
        dlclose(lib);
        if (placeholder != MAP_FAILED) munmap(placeholder, placeholder_len);
        cycles++;
    }
    for (int i = 0; i < COPIES; i++) {
        snprintf(path, sizeof path, "%s/libchurn-%d.so", dir, i);
        unlink(path);
    }
    (*env)->ReleaseStringUTFChars(env, jlibrary, library);
    (*env)->ReleaseStringUTFChars(env, jdir, dir);
    return cycles;
}
