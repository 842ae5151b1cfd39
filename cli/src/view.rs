//! `flightrec view`: the tables `jfr view` prints for the views a native
//! program's recording has data for, computed the same way (the JDK's
//! `view.ini` queries: what is grouped, summed and sorted, and the limit).
//!
//! Methods are named as `jfr view` names them (`Class.method(Params)`),
//! percentages are of the view's own total, and rows are sorted by the
//! view's measure, descending, ties by name so output is stable.

use std::collections::HashMap;
use std::io::Write;

use jfr_format::read::{EventRecord, Value};

use crate::error::CliError;
use crate::recording::Recording;
use crate::stacks;
use crate::time::Ticks;

/// The views, their titles and what they read.
pub const VIEWS: &[(&str, &str)] = &[
    ("hot-methods", "Java Methods that Execute the Most"),
    (
        "cpu-time-hot-methods",
        "Java Methods that Execute the Most from CPU Time Sampler",
    ),
    ("allocation-by-site", "Allocation by Site"),
    ("memory-leaks-by-site", "Memory Leak Candidates by Site"),
    ("contention-by-site", "Contention by Site"),
    ("method-timing", "Method Timing"),
    ("exception-by-site", "Exceptions by Site"),
    ("thread-cpu-load", "Thread CPU Load"),
    ("cpu-load", "CPU Load Statistics"),
];

/// A rendered table: a title, column names and rows of cells.
#[derive(Debug, Default)]
pub struct Table {
    /// The view's title.
    pub title: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Cells, a row at a time.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Renders as `jfr view` lays a table out: the title centred, the
    /// header, a rule of dashes per column, first column left-aligned and
    /// the others right-aligned.
    pub fn render(&self) -> String {
        let n = self.columns.len();
        // Long parameter lists shortened to `(...)`, as `jfr view` does when
        // a method does not fit its column.
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(|c| compact(c)).collect())
            .collect();
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for r in &rows {
            for (i, c) in r.iter().enumerate().take(n) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let total: usize = widths.iter().sum::<usize>() + n.saturating_sub(1);
        let mut s = String::from("\n");
        let pad = total.saturating_sub(self.title.chars().count()) / 2;
        s.push_str(&format!("{}{}\n\n", " ".repeat(pad), self.title));
        let line = |cells: &[String]| {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate() {
                let w = widths[i];
                if i == 0 {
                    l.push_str(&format!("{c:<w$}"));
                } else {
                    l.push_str(&format!(" {c:>w$}"));
                }
            }
            l.trim_end().to_owned() + "\n"
        };
        s.push_str(&line(&self.columns));
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        s.push_str(&line(&rule));
        for r in &rows {
            s.push_str(&line(r));
        }
        s
    }
}

/// Longest cell shown whole.
const MAX_CELL: usize = 100;

fn compact(cell: &str) -> String {
    if cell.chars().count() <= MAX_CELL {
        return cell.to_owned();
    }
    match (cell.find('('), cell.ends_with(')')) {
        (Some(open), true) => format!("{}(...)", &cell[..open]),
        _ => cell.chars().take(MAX_CELL).collect(),
    }
}

/// A measure per key, summed over events.
#[derive(Debug, Default, Clone)]
struct Agg {
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    last: Vec<String>,
}

