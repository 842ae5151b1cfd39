// flightrec: JDK Flight Recorder files from native programs -- a header-only
// C++17 wrapper over the C ABI in flightrec.h.
//
//   flightrec::recording rec("filename=app.jfr,settings=profile");   // RAII
//   static const flightrec::event_type<std::string_view, uint16_t> request(
//       "com.example.Request", {{{"path", "Path"}, {"status", "Status"}}},
//       flightrec::type_options().duration().label("Request"));
//   {
//       auto span = request.scoped("/", 200);   // committed when it ends
//       ...
//   }
//   request.commit("/health", 200);               // an instant (duration 0)
//
// Control-path failures (start, stop, register, set, dump) throw
// flightrec::error; commits are noexcept and return the C status (they only
// fail for a programming error; flightrec_last_error() says which).
// Commits build their values on the stack: nothing is allocated.
#ifndef FLIGHTREC_HPP
#define FLIGHTREC_HPP

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "flightrec.h"

namespace flightrec {

// A failed control-path call: the FLIGHTREC_ERR_* code and the message.
class error : public std::runtime_error {
public:
    error(int code, const char* what) : std::runtime_error(what), code_(code) {}
    int code() const noexcept { return code_; }

private:
    int code_;
};

inline void check(int code) {
    if (code != FLIGHTREC_OK) throw error(code, flightrec_last_error());
}

// The process's recording, started from an option string in the FLIGHTREC
// grammar and stopped (its file written) when the object is destroyed.
class recording {
public:
    explicit recording(const std::string& options) { check(flightrec_start(options.c_str())); }
    recording(const recording&) = delete;
    recording& operator=(const recording&) = delete;
    recording(recording&& other) noexcept : active_(std::exchange(other.active_, false)) {}
    ~recording() {
        if (active_) flightrec_stop();  // errors at destruction cannot be thrown
    }
    // Stops now and writes the file; throws on failure.
    void stop() {
        active_ = false;
        check(flightrec_stop());
    }
    void dump(const std::string& path) const { check(flightrec_dump(path.c_str())); }
    void flush() const { check(flightrec_flush()); }
    void set(const std::string& event, const std::string& setting, const std::string& value) const {
        check(flightrec_set(event.c_str(), setting.c_str(), value.c_str()));
    }

private:
    bool active_ = true;
};

// Field types beyond numbers and strings.
struct current_thread_t {};  // the committing thread
struct stack_trace_t {};     // the committing thread's stack, captured now
inline constexpr current_thread_t current_thread{};
inline constexpr stack_trace_t stack_trace{};

namespace detail {
template <class T> struct kind_of;
template <> struct kind_of<bool> { static constexpr uint32_t value = FLIGHTREC_KIND_BOOL; };
template <> struct kind_of<int8_t> { static constexpr uint32_t value = FLIGHTREC_KIND_I8; };
template <> struct kind_of<int16_t> { static constexpr uint32_t value = FLIGHTREC_KIND_I16; };
template <> struct kind_of<int32_t> { static constexpr uint32_t value = FLIGHTREC_KIND_I32; };
template <> struct kind_of<int64_t> { static constexpr uint32_t value = FLIGHTREC_KIND_I64; };
template <> struct kind_of<uint8_t> { static constexpr uint32_t value = FLIGHTREC_KIND_U8; };
template <> struct kind_of<uint16_t> { static constexpr uint32_t value = FLIGHTREC_KIND_U16; };
template <> struct kind_of<uint32_t> { static constexpr uint32_t value = FLIGHTREC_KIND_U32; };
template <> struct kind_of<uint64_t> { static constexpr uint32_t value = FLIGHTREC_KIND_U64; };
template <> struct kind_of<float> { static constexpr uint32_t value = FLIGHTREC_KIND_F32; };
template <> struct kind_of<double> { static constexpr uint32_t value = FLIGHTREC_KIND_F64; };
template <> struct kind_of<std::string_view> { static constexpr uint32_t value = FLIGHTREC_KIND_STRING; };
template <> struct kind_of<current_thread_t> { static constexpr uint32_t value = FLIGHTREC_KIND_THREAD; };
template <> struct kind_of<stack_trace_t> { static constexpr uint32_t value = FLIGHTREC_KIND_STACK_TRACE; };

template <class T>
flightrec_value to_value(const T& v) noexcept {
    flightrec_value out{};
    if constexpr (std::is_same_v<T, bool>) {
        out.tag = FLIGHTREC_VALUE_BOOL;
        out.v.b = v ? 1 : 0;
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        out.tag = FLIGHTREC_VALUE_INT;
        out.v.i = static_cast<int64_t>(v);
    } else if constexpr (std::is_integral_v<T>) {
        out.tag = FLIGHTREC_VALUE_UINT;
        out.v.u = static_cast<uint64_t>(v);
    } else if constexpr (std::is_same_v<T, float>) {
        out.tag = FLIGHTREC_VALUE_F32;
        out.v.f32 = v;
    } else if constexpr (std::is_same_v<T, double>) {
        out.tag = FLIGHTREC_VALUE_F64;
        out.v.f64 = v;
    } else if constexpr (std::is_same_v<T, std::string_view>) {
        out.tag = FLIGHTREC_VALUE_STRING;
        out.v.s.ptr = v.data();
        out.v.s.len = v.size();
    } else if constexpr (std::is_same_v<T, current_thread_t>) {
        out.tag = FLIGHTREC_VALUE_CURRENT_THREAD;
    } else {
        static_assert(std::is_same_v<T, stack_trace_t>, "unsupported field type");
        out.tag = FLIGHTREC_VALUE_STACK_TRACE;
    }
    return out;
}
}  // namespace detail

// One field's name, label and content type (FLIGHTREC_CONTENT_*).
struct field {
    const char* name;
    const char* label = nullptr;
    uint32_t content = FLIGHTREC_CONTENT_NONE;
};

// What an event type is besides its fields; chainable.
class type_options {
public:
    type_options& label(const char* l) { label_ = l; return *this; }
    type_options& description(const char* d) { description_ = d; return *this; }
    // Levels separated by '/', e.g. "Example/Requests".
    type_options& category(const char* c) { category_ = c; return *this; }
    type_options& duration(int64_t threshold_ns = 0) {
        flags_ |= FLIGHTREC_EVENT_DURATION;
        threshold_ns_ = threshold_ns;
        return *this;
    }
    type_options& stack_trace(bool on = true) {
        flags_ = on ? (flags_ | FLIGHTREC_EVENT_STACK_TRACE) : (flags_ & ~FLIGHTREC_EVENT_STACK_TRACE);
        return *this;
    }
    type_options& disabled() { flags_ |= FLIGHTREC_EVENT_DISABLED; return *this; }

private:
    template <class...> friend class event_type;
    const char* label_ = nullptr;
    const char* description_ = nullptr;
    const char* category_ = nullptr;
    uint32_t flags_ = 0;
    int64_t threshold_ns_ = 0;
};

template <class... Fields> class scoped_event;

// An event type whose fields have the C++ types Fields... (bool, the
// <cstdint> integers, float, double, std::string_view, current_thread_t,
// stack_trace_t). Register once (e.g. a function-local static) and share.
template <class... Fields>
class event_type {
public:
    static constexpr std::size_t field_count = sizeof...(Fields);

