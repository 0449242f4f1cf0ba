/* The small library the stress program dlopens and dlcloses in a loop (built as several copies,
 * libchurn0.so ... , each with its own COPY). A thread-local variable makes every dlopen and
 * dlclose change the TLS layout as well as the mappings; churn_work burns a few tens of
 * microseconds, so that samples land in code that is about to be unmapped. */
#ifndef COPY
#define COPY 0
#endif

static __thread unsigned tls_counter;
static unsigned table[64] = {COPY};

int churn_work(int seed) {
    volatile unsigned x = (unsigned)seed + COPY;
    for (int i = 0; i < 20000; i++) x = x * 1103515245u + 12345u + table[i & 63];
    tls_counter += x & 1;
    return (int)(x + tls_counter);
}
