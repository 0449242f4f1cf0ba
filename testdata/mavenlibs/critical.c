/* A small library of our own for an FFM critical downcall into a deleted file (issue 39):
 * built -O2 -fomit-frame-pointer, so that it has .eh_frame but no frame pointers, and its
 * frames can only be stepped out of with its unwind table. Three exported functions, each
 * called by the next, so that a walk crosses two frames of it before reaching Java:
 * crit_hash (the downcall) -> crit_rounds -> crit_mix (the leaf, most of the time). The
 * middle one keeps an array on its stack, so that its frame is not a bare return address. */
#include <stdint.h>

__attribute__((noinline)) uint64_t crit_mix(uint64_t x, const uint8_t *buf, int64_t len) {
    for (int64_t i = 0; i < len; i++) {
        x = (x ^ buf[i]) * 0x100000001b3ULL;
        x ^= x >> 29;
    }
    return x;
}

__attribute__((noinline)) uint64_t crit_rounds(uint64_t seed, const uint8_t *buf, int64_t len,
                                               int64_t rounds) {
    volatile uint64_t lanes[8];
    for (int i = 0; i < 8; i++) {
        lanes[i] = seed + (uint64_t)i;
    }
    for (int64_t r = 0; r < rounds; r++) {
        lanes[r & 7] = crit_mix(lanes[r & 7], buf, len);
    }
    uint64_t h = 0;
    for (int i = 0; i < 8; i++) {
        h ^= lanes[i];
    }
    return h;
}

uint64_t crit_hash(const uint8_t *buf, int64_t len, int64_t rounds) {
    return crit_rounds(0xcbf29ce484222325ULL, buf, len, rounds) + 1;
}
