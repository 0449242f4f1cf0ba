/* The library the dlchurn workload loads and unloads over and over: one function that does a
 * little work, so that samples land in it while it is mapped (and its unwind table is used).
 * Built by the tests with -O2 (call-frame information in .eh_frame, no frame pointers). */
#include <stdint.h>

uint64_t churn_work(uint64_t n) {
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}