impl Agg {
    fn add(&mut self, v: f64) {
        if self.count == 0 {
            self.min = v;
            self.max = v;
        }
        self.count += 1;
        self.sum += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
}

/// Runs view `name` over `rec` and prints it.
pub fn run(rec: &mut Recording, name: &str, out: &mut dyn Write) -> Result<(), CliError> {
    let Some(&(_, title)) = VIEWS.iter().find(|(n, _)| *n == name) else {
        return Err(CliError::Usage(format!(
            "unknown view '{name}'; run 'flightrec view' for the list"
        )));
    };
    let mut groups: HashMap<String, Agg> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut form: HashMap<&'static str, Agg> = HashMap::new();
    // Every chunk's ticks with the first chunk's header, as the JDK does
    // (see `print::run`).
    let mut first_chunk: Option<Ticks> = None;
    rec.for_each_decoded(|chunk, _| {
        let ticks = *first_chunk.get_or_insert_with(|| Ticks::new(&chunk.header));
        for ev in &chunk.events {
            visit(
                name,
                ev,
                &ticks,
                &mut |key: String, v: f64, last: Vec<String>| {
                    let g = groups.entry(key.clone()).or_insert_with(|| {
                        order.push(key);
                        Agg::default()
                    });
                    g.add(v);
                    if !last.is_empty() {
                        g.last = last;
                    }
                },
                &mut form,
            );
        }
        Ok(())
    })?;
    let table = tabulate(name, title, groups, &form);
    out.write_all(table.render().as_bytes())
        .map_err(|source| CliError::Output {
            path: "-".into(),
            source,
        })
}

/// The event's top frame, or `N/A` without a stack trace: the JDK groups
/// such events under a null key, whose row counts in the view's total.
fn top_frame(ev: &EventRecord) -> String {
    (stacks::frames(ev).into_iter().next()).map_or_else(|| MISSING.to_owned(), |f| f.method)
}

/// What `jfr view` shows for a missing value.
const MISSING: &str = "N/A";

/// The first frame that is not a constructor or class initializer, as the
/// JDK's `topNotInitFrame`.
fn top_not_init_frame(ev: &EventRecord) -> String {
    let frames = stacks::frames(ev);
    frames
        .iter()
        .find(|f| !f.method.contains(".<init>(") && !f.method.contains(".<clinit>("))
        .or(frames.first())
        .map_or_else(|| MISSING.to_owned(), |f| f.method.clone())
}

type Sink<'a> = dyn FnMut(String, f64, Vec<String>) + 'a;

fn visit(
    view: &str,
    ev: &EventRecord,
    ticks: &Ticks,
    add: &mut Sink<'_>,
    form: &mut HashMap<&'static str, Agg>,
) {
    let t = &*ev.type_name;
    let nanos = |f: &str| {
        ev.get(f)
            .and_then(Value::as_i64)
            .map(|v| ticks.span(v) as f64)
    };
    match (view, t) {
        ("hot-methods", "jdk.ExecutionSample") | ("cpu-time-hot-methods", "jdk.CPUTimeSample") => {
            add(top_frame(ev), 1.0, Vec::new());
        }
        ("allocation-by-site", "jdk.ObjectAllocationSample") => {
            if let Some(w) = ev.get("weight").and_then(Value::as_i64) {
                add(top_frame(ev), w as f64, Vec::new());
            }
        }
        ("contention-by-site", "jdk.JavaMonitorEnter") => {
            if let Some(d) = nanos("duration") {
                add(top_frame(ev), d, Vec::new());
            }
        }
        ("exception-by-site", "jdk.JavaErrorThrow" | "jdk.JavaExceptionThrow") => {
            add(top_not_init_frame(ev), 1.0, Vec::new());
        }
        ("memory-leaks-by-site", "jdk.OldObjectSample") => {
            let m = top_frame(ev);
            let age = nanos("objectAge").map(fmt_duration).unwrap_or_default();
            let heap = ev
                .get("lastKnownHeapUsage")
                .and_then(Value::as_i64)
                .map(fmt_bytes)
                .unwrap_or_default();
            let alloc = ev
                .get("allocationTime")
                .and_then(Value::as_i64)
                .map(|t| {
                    let c = crate::time::Civil::at(ticks.instant(t), 0);
                    format!("{:02}:{:02}:{:02}", c.hour, c.minute, c.second)
                })
                .unwrap_or_default();
            add(m.clone(), 1.0, vec![alloc, m, age, heap]);
        }
        ("method-timing", "jdk.MethodTiming") => {
            let Some(method) = ev.get("method") else {
                return;
            };
            let m = stacks::method_name(method);
            let cell = |f: &str| nanos(f).map(fmt_ms6).unwrap_or_else(|| "N/A".into());
            let inv = ev
                .get("invocations")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                .to_string();
            let avg = nanos("average").unwrap_or(0.0);
            add(
                m.clone(),
                avg,
                vec![m, inv, cell("minimum"), cell("average"), cell("maximum")],
            );
        }
        ("thread-cpu-load", "jdk.ThreadCPULoad") => {
            let th = stacks::thread_name(ev).unwrap_or_else(|| "N/A".into());
            let f = |n: &str| ev.get(n).and_then(Value::as_f64).unwrap_or(0.0);
            let (sys, user) = (f("system"), f("user"));
            add(th.clone(), user, vec![th, fmt_pct(sys), fmt_pct(user)]);
        }
        ("cpu-load", "jdk.CPULoad") => {
            for (k, f) in [
                ("user", "jvmUser"),
                ("system", "jvmSystem"),
                ("machine", "machineTotal"),
            ] {
                if let Some(v) = ev.get(f).and_then(Value::as_f64) {
                    form.entry(k).or_default().add(v);
                }
            }
        }
        _ => {}
    }
}

fn tabulate(
    view: &str,
    title: &str,
    groups: HashMap<String, Agg>,
    form: &HashMap<&'static str, Agg>,
) -> Table {
    let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut rows: Vec<(String, Agg)> = groups.into_iter().collect();
    // By measure, descending; ties by key.
    let by = |key: fn(&Agg) -> f64| {
        move |a: &(String, Agg), b: &(String, Agg)| {
            key(&b.1)
                .partial_cmp(&key(&a.1))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.0.cmp(&b.0))
        }
    };
    let total: f64 = rows.iter().map(|r| r.1.sum).sum();
    let pct = |v: f64| {
        if total > 0.0 {
            fmt_pct(v / total)
        } else {
            "N/A".into()
        }
    };
    let mut t = Table {
        title: title.to_owned(),
        ..Table::default()
    };
    match view {
        "hot-methods" | "cpu-time-hot-methods" => {
            rows.sort_by(by(|a| a.sum));
            t.columns = cols(&["Method", "Samples", "Percent"]);
            t.rows = rows
                .iter()
                .take(25)
                .map(|(k, a)| vec![k.clone(), a.count.to_string(), pct(a.sum)])
                .collect();
        }
        "allocation-by-site" => {
            rows.sort_by(by(|a| a.sum));
            t.columns = cols(&["Method", "Allocation Pressure"]);
            t.rows = rows
                .iter()
                .take(25)
                .map(|(k, a)| vec![k.clone(), pct(a.sum)])
                .collect();
        }
        "contention-by-site" => {
            rows.sort_by(by(|a| a.max));
            t.columns = cols(&["StackTrace", "Count", "Avg.", "Max."]);
            t.rows = rows
                .iter()
                .map(|(k, a)| {
                    vec![
                        k.clone(),
                        a.count.to_string(),
                        fmt_duration(a.sum / a.count as f64),
                        fmt_duration(a.max),
                    ]
                })
                .collect();
        }
        "exception-by-site" => {
            rows.sort_by(by(|a| a.sum));
            t.columns = cols(&["Method", "Count"]);
            t.rows = rows
                .iter()
                .map(|(k, a)| vec![k.clone(), a.count.to_string()])
                .collect();
        }
        "memory-leaks-by-site" => {
            rows.sort_by(|a, b| a.1.last.first().cmp(&b.1.last.first()));
            t.columns = cols(&[
                "Alloc. Time",
                "Application Method",
                "Object Age",
                "Heap Usage",
            ]);
            t.rows = rows.into_iter().map(|(_, a)| a.last).collect();
        }
        "method-timing" => {
            rows.sort_by(|a, b| {
                let av = |x: &Agg| x.sum / x.count.max(1) as f64;
                av(&a.1)
                    .partial_cmp(&av(&b.1))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            t.columns = cols(&[
                "Timed Method",
                "Invocations",
                "Minimum Time",
                "Average Time",
                "Maximum Time",
            ]);
            t.rows = rows.into_iter().map(|(_, a)| a.last).collect();
        }
        "thread-cpu-load" => {
            rows.sort_by(|a, b| {
                let u = |x: &Agg| x.last.get(2).cloned().unwrap_or_default();
                let pu = |x: &Agg| u(x).trim_end_matches('%').parse::<f64>().unwrap_or(0.0);
                pu(&b.1)
                    .partial_cmp(&pu(&a.1))
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            });
            t.columns = cols(&["Thread", "System", "User"]);
            t.rows = rows.into_iter().map(|(_, a)| a.last).collect();
        }
        "cpu-load" => {
            t.columns = cols(&["Statistic", "Value"]);
            for (k, label) in [
                ("user", "JVM User"),
                ("system", "JVM System"),
                ("machine", "Machine Total"),
            ] {
                let a = form.get(k).cloned().unwrap_or_default();
                let cell = |v: f64| {
                    if a.count == 0 {
                        "N/A".to_owned()
                    } else {
                        fmt_pct(v)
                    }
                };
                t.rows.push(vec![format!("{label} (Minimum)"), cell(a.min)]);
                t.rows.push(vec![
                    format!("{label} (Average)"),
                    cell(a.sum / a.count.max(1) as f64),
                ]);
                t.rows.push(vec![format!("{label} (Maximum)"), cell(a.max)]);
            }
        }
        _ => {}
    }
    t
}

/// A fraction as `jfr view` prints a normalized value: `55.79%`.
///
/// Java's `String.format("%.2f")` rounds the shortest decimal that names
/// the double half up, where Rust's `{:.2}` rounds the double's exact binary
/// value: 39.795 is 39.80 to Java and 39.79 to Rust. So the digits are taken
/// from the shortest form (Rust's `{}`) and rounded as Java does.
fn fmt_pct(f: f64) -> String {
    format!("{}%", round_half_up(f * 100.0, 2))
}

/// `v` with `places` decimals, rounded half up from its shortest decimal form.
fn round_half_up(v: f64, places: usize) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let shortest = format!("{}", v.abs());
    let (int, frac) = shortest.split_once('.').unwrap_or((&shortest, ""));
    let mut digits: Vec<u8> = int
        .bytes()
        .chain(frac.bytes().chain(std::iter::repeat(b'0')).take(places))
        .collect();
    if frac.as_bytes().get(places).is_some_and(|&d| d >= b'5') {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, b'1');
                break;
            }
            i -= 1;
            if digits[i] == b'9' {
                digits[i] = b'0';
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let split = digits.len() - places;
    let (whole, decimals) = digits.split_at(split);
    // Java keeps the sign of a negative value that rounds to zero: -0.00.
    let sign = if v.is_sign_negative() { "-" } else { "" };
    let whole = std::str::from_utf8(whole).unwrap_or("0");
    let decimals = std::str::from_utf8(decimals).unwrap_or("");
    if places == 0 {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{decimals}")
    }
}

/// Nanoseconds in the largest unit that keeps a whole part.
fn fmt_duration(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.3} us", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Milliseconds with six decimals, as the view's `ms-precision:6`.
fn fmt_ms6(ns: f64) -> String {
    format!("{:.6} ms", ns / 1e6)
}

fn fmt_bytes(b: i64) -> String {
    let units = ["bytes", "kB", "MB", "GB", "TB"];
    let mut v = b as f64;
    let mut u = 0;
    while v.abs() >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} bytes")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

#[cfg(test)]
mod tests {
    use super::{fmt_pct, round_half_up};

    #[test]
    fn percentages_round_as_java_formats_them() {
        // 0.39795 * 100 is 39.795 in its shortest form and 39.79499... exactly.
        assert_eq!(fmt_pct(0.39795), "39.80%");
        assert_eq!(fmt_pct(0.2268), "22.68%");
        assert_eq!(fmt_pct(0.0), "0.00%");
        assert_eq!(fmt_pct(1.0), "100.00%");
        assert_eq!(round_half_up(9.995, 2), "10.00");
        assert_eq!(round_half_up(0.125, 2), "0.13");
        assert_eq!(round_half_up(-0.001, 2), "-0.00");
        assert_eq!(round_half_up(-2.5, 0), "-3");
        assert_eq!(round_half_up(1e-7, 2), "0.00");
    }
}
