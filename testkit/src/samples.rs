//! Reading `jdk.CPUTimeSample`s (or any event with an `eventThread`) per
//! thread out of [`crate::print_json`]'s events: the count of each thread,
//! by name and kernel id, for tests that compare threads' shares of the
//! samples with their shares of the CPU; and the names in a thread or a
//! stack trace.

use std::collections::BTreeMap;

/// A thread constant's name as the JDK shows it: its Java name, else its
/// OS name (`"?"` for neither).
pub fn thread_name(thread: &serde_json::Value) -> &str {
    thread["javaName"]
        .as_str()
        .or_else(|| thread["osName"].as_str())
        .unwrap_or("?")
}

/// The method names of an event's `stackTrace`, innermost first.
///
/// # Panics
///
/// If `values` (an event's `values`) has no stack trace.
pub fn method_names(values: &serde_json::Value) -> Vec<&str> {
    values["stackTrace"]["frames"]
        .as_array()
        .unwrap_or_else(|| panic!("no stack trace: {values:#}"))
        .iter()
        .filter_map(|f| f["method"]["name"].as_str())
        .collect()
}

/// The events of type `ty` in `events` (the array [`crate::print_json`]
/// returns) per `eventThread`: `(name, osThreadId)` to count.
pub fn per_thread(events: &serde_json::Value, ty: &str) -> BTreeMap<(String, i64), u64> {
    let mut counts = BTreeMap::new();
    for e in events.as_array().expect("an array of events") {
        if e["type"] != ty {
            continue;
        }
        let t = &e["values"]["eventThread"];
        let key = (
            thread_name(t).to_owned(),
            t["osThreadId"].as_i64().unwrap_or(-1),
        );
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// Of the counts [`per_thread`] returns, those of the threads `pick`
/// chooses by name: their total and how many distinct threads had any.
pub fn total_of(
    counts: &BTreeMap<(String, i64), u64>,
    pick: impl Fn(&str) -> bool,
) -> (u64, usize) {
    counts
        .iter()
        .filter(|((name, _), _)| pick(name))
        .fold((0, 0), |(n, threads), (_, c)| (n + c, threads + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_thread() {
        let events = serde_json::json!([
            {"type": "jdk.CPUTimeSample", "values": {"eventThread": {"javaName": "a", "osThreadId": 1}}},
            {"type": "jdk.CPUTimeSample", "values": {"eventThread": {"javaName": "a", "osThreadId": 1}}},
            {"type": "jdk.CPUTimeSample", "values": {"eventThread": {"osName": "b", "osThreadId": 2}}},
            {"type": "jdk.CPUTimeSample", "values": {"eventThread": {"javaName": "a", "osThreadId": 3}}},
            {"type": "jdk.ExecutionSample", "values": {"eventThread": {"javaName": "a", "osThreadId": 1}}},
        ]);
        let c = per_thread(&events, "jdk.CPUTimeSample");
        assert_eq!(c[&("a".to_owned(), 1)], 2);
        assert_eq!(c[&("b".to_owned(), 2)], 1);
        assert_eq!(total_of(&c, |n| n == "a"), (3, 2));
        assert_eq!(total_of(&c, |n| n == "c"), (0, 0));
        let v = serde_json::json!({"stackTrace": {"frames": [
            {"method": {"name": "inner"}}, {"method": {"name": "outer"}}
        ]}});
        assert_eq!(method_names(&v), ["inner", "outer"]);
    }
}
