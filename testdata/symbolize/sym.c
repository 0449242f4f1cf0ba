/*
 * Test library for the symbolizer: known functions, an inline chain, a function that ends in a
 * call (its return address is the next function's first byte), static functions that only
 * .symtab names, and an IFUNC. Built by the tests with and without -g, stripped, with separate
 * debug files, and with compressed DWARF.
 */
#include <stdlib.h>

volatile long sym_sink;

__attribute__((noinline)) long sym_leaf(long n) {
    long x = 1;
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005L + 1442695040888963407L;
    }
    sym_sink += x;
    return x;
}

static inline __attribute__((always_inline)) long sym_inner(long n) {
    long a = sym_leaf(n);
    sym_sink += a * 3;
    return a;
}

static inline __attribute__((always_inline)) long sym_middle(long n) {
    long b = sym_inner(n + 1);
    sym_sink ^= b;
    return b;
}

__attribute__((noinline)) long sym_outer(long n) {
    long c = sym_middle(n);
    sym_sink += c;
    return c + 1;
}

__attribute__((noinline, noreturn)) void sym_die(long code) {
    sym_sink = code;
    exit((int)code);
}

/* Ends with a call to a noreturn function: nothing follows the call, so its return address is
 * the first byte of whatever the linker placed next. */
__attribute__((noinline)) void sym_ends_in_call(long n) {
    sym_sink += sym_leaf(n);
    sym_die(n);
}

__attribute__((noinline)) long sym_after_call(long n) {
    return sym_leaf(n) + 7;
}

/* Local: in .symtab, never in .dynsym. */
__attribute__((noinline)) static long sym_hidden(long n) {
    long y = 0;
    for (long i = 0; i < n; i++) {
        y += i * i;
    }
    sym_sink += y;
    return y;
}

__attribute__((noinline)) long sym_calls_hidden(long n) {
    return sym_hidden(n) + 1;
}

/* IFUNC: the exported symbol sym_picked is resolved at load time to one of two local
 * implementations. */
__attribute__((noinline)) static long sym_impl_a(long n) {
    return sym_leaf(n) + 1;
}

__attribute__((noinline)) static long sym_impl_b(long n) {
    return sym_leaf(n) + 2;
}

static void *sym_pick(void) {
    return getenv("SYM_PICK_B") ? (void *)sym_impl_b : (void *)sym_impl_a;
}

long sym_picked(long n) __attribute__((ifunc("sym_pick")));
