/*
 * What one sampling interrupt costs on this machine, before any profiler work: a thread runs a
 * fixed arithmetic loop while one kind of 1 ms signal source interrupts it, and the extra
 * thread CPU time over a run without one, divided by the signals, is the cost of one.
 *
 *   interrupt_cost MODE LOOPS
 *   MODE: none | cpu-timer (CLOCK_THREAD_CPUTIME_ID timer, tick-driven)
 *         | mono-timer (CLOCK_MONOTONIC timer at 1 ms, high resolution)
 *         | perf-nosignal (task-clock counter, 1 ms period, no signal)
 *         | perf-refresh-1 (task-clock counter, signal, refreshed for 1 overflow in the handler)
 *         | perf-refresh-16 (the same, refreshed once per 16 overflows, as the agent does)
 *         | perf-sigtrap (task-clock counter that raises SIGTRAP synchronously at each
 *           overflow, `attr.sigtrap`, Linux 5.13+: no re-arm and no interrupt-work IPI; not used
 *           by the agent, since SIGTRAP belongs to debuggers)
 * Prints: mode, CPU seconds, signals, ioctl microseconds per refresh. Exit 3: the mode is not
 * supported by this kernel.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PERIOD_NS 1000000L

static int counter_fd = -1;
static int refresh_overflows;
static volatile long signals, refreshes, refresh_ns;

static long clock_ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void on_signal(int sig, siginfo_t *info, void *uc) {
    (void)sig;
    (void)uc;
    signals++;
    if (counter_fd >= 0 && refresh_overflows > 0 && info->si_code == POLL_HUP) {
        long start = clock_ns(CLOCK_MONOTONIC);
        ioctl(counter_fd, PERF_EVENT_IOC_REFRESH, refresh_overflows);
        refresh_ns += clock_ns(CLOCK_MONOTONIC) - start;
        refreshes++;
    }
}

static void posix_timer(clockid_t clock, int sig) {
    timer_t timer;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = sig;
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    struct itimerspec spec = {{0, PERIOD_NS}, {0, PERIOD_NS}};
    if (timer_create(clock, &ev, &timer) != 0 || timer_settime(timer, 0, &spec, NULL) != 0) {
        perror("timer");
        exit(1);
    }
}

static void perf_counter(int sig, int with_signal, int sigtrap) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = PERIOD_NS;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    if (sigtrap) {
        attr.sigtrap = 1;
        attr.remove_on_exec = 1;
        attr.disabled = 0;
    }
    counter_fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (counter_fd < 0) {
        perror("perf_event_open");
        /* 3: this kernel cannot (sigtrap needs Linux 5.13), the script leaves the mode out. */
        exit(sigtrap ? 3 : 1);
    }
    if (sigtrap) {
        return;
    }
    if (!with_signal) {
        ioctl(counter_fd, PERF_EVENT_IOC_ENABLE, 0);
        return;
    }
    struct f_owner_ex owner = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
    if (fcntl(counter_fd, F_SETFL, O_ASYNC) != 0 || fcntl(counter_fd, F_SETSIG, sig) != 0 ||
        fcntl(counter_fd, F_SETOWN_EX, &owner) != 0) {
        perror("fcntl");
        exit(1);
    }
    ioctl(counter_fd, PERF_EVENT_IOC_REFRESH, refresh_overflows);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODE LOOPS\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long loops = atol(argv[2]);
    int sig = SIGRTMIN + 3;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(sig, &sa, NULL);
    if (strcmp(mode, "cpu-timer") == 0) {
        posix_timer(CLOCK_THREAD_CPUTIME_ID, sig);
    } else if (strcmp(mode, "mono-timer") == 0) {
        posix_timer(CLOCK_MONOTONIC, sig);
    } else if (strcmp(mode, "perf-nosignal") == 0) {
        perf_counter(sig, 0, 0);
    } else if (strcmp(mode, "perf-refresh-1") == 0) {
        refresh_overflows = 1;
        perf_counter(sig, 1, 0);
    } else if (strcmp(mode, "perf-refresh-16") == 0) {
        refresh_overflows = 16;
        perf_counter(sig, 1, 0);
    } else if (strcmp(mode, "perf-sigtrap") == 0) {
        sigaction(SIGTRAP, &sa, NULL);
        perf_counter(SIGTRAP, 1, 1);
    } else if (strcmp(mode, "none") != 0) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    long cpu_start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    volatile unsigned long x = 1;
    for (long i = 0; i < loops; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    }
    long cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    printf("%s %.4f %ld %.2f\n", mode, cpu_ns / 1e9, (long)signals,
           refreshes ? refresh_ns / 1e3 / refreshes : 0.0);
    return 0;
}
