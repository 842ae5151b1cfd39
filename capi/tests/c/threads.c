/* A program that has never heard of flightrec, creating threads after it
 * started: after a pause, one long thread burns CPU in long_burn while
 * SHORT threads, one after another, each burn SHORT_MS ms of their own CPU
 * in short_burn and exit. Prints its threads' CPU time and kernel ids:
 *   pid=P long_tid=T long_cpu_ns=N short_cpu_ns=N
 *   short_tids=T,T,...
 * tests/preload.rs runs it under LD_PRELOAD (linked with -lpthread). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SHORT 300
#define SHORT_MS 3

static volatile int stop;
static volatile unsigned long sink;

static long long thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct result {
    long long cpu_ns;
    pid_t tid;
};

/* Spins until `done` says so; returns the thread's CPU time. */
__attribute__((noinline)) static long long spin(int (*done)(long long)) {
    unsigned long x = 1;
    for (;;) {
        for (int i = 0; i < 1000; i++) x = x * 6364136223846793005UL + 1;
        sink = x;
        long long cpu = thread_cpu_ns();
        if (done(cpu)) return cpu;
    }
}

static int short_done(long long cpu) { return cpu >= SHORT_MS * 1000000LL; }
static int long_done(long long cpu) { (void)cpu; return stop; }

__attribute__((noinline)) void *short_burn(void *arg) {
    struct result *r = arg;
    r->tid = gettid();
    r->cpu_ns = spin(short_done);
    return NULL;
}

__attribute__((noinline)) void *long_burn(void *arg) {
    struct result *r = arg;
    r->tid = gettid();
    r->cpu_ns = spin(long_done);
    return NULL;
}

int main(void) {
    /* The recording (started before main) has its sampler running. */
    usleep(300 * 1000);
    struct result lr = {0, 0};
    static struct result sr[SHORT];
    pthread_t lt;
    if (pthread_create(&lt, NULL, long_burn, &lr) != 0) return 1;
    long long short_cpu = 0;
    for (int i = 0; i < SHORT; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_burn, &sr[i]) != 0) return 1;
        pthread_join(t, NULL);
        short_cpu += sr[i].cpu_ns;
    }
    stop = 1;
    pthread_join(lt, NULL);
    printf("pid=%d long_tid=%d long_cpu_ns=%lld short_cpu_ns=%lld\nshort_tids=", (int)getpid(),
           (int)lr.tid, lr.cpu_ns, short_cpu);
    for (int i = 0; i < SHORT; i++) printf(i ? ",%d" : "%d", (int)sr[i].tid);
    printf("\n");
    return 0;
}
