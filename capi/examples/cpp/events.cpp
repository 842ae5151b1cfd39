/*
 * flightrec from C++: several threads commit typed events through the
 * header-only wrapper (RAII recording, typed event types, scoped duration
 * events) while the CPU sampler profiles them.
 *
 *   c++ -std=c++17 -O1 -g -I capi/include capi/examples/cpp/events.cpp -L target/release \
 *       -lflightrec -Wl,-rpath,$PWD/target/release -lpthread -o events_cpp
 *   ./events_cpp /tmp/cpp.jfr 4 20000
 *   jfr view cpu-time-hot-methods /tmp/cpp.jfr   # pricing::Model::evaluate on top
 *
 * Prints one JSON line with the number of events of each type it committed.
 * Every value is a function of (worker, i):
 *   com.example.cpp.Order (scoped duration): symbol = SYMBOLS[i % 4],
 *       quantity = i * 8 + worker, price = 100 + i % 50 (then updated to
 *       price + 0.25 before the scope ends);
 *   com.example.cpp.Fill (instant): order = i * 8 + worker (unsigned),
 *       partial = (i % 3 == 0), thread = the committing one.
 */
#include <flightrec.hpp>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr std::string_view SYMBOLS[] = {"ACME", "INITECH", "HOOLI", "UMBRELLA"};
volatile double sink;

}  // namespace

namespace pricing {

class Model {
public:
    // The CPU-heavy part of each order: what the profile should show.
    __attribute__((noinline)) double evaluate(long n) const {
        double x = 1.0;
        for (long k = 1; k <= n; k++) x += 1.0 / (static_cast<double>(k) * 3.0 + x);
        return x;
    }
};

}  // namespace pricing

using Order = flightrec::event_type<std::string_view, int64_t, double>;
using Fill = flightrec::event_type<uint32_t, bool, flightrec::current_thread_t>;

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s OUT.jfr THREADS EVENTS_PER_THREAD\n", argv[0]);
        return 2;
    }
    const long threads = std::atol(argv[2]);
    const long events = std::atol(argv[3]);
    try {
        const Order order("com.example.cpp.Order",
                          {{{"symbol", "Symbol"}, {"quantity", "Quantity"}, {"price", "Price"}}},
                          flightrec::type_options().label("Order").category("Example/C++").duration());
        const Fill fill("com.example.cpp.Fill",
                        {{{"order", "Order"}, {"partial", "Partial"}, {"trader", "Trader"}}},
                        flightrec::type_options().label("Fill").category("Example/C++"));
        flightrec::recording rec(std::string("filename=") + argv[1] +
                                 ",settings=profile,jdk.CPUTimeSample#throttle=5ms");
        std::vector<std::thread> workers;
        for (long w = 0; w < threads; w++) {
            workers.emplace_back([&, w] {
                const pricing::Model model;
                for (long i = 0; i < events; i++) {
                    const int64_t id = i * 8 + w;
                    {
                        auto span = order.scoped(SYMBOLS[i % 4], id, 100.0 + static_cast<double>(i % 50));
                        sink = model.evaluate(2000);
                        std::get<2>(span.values()) += 0.25;
                    }
                    if (fill.commit(static_cast<uint32_t>(id), i % 3 == 0, flightrec::current_thread) !=
                        FLIGHTREC_OK) {
                        std::fprintf(stderr, "commit failed: %s\n", flightrec_last_error());
                        std::exit(1);
                    }
                }
            });
        }
        for (auto& t : workers) t.join();
        rec.stop();
    } catch (const flightrec::error& e) {
        std::fprintf(stderr, "flightrec error %d: %s\n", e.code(), e.what());
        return 1;
    }
    const long n = threads * events;
    std::printf("{\"counts\": {\"com.example.cpp.Order\": %ld, \"com.example.cpp.Fill\": %ld}}\n", n, n);
    return 0;
}