    event_type(const char* name, const std::array<field, field_count>& fields,
               const type_options& options = type_options()) {
        constexpr uint32_t kinds[] = {detail::kind_of<Fields>::value..., 0};
        std::array<flightrec_field, field_count + 1> descs{};
        for (std::size_t i = 0; i < field_count; i++) {
            descs[i] = flightrec_field{fields[i].name, kinds[i], fields[i].content, fields[i].label};
        }
        flightrec_event_desc desc{};
        desc.name = name;
        desc.label = options.label_;
        desc.description = options.description_;
        desc.category = options.category_;
        desc.flags = options.flags_;
        desc.threshold_ns = options.threshold_ns_;
        desc.fields = descs.data();
        desc.field_count = field_count;
        check(flightrec_register(&desc, &handle_));
    }

    flightrec_event_type handle() const noexcept { return handle_; }
    bool enabled() const noexcept { return flightrec_is_enabled(handle_) == 1; }

    // Commits an event happening now.
    int commit(const Fields&... values) const noexcept {
        const flightrec_value v[field_count + 1] = {detail::to_value(values)..., {}};
        return flightrec_commit(handle_, v, field_count);
    }

    // Commits a duration event between two flightrec_ticks() values.
    int commit_span(int64_t start, int64_t end, const Fields&... values) const noexcept {
        const flightrec_value v[field_count + 1] = {detail::to_value(values)..., {}};
        return flightrec_commit_span(handle_, start, end, v, field_count);
    }

    // A duration event from now until the returned object is destroyed.
    // String values are views: what they view must outlive the scope.
    scoped_event<Fields...> scoped(Fields... values) const noexcept {
        return scoped_event<Fields...>(*this, std::move(values)...);
    }

private:
    flightrec_event_type handle_ = 0;
};

// A duration event committed when it is destroyed, with the values it holds
// then (update them through values()).
template <class... Fields>
class scoped_event {
public:
    scoped_event(const event_type<Fields...>& type, Fields... values) noexcept
        : type_(&type), start_(flightrec_ticks()), values_(std::move(values)...) {}
    scoped_event(const scoped_event&) = delete;
    scoped_event& operator=(const scoped_event&) = delete;
    scoped_event(scoped_event&& other) noexcept
        : type_(std::exchange(other.type_, nullptr)), start_(other.start_), values_(std::move(other.values_)) {}
    ~scoped_event() {
        if (type_ == nullptr) return;
        int64_t end = flightrec_ticks();
        std::apply([&](const Fields&... v) { type_->commit_span(start_, end, v...); }, values_);
    }
    std::tuple<Fields...>& values() noexcept { return values_; }

private:
    const event_type<Fields...>* type_;
    int64_t start_;
    std::tuple<Fields...> values_;
};

}  // namespace flightrec

#endif  // FLIGHTREC_HPP
