/* The JNI workload of testdata/maven-api: two hot native functions with names no library has,
 * called from Java through one JNI method each (io.jfrnative.it.Workload). */
#include <jni.h>
#include <stdint.h>

/* Spins for `rounds` rounds of an LCG: the Java API test's hot function. */
__attribute__((noinline, visibility("default"))) uint64_t jfrnative_api_spin(uint64_t rounds) {
    volatile uint64_t x = 88172645463325252ULL;
    for (uint64_t i = 0; i < rounds; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    }
    return x;
}

/* FNV-1a over `n` bytes of a generated buffer, `rounds` times: the JMH benchmark's hot function. */
__attribute__((noinline, visibility("default"))) uint64_t jfrnative_jmh_hash(uint64_t seed, int rounds) {
    uint64_t h = 14695981039346656037ULL ^ seed;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 4096; i++) {
            h ^= (uint8_t)(i + r);
            h *= 1099511628211ULL;
        }
    }
    return h;
}

JNIEXPORT jlong JNICALL Java_io_jfrnative_it_Workload_spin(JNIEnv *env, jclass cls, jlong rounds) {
    (void)env;
    (void)cls;
    return (jlong)jfrnative_api_spin((uint64_t)rounds);
}

JNIEXPORT jlong JNICALL Java_io_jfrnative_it_Workload_hash(JNIEnv *env, jclass cls, jlong seed, jint rounds) {
    (void)env;
    (void)cls;
    return (jlong)jfrnative_jmh_hash((uint64_t)seed, rounds);
}
