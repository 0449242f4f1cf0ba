/* Junk signals from outside: sends SIGNAL to the threads of process PID COUNT times, spread over
 * MILLIS milliseconds, as signals no timer of the agent sent.
 *
 *   sigsender PID SIGNAL COUNT MILLIS
 *
 * Each signal goes to a random thread of PID (rt_tgsigqueueinfo), or to the process
 * (sigqueue, rt_sigqueueinfo), with si_code SI_QUEUE, SI_TIMER, SI_MESGQ or SI_ASYNCIO (the
 * codes a process may send; SI_TIMER with a random si_overrun) and an si_value that is a small
 * integer, a random number, an address inside a mapping of PID (its heap, stacks, libraries,
 * the agent's own data; aligned or not, near a mapping's end), a kernel address or a
 * non-canonical one. A thread that ended or a full signal queue is retried with another thread
 * or after a pause; the signal counts only once the kernel accepted it.
 *
 * PID must be the sender's parent (the stress program starts it): the sender stops as soon as
 * its parent is gone, so that it never signals a process that took over the pid.
 *
 * Prints "SENDER sent=N thread=N process=N retried=N code[QUEUE,TIMER,MESGQ,ASYNCIO]=a,b,c,d
 * value[small,random,mapped,kernel,noncanonical]=a,b,c,d,e" and exits 0 once COUNT signals
 * are sent; exits 1 if PID is gone first (or on a usage error). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_TIDS 65536
#define MAX_MAPS 16384

static pid_t target;
static pid_t tids[MAX_TIDS];
static int ntids;
static struct {
    uint64_t start, end;
} maps[MAX_MAPS];
static int nmaps;
static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_until(uint64_t ns) {
    uint64_t t = now_ns();
    if (ns <= t) return;
    struct timespec d = {(time_t)((ns - t) / 1000000000u), (long)((ns - t) % 1000000000u)};
    nanosleep(&d, NULL);
}

/* The threads of the target, from /proc/PID/task. 0 if the process is gone. */
static int read_tids(void) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)target);
    DIR *d = opendir(path);
    if (!d) return 0;
    ntids = 0;
    struct dirent *e;
    while ((e = readdir(d)) && ntids < MAX_TIDS) {
        int tid = atoi(e->d_name);
        if (tid > 0) tids[ntids++] = tid;
    }
    closedir(d);
    return ntids;
}

/* The target's mappings, from /proc/PID/maps. */
static void read_maps(void) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)target);
    FILE *f = fopen(path, "r");
    if (!f) return;
    nmaps = 0;
    while (fgets(line, sizeof line, f) && nmaps < MAX_MAPS) {
        unsigned long long s, e;
        if (sscanf(line, "%llx-%llx", &s, &e) == 2 && e > s) {
            maps[nmaps].start = s;
            maps[nmaps].end = e;
            nmaps++;
        }
    }
    fclose(f);
}

enum { V_SMALL, V_RANDOM, V_MAPPED, V_KERNEL, V_NONCANONICAL, V_KINDS };

static uint64_t junk_value(int kind) {
    switch (kind) {
    case V_SMALL:
        return 1 + next() % 4096;
    case V_RANDOM:
        return next();
    case V_MAPPED: {
        if (nmaps == 0) return next();
        uint64_t r = next();
        int m = (int)(r % (uint64_t)nmaps);
        uint64_t size = maps[m].end - maps[m].start;
        switch ((r >> 32) % 4) {
        case 0: return maps[m].start; /* a mapping's first byte */
        case 1: return maps[m].end - 8 - (next() % 64); /* just before its end */
        case 2: return maps[m].start + (next() % size & ~(uint64_t)7); /* aligned */
        default: return maps[m].start + next() % size; /* anywhere */
        }
    }
    case V_KERNEL:
        return 0xffffffff80000000u + (next() % 0x40000000u);
    default:
        return 0x0000800000000000u | (next() & 0x00007fffffffffffu) | (next() << 48);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: sigsender PID SIGNAL COUNT MILLIS\n");
        return 1;
    }
    target = (pid_t)atoi(argv[1]);
    int sig = atoi(argv[2]);
    long count = atol(argv[3]);
    long millis = atol(argv[4]);
    if (target <= 0 || sig <= 0 || count <= 0 || millis < 0) {
        fprintf(stderr, "sigsender: bad arguments\n");
        return 1;
    }
    /* Killed with the thread that started us; and that was PID, not someone since gone. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != target) {
        fprintf(stderr, "sigsender: %d is not the parent of the sender\n", (int)target);
        return 1;
    }
    rng ^= (uint64_t)getpid() << 32 ^ now_ns();
    static const int codes[] = {SI_QUEUE, SI_TIMER, SI_MESGQ, SI_ASYNCIO};
    long by_code[4] = {0}, by_value[V_KINDS] = {0};
    long sent = 0, to_thread = 0, to_process = 0, retried = 0, attempts = 0;
    uint64_t start = now_ns(), span = (uint64_t)millis * 1000000u;
    while (sent < count) {
        if (getppid() != target) break;
        if (attempts % 64 == 0 && !read_tids()) break;
        if (attempts % 1024 == 0) read_maps();
        attempts++;
        sleep_until(start + span / (uint64_t)count * (uint64_t)sent);
        int c = (int)(next() % 4), v = (int)(next() % V_KINDS), how = (int)(next() % 8);
        uint64_t value = junk_value(v);
        siginfo_t info;
        memset(&info, 0, sizeof info);
        info.si_signo = sig;
        info.si_code = codes[c];
        if (codes[c] == SI_TIMER) {
            info.si_timerid = (int)(next() % 64);
            /* si_overrun: none, a few, huge, negative */
            static const int overruns[] = {0, 1, 7, 1 << 30, 0x7fffffff, -1, -100000};
            info.si_overrun = overruns[next() % 7];
        } else {
            info.si_pid = getpid();
            info.si_uid = getuid();
        }
        info.si_value.sival_ptr = (void *)(uintptr_t)value;
        long rc;
        if (how == 0) {
            rc = sigqueue(target, sig, info.si_value); /* process-directed, SI_QUEUE */
            c = 0;
        } else if (how == 1) {
            rc = syscall(SYS_rt_sigqueueinfo, target, sig, &info); /* process-directed */
        } else {
            pid_t tid = tids[next() % (uint64_t)ntids];
            rc = syscall(SYS_rt_tgsigqueueinfo, target, tid, sig, &info);
        }
        if (rc == 0) {
            sent++;
            by_code[c]++;
            by_value[v]++;
            if (how < 2) to_process++;
            else to_thread++;
        } else if (errno == ESRCH) {
            retried++; /* the thread ended, or the process: read_tids tells */
            if (!read_tids()) break;
        } else if (errno == EAGAIN) {
            retried++; /* the target's queue of pending signals is full */
            struct timespec d = {0, 1000000};
            nanosleep(&d, NULL);
        } else {
            fprintf(stderr, "sigsender: sending signal %d to %d: %s\n", sig, (int)target,
                    strerror(errno));
            return 1;
        }
    }
    printf("SENDER sent=%ld thread=%ld process=%ld retried=%ld "
           "code[QUEUE,TIMER,MESGQ,ASYNCIO]=%ld,%ld,%ld,%ld "
           "value[small,random,mapped,kernel,noncanonical]=%ld,%ld,%ld,%ld,%ld\n",
           sent, to_thread, to_process, retried, by_code[0], by_code[1], by_code[2], by_code[3],
           by_value[0], by_value[1], by_value[2], by_value[3], by_value[4]);
    return sent == count ? 0 : 1;
}
