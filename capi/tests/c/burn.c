/* A program that has never heard of flightrec: no include, no link. Burns
 * CPU in spin_the_wheel (about 20x more than in idle_a_bit), prints one
 * line and exits with status 3 (from main's return, or with exit() when
 * given a second argument). tests/preload.rs runs it under LD_PRELOAD. */
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

__attribute__((noinline)) double spin_the_wheel(long n) {
    double x = 0;
    for (long i = 0; i < n; i++) x += (double)(i % 7) * 1.000001;
    return x;
}

__attribute__((noinline)) double idle_a_bit(long n) {
    double x = 0;
    for (long i = 0; i < n / 20; i++) x += (double)(i % 3);
    return x;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 400000000L;
    sink = spin_the_wheel(n) + idle_a_bit(n);
    printf("burned %ld\n", n);
    fflush(stdout);
    if (argc > 2) exit(3);
    return 3;
}
