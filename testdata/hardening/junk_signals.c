/*
 * Sends COUNT signals SIGNAL to every thread of process PID with rt_tgsigqueueinfo, as another
 * process could: si_code SI_QUEUE, SI_TIMER, SI_MESGQ and SI_ASYNCIO in turn, si_value small
 * integers, random numbers and addresses (of the target's stack region, 0x7f..., and 8).
 * Usage: junk_signals PID SIGNAL COUNT. Prints "sent N".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: junk_signals PID SIGNAL COUNT\n");
        return 2;
    }
    int pid = atoi(argv[1]), sig = atoi(argv[2]);
    long count = atol(argv[3]);
    int tids[4096], n = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d) return 1;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096)
        if (e->d_name[0] != '.') tids[n++] = atoi(e->d_name);
    closedir(d);
    const int codes[] = {SI_QUEUE, SI_TIMER, SI_MESGQ, SI_ASYNCIO};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    long sent = 0;
    for (long i = 0; i < count; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        siginfo_t info;
        memset(&info, 0, sizeof info);
        info.si_signo = sig;
        info.si_code = codes[i % 4];
        info.si_pid = getpid();
        info.si_uid = getuid();
        uintptr_t values[] = {(uintptr_t)(i % 16), (uintptr_t)x, (uintptr_t)(0x7f0000000000ull + (x & 0xffffffff8ull)), 8};
        info.si_value.sival_ptr = (void *)values[(i / 4) % 4];
        int tid = tids[i % n];
        if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, &info) == 0) sent++;
        if (i % 64 == 0) usleep(200);
    }
    printf("sent %ld\n", sent);
    return 0;
}
