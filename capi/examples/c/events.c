/*
 * flightrec from C: several threads commit two typed event types while the
 * CPU sampler profiles them.
 *
 *   cc -O1 -g -I capi/include capi/examples/c/events.c -L target/release \
 *      -lflightrec -Wl,-rpath,$PWD/target/release -lpthread -o events_c
 *   ./events_c /tmp/c.jfr 4 20000
 *   jfr summary /tmp/c.jfr
 *   jfr view cpu-time-hot-methods /tmp/c.jfr     # crunch_numbers on top
 *
 * Prints one JSON line with the number of events of each type it committed.
 * Every value is a function of (worker, i), so a reader can check each one:
 *   com.example.c.Request: method = METHODS[i % 3], status = 200 + i % 5,
 *                          bytes = i * 16 + worker, a duration event;
 *   com.example.c.Tick:    worker, seq = i, ratio = i / 1000.0,
 *                          even = (i % 2 == 0), thread = the committing one.
 */
#include <flightrec.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const METHODS[] = {"GET", "PUT", "DELETE"};

static flightrec_event_type request_type;
static flightrec_event_type tick_type;
static long events_per_thread;
static volatile double sink;

#define CHECK(call)                                                                    \
    do {                                                                               \
        int rc_ = (call);                                                              \
        if (rc_ != FLIGHTREC_OK) {                                                     \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, flightrec_status_name(rc_), \
                    flightrec_last_error());                                           \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* The CPU-heavy part of each request: what the profile should show. */
__attribute__((noinline)) static double crunch_numbers(long n) {
    double x = 1.0;
    for (long k = 1; k <= n; k++) x += 1.0 / ((double)k * (double)k + x);
    return x;
}

static void *worker(void *arg) {
    long w = (long)arg;
    for (long i = 0; i < events_per_thread; i++) {
        int64_t start = flightrec_ticks();
        sink = crunch_numbers(2000);
        flightrec_value request[] = {
            FLIGHTREC_STR(METHODS[i % 3]),
            FLIGHTREC_UINT(200 + i % 5),
            FLIGHTREC_INT(i * 16 + w),
        };
        CHECK(flightrec_commit_span(request_type, start, flightrec_ticks(), request, 3));
        flightrec_value tick[] = {
            FLIGHTREC_INT(w),
            FLIGHTREC_INT(i),
            FLIGHTREC_F64((double)i / 1000.0),
            FLIGHTREC_BOOL(i % 2 == 0),
            FLIGHTREC_CURRENT_THREAD,
        };
        CHECK(flightrec_commit(tick_type, tick, 5));
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s OUT.jfr THREADS EVENTS_PER_THREAD\n", argv[0]);
        return 2;
    }
    if (flightrec_version() >> 16 != FLIGHTREC_VERSION_MAJOR) {
        fprintf(stderr, "libflightrec ABI %u, header %d\n", flightrec_version() >> 16,
                FLIGHTREC_VERSION_MAJOR);
        return 1;
    }
    long threads = atol(argv[2]);
    events_per_thread = atol(argv[3]);

    flightrec_field request_fields[] = {
        {"method", FLIGHTREC_KIND_STRING, FLIGHTREC_CONTENT_NONE, "Method"},
        {"status", FLIGHTREC_KIND_U16, FLIGHTREC_CONTENT_NONE, "Status"},
        {"bytes", FLIGHTREC_KIND_I64, FLIGHTREC_CONTENT_BYTES, "Response Size"},
    };
    flightrec_event_desc request = {
        .name = "com.example.c.Request",
        .label = "Request",
        .description = "One request served by a C worker",
        .category = "Example/C",
        .flags = FLIGHTREC_EVENT_DURATION,
        .fields = request_fields,
        .field_count = 3,
    };
    CHECK(flightrec_register(&request, &request_type));
    flightrec_field tick_fields[] = {
        {"worker", FLIGHTREC_KIND_I32, FLIGHTREC_CONTENT_NONE, "Worker"},
        {"seq", FLIGHTREC_KIND_I64, FLIGHTREC_CONTENT_NONE, "Sequence"},
        {"ratio", FLIGHTREC_KIND_F64, FLIGHTREC_CONTENT_NONE, "Ratio"},
        {"even", FLIGHTREC_KIND_BOOL, FLIGHTREC_CONTENT_NONE, "Even"},
        {"worker_thread", FLIGHTREC_KIND_THREAD, FLIGHTREC_CONTENT_NONE, "Worker Thread"},
    };
    flightrec_event_desc tick = {
        .name = "com.example.c.Tick",
        .label = "Tick",
        .category = "Example/C",
        .fields = tick_fields,
        .field_count = 5,
    };
    CHECK(flightrec_register(&tick, &tick_type));

    char options[4096];
    snprintf(options, sizeof options,
             "filename=%s,settings=profile,jdk.CPUTimeSample#throttle=5ms", argv[1]);
    CHECK(flightrec_start(options));

    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    for (long w = 0; w < threads; w++) pthread_create(&ids[w], NULL, worker, (void *)w);
    for (long w = 0; w < threads; w++) pthread_join(ids[w], NULL);
    free(ids);

    CHECK(flightrec_stop());
    long n = threads * events_per_thread;
    printf("{\"counts\": {\"com.example.c.Request\": %ld, \"com.example.c.Tick\": %ld}}\n", n, n);
    return 0;
}
