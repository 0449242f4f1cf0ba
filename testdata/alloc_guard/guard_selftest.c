/*
 * Self-test of alloc_guard.so: installs a handler for signal ALLOC_GUARD_SIGNAL the way the agent
 * does (SA_SIGINFO | SA_RESTART, empty mask, no SA_NODEFER), makes the allocator call named by
 * argv[1] once outside the handler and once inside it, raises the signal and exits 0 if the
 * handler ran. Mode "none": the handler calls nothing (the allocation is made outside only).
 * Under LD_PRELOAD=alloc_guard.so the guard must count exactly one allocation inside the handler
 * for every mode but "none", and zero for "none".
 * Usage: ALLOC_GUARD_SIGNAL=N guard_selftest none|malloc|calloc|realloc|reallocarray|free|
 *        memalign|posix_memalign|aligned_alloc|valloc|pvalloc
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *mode;
static void *volatile sink;
static volatile sig_atomic_t handler_ran;

/* One call of the allocator function named by `mode` (frees `sink` in mode "free"). */
static void allocate(void) {
    void *p = NULL;
    if (strcmp(mode, "none") == 0 || strcmp(mode, "malloc") == 0) {
        p = malloc(24);
    } else if (strcmp(mode, "calloc") == 0) {
        p = calloc(3, 8);
    } else if (strcmp(mode, "realloc") == 0) {
        p = realloc(NULL, 24);
    } else if (strcmp(mode, "reallocarray") == 0) {
        p = reallocarray(NULL, 3, 8);
    } else if (strcmp(mode, "free") == 0) {
        free(sink);
    } else if (strcmp(mode, "memalign") == 0) {
        p = memalign(64, 24);
    } else if (strcmp(mode, "posix_memalign") == 0) {
        if (posix_memalign(&p, 64, 24) != 0) p = NULL;
    } else if (strcmp(mode, "aligned_alloc") == 0) {
        p = aligned_alloc(64, 64);
    } else if (strcmp(mode, "valloc") == 0) {
        p = valloc(24);
    } else if (strcmp(mode, "pvalloc") == 0) {
        p = pvalloc(24);
    }
    sink = p;
}

static void on_signal(int sig, siginfo_t *info, void *uc) {
    (void)sig;
    (void)info;
    (void)uc;
    handler_ran = 1;
    if (strcmp(mode, "none") != 0) allocate();
}

int main(int argc, char **argv) {
    const char *sig_text = getenv("ALLOC_GUARD_SIGNAL");
    if (argc != 2 || sig_text == NULL) {
        fprintf(stderr, "usage: ALLOC_GUARD_SIGNAL=N guard_selftest MODE\n");
        return 2;
    }
    mode = argv[1];
    int sig = atoi(sig_text);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(sig, &action, NULL) != 0) {
        perror("sigaction");
        return 1;
    }
    allocate(); /* outside the handler: must not count */
    if (raise(sig) != 0) {
        perror("raise");
        return 1;
    }
    if (!handler_ran) {
        fprintf(stderr, "guard_selftest: the handler did not run\n");
        return 1;
    }
    printf("guard_selftest: %s: handler ran\n", mode);
    return 0;
}
