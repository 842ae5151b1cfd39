/* A program that has never heard of flightrec and wants SIGPROF for
 * itself. tests/signals.rs runs it under LD_PRELOAD with CPU sampling on.
 *
 *   sigprof abort-sigaction  burns 300 ms of CPU, installs (sigaction) a
 *                            SIGPROF handler that calls abort(), burns 700 ms
 *   sigprof abort-signal     the same with signal()
 *   sigprof block            blocks SIGPROF, then burns 1500 ms of CPU
 *
 * Prints "done CPU_NS" (its CPU time) and exits 0; any SIGPROF ends it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

static long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline __attribute__((always_inline)) void spin(long long ns) {
    long long end = cpu_ns() + ns;
    unsigned long x = 88172645463325252UL;
    while (cpu_ns() < end) {
        for (int i = 0; i < 100000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        sink = x;
    }
}

__attribute__((noinline)) void before_the_handler(void) { spin(300000000LL); }
__attribute__((noinline)) void after_the_handler(void) { spin(700000000LL); }
__attribute__((noinline)) void with_sigprof_blocked(void) { spin(1500000000LL); }

static void fatal(int sig) {
    (void)sig;
    abort();
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "block") == 0) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGPROF);
        if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return 2;
        with_sigprof_blocked();
    } else if (strncmp(mode, "abort-", 6) == 0) {
        before_the_handler();
        if (strcmp(mode, "abort-signal") == 0) {
            if (signal(SIGPROF, fatal) == SIG_ERR) return 2;
        } else {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = fatal;
            sigemptyset(&sa.sa_mask);
            if (sigaction(SIGPROF, &sa, NULL) != 0) return 2;
        }
        after_the_handler();
    } else {
        return 2;
    }
    printf("done %lld\n", cpu_ns());
    return 0;
}
