/*
 * The JNI library of `jfrnative demo`: three hot paths in native code, one per kind of code a
 * Java profiler usually cannot see into.
 *   checksum: our own C,
 *   compress: zlib's deflate (Debian's libz has no frame pointers: only its call-frame
 *             information gives its callers),
 *   sort:     libc's qsort calling back into a C comparator.
 */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define BLOCK_BYTES (256 * 1024)

static uint8_t block[BLOCK_BYTES];

static void fill_block(uint32_t seed) {
    /* Text-like data: compressible, but not trivially. */
    static const char words[] = "native frames in java flight recorder cpu time profiles ";
    uint32_t x = seed | 1;
    for (size_t i = 0; i < BLOCK_BYTES; i++) {
        x = x * 1103515245u + 12345u;
        block[i] = (x >> 28) == 0 ? (uint8_t)(x >> 16) : (uint8_t)words[(i + (x >> 29)) % (sizeof words - 1)];
    }
}

__attribute__((noinline)) static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ull;
    return h ^ (h >> 29);
}

__attribute__((noinline)) static uint64_t checksum_block(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        h = mix(h, v);
    }
    return h;
}

JNIEXPORT jlong JNICALL Java_JfrNativeDemo_checksum(JNIEnv *env, jclass cls, jint rounds) {
    uint64_t h = 0;
    for (jint r = 0; r < rounds; r++) {
        h += checksum_block(block, BLOCK_BYTES);
    }
    return (jlong)h;
}

JNIEXPORT jlong JNICALL Java_JfrNativeDemo_compress(JNIEnv *env, jclass cls, jint rounds) {
    static uint8_t out[BLOCK_BYTES + BLOCK_BYTES / 8 + 64];
    jlong total = 0;
    for (jint r = 0; r < rounds; r++) {
        uLongf out_len = sizeof out;
        if (compress2(out, &out_len, block, BLOCK_BYTES, 6) != Z_OK) {
            return -1;
        }
        total += (jlong)out_len;
    }
    return total;
}

__attribute__((noinline)) static int compare_keys(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

JNIEXPORT jlong JNICALL Java_JfrNativeDemo_sort(JNIEnv *env, jclass cls, jint rounds) {
    enum { N = 64 * 1024 };
    static uint32_t keys[N];
    jlong first = 0;
    for (jint r = 0; r < rounds; r++) {
        memcpy(keys, block, sizeof keys);
        qsort(keys, N, sizeof keys[0], compare_keys);
        first += keys[0];
    }
    return first;
}

JNIEXPORT void JNICALL Java_JfrNativeDemo_prepare(JNIEnv *env, jclass cls, jint seed) {
    fill_block((uint32_t)seed);
}
