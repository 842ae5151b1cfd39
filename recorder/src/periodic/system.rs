//! The built-in periodic and per-chunk events: what the process and the
//! machine were doing, read from `/proc`, the cgroup files and the process
//! itself, at the JDK's default periods ([`BUILTIN`]).
//!
//! # Cost
//!
//! Each task reads one file per run where the figure is process- or
//! machine-wide (`jdk.CPULoad`: `/proc/self/stat` and `/proc/stat`;
//! `jdk.ResidentSetSize`: `/proc/self/status`; each container event: its
//! one or two cgroup files). Those read every second or so are kept open
//! and re-read with one `pread` into a kept buffer ([`procfs::ProcFile`]),
//! parsed without allocating. `jdk.ThreadCPULoad` (10 s by default) reads
//! no file: three `clock_gettime` calls per live thread on its CPU clocks
//! ([`thread_times`]), where a `/proc/self/task/TID/stat` would cost an
//! open, a read, a close and the kernel's formatting of fifty fields, and
//! one for a thread that has not run since the last round (its total
//! unchanged, its split is too); its table of previous readings is
//! updated in place. Thread starts and ends
//! cost one `fstat` per poll ([`super::lifecycle`]). The processor count
//! (`available_parallelism` reads the cgroup's files) is read again at
//! most every [`CPUS_EVERY`].
//!
//! # Not written
//!
//! A process-wide heap or allocation figure: the system allocator has no
//! cheap, lock-free way to tell (glibc's `mallinfo2` walks every arena
//! under its locks), so flightrec writes none; `jdk.ResidentSetSize` is the
//! memory figure.
//!
//! Invariant: a task writes only events of its own type, at most one run per
//! due time, and skips (writes nothing) when its source is unreadable.

use std::collections::HashMap;
use std::time::Instant;

use jfr_format::write::events::{
    ContainerConfiguration, ContainerCpuThrottling, ContainerCpuUsage, ContainerIoUsage,
    ContainerMemoryUsage, CpuInformation, CpuLoad, CpuTimeStampCounter, ExceptionStatistics,
    InitialEnvironmentVariable, JavaThreadStatistics, NativeLibrary, NetworkUtilization,
    OsInformation, PhysicalMemory, ProcessInformation, RecorderStatistics, ResidentSetSize,
    Shutdown, ThreadCpuLoad, VirtualizationInformation,
};

use super::emit::{emit, emit_with};
use super::lifecycle::Lifecycle;
use super::procfs::{self, Cgroup};
use super::table::{BUILTIN, enabled};
use crate::base::clock;
use crate::config::settings::Settings;
use crate::event::builtin::BuiltinRefs;
use crate::runtime::Runtime;

/// An interface's name and bytes received and sent.
type Interface = (String, u64, u64);

/// What the settings say of `jdk.ThreadStart` and `jdk.ThreadEnd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ThreadEvents {
    pub(crate) start: bool,
    /// `jdk.ThreadStart#stackTrace`: the creator's stack, where the thread
    /// hook sees the creation.
    pub(crate) stack: bool,
    pub(crate) end: bool,
}

impl ThreadEvents {
    pub(crate) fn of(settings: &Settings) -> Self {
        Self {
            start: enabled(settings, "jdk.ThreadStart"),
            stack: settings
                .get("jdk.ThreadStart")
                .and_then(|s| s.stack_trace)
                .unwrap_or(true),
            end: enabled(settings, "jdk.ThreadEnd"),
        }
    }
}

/// How long a reading of the processor count is used.
const CPUS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Previous readings, for the events that report rates.
#[derive(Debug, Default)]
struct Previous {
    process: Option<(Instant, u64, u64, u64, u64)>,
    /// Per thread: the round it was last read in, when, user and system ns.
    threads: HashMap<u64, (u64, Instant, u64, u64)>,
    /// Rounds of `jdk.ThreadCPULoad` so far.
    thread_round: u64,
    net: Option<(Instant, Vec<Interface>)>,
    /// Time, events and samples at the last `flightrec.RecorderStatistics`.
    statistics: Option<(Instant, u64, u64)>,
}

/// The tasks' state on the periodic thread.
#[derive(Debug)]
pub(crate) struct SystemEvents {
    rt: &'static Runtime,
    lifecycle: Lifecycle,
    prev: Previous,
    clk_tck: u64,
    cgroup: Option<Cgroup>,
    /// The files read every period (module docs).
    self_stat: procfs::ProcFile,
    machine_stat: procfs::ProcFile,
    self_status: procfs::ProcFile,
    /// The processor count and when it was read.
    cpus: Option<(Instant, f64)>,
}

impl SystemEvents {
    pub(crate) fn new(rt: &'static Runtime) -> Self {
        Self {
            rt,
            lifecycle: Lifecycle::new(),
            prev: Previous::default(),
            clk_tck: procfs::clock_ticks(),
            cgroup: procfs::cgroup(),
            self_stat: procfs::ProcFile::open("/proc/self/stat"),
            machine_stat: procfs::ProcFile::open("/proc/stat"),
            self_status: procfs::ProcFile::open("/proc/self/status"),
            cpus: None,
        }
    }

    /// The processors available to the process, read again at most every
    /// [`CPUS_EVERY`].
    fn cpus(&mut self, now: Instant) -> f64 {
        match self.cpus {
            Some((at, n)) if now.duration_since(at) < CPUS_EVERY => n,
            _ => {
                let n = cpus();
                self.cpus = Some((now, n));
                n
            }
        }
    }

    /// Polls thread starts and ends; true if threads came or went (or
    /// one waits to name itself): see [`Lifecycle::poll`].
    pub(crate) fn poll_threads(&mut self, events: ThreadEvents, now: Instant) -> bool {
        // What the thread hook keeps of each creation (with the feature).
        crate::sampler::birth::set_starts(events.start, events.stack);
        self.lifecycle.poll(self.rt, events.start, events.end, now)
    }

    /// Runs task `i` of [`BUILTIN`].
    pub(crate) fn run(&mut self, i: usize, settings: &Settings) {
        let ticks = clock::ticks();
        match BUILTIN[i].name {
            "jdk.OSInformation" => os_information(ticks),
            "jdk.CPUInformation" => cpu_information(ticks),
            "jdk.PhysicalMemory" => physical_memory(ticks),
            "jdk.VirtualizationInformation" => virtualization(ticks),
            "jdk.ContainerConfiguration" => self.container_configuration(ticks),
            "jdk.NativeLibrary" => native_libraries(ticks),
            "jdk.InitialEnvironmentVariable" => environment(ticks),
            "flightrec.ProcessInformation" => process_information(ticks),
            "jdk.CPUTimeStampCounter" => time_stamp_counter(ticks),
            "jdk.CPULoad" => self.cpu_load(ticks),
            "jdk.ThreadCPULoad" => self.thread_cpu_load(ticks, settings),
            "jdk.ResidentSetSize" => self.resident_set_size(ticks),
            "jdk.ContainerCPUUsage" => self.container_cpu_usage(ticks),
            "jdk.ContainerMemoryUsage" => self.container_memory_usage(ticks),
            "jdk.ContainerCPUThrottling" => self.container_cpu_throttling(ticks),
            "jdk.ContainerIOUsage" => self.container_io_usage(ticks),
            "jdk.NetworkUtilization" => self.network(ticks),
            "jdk.JavaThreadStatistics" => self.thread_statistics(ticks),
            "jdk.ExceptionStatistics" => {
                let n = crate::process::panics::count() as i64;
                emit(ExceptionStatistics {
                    start_time: ticks,
                    throwables: n,
                });
            }
            "flightrec.RecorderStatistics" => self.recorder_statistics(ticks),
            _ => {}
        }
    }

    /// `jdk.Shutdown`, from the periodic thread's last round.
    pub(crate) fn shutdown(&mut self, reason: &str) {
        crate::sampler::birth::set_starts(false, false);
        let settings = crate::event::registry::registry().settings.load();
        if !enabled(&settings, "jdk.Shutdown") {
            return;
        }
        // This thread's own key: its slot tags it.
        let key = crate::buffer::local::current_thread_key(self.rt).unwrap_or(0);
        let ticks = clock::ticks();
        emit(Shutdown {
            start_time: ticks,
            event_thread: key,
            stack_trace: 0,
            reason,
        });
    }

    fn cpu_load(&mut self, ticks: i64) {
        let Some((user, system)) = self.self_stat.read().and_then(procfs::stat_times) else {
            return;
        };
        let Some((busy, total)) = self.machine_stat.read().and_then(procfs::machine_times) else {
            return;
        };
        let now = Instant::now();
        let prev = self.prev.process.replace((now, user, system, busy, total));
        let Some((then, u0, s0, b0, t0)) = prev else {
            return;
        };
        let wall = now.duration_since(then).as_secs_f64() * self.cpus(now);
        if wall <= 0.0 {
            return;
        }
        let tck = self.clk_tck as f64;
        let ju = ((user.saturating_sub(u0)) as f64 / tck / wall).clamp(0.0, 1.0);
        let js = ((system.saturating_sub(s0)) as f64 / tck / wall).clamp(0.0, 1.0);
        let dt = total.saturating_sub(t0);
        let machine = if dt == 0 {
            0.0
        } else {
            busy.saturating_sub(b0) as f64 / dt as f64
        };
        // The machine is at least as busy as this process.
        let machine = machine.max(ju + js).clamp(0.0, 1.0);
        emit(CpuLoad {
            start_time: ticks,
            jvm_user: ju as f32,
            jvm_system: js as f32,
            machine_total: machine as f32,
        });
    }

    fn thread_cpu_load(&mut self, ticks: i64, settings: &Settings) {
        let now = Instant::now();
        self.lifecycle.poll(
            self.rt,
            enabled(settings, "jdk.ThreadStart"),
            enabled(settings, "jdk.ThreadEnd"),
            now,
        );
        let n = self.cpus(now);
        self.prev.thread_round += 1;
        let round = self.prev.thread_round;
        // The table of previous readings is updated in place; entries of
        // threads not read this round (gone) are dropped after the loop.
        for i in 0..self.lifecycle.live() as usize {
            let Some(tid) = self.lifecycle.tid_at(i) else {
                break;
            };
            // A thread that has not run since the last round (its precise
            // total unchanged) keeps its split: one clock read, not three.
            let Some(total) = crate::base::clock::thread_cpu_time_ns(tid) else {
                continue;
            };
            let unchanged = self
                .prev
                .threads
                .get(&tid)
                .filter(|p| p.2 + p.3 == total)
                .map(|p| (p.2, p.3));
            let Some((u, s)) = unchanged.or_else(|| thread_times(tid)) else {
                continue;
            };
            let Some((then, u0, s0)) = self
                .prev
                .threads
                .insert(tid, (round, now, u, s))
                .map(|(_, then, u0, s0)| (then, u0, s0))
            else {
                continue;
            };
            let wall = now.duration_since(then).as_secs_f64() * n;
            if wall <= 0.0 {
                continue;
            }
            let user = (u.saturating_sub(u0) as f64 / 1e9 / wall).clamp(0.0, 1.0);
            let system = (s.saturating_sub(s0) as f64 / 1e9 / wall).clamp(0.0, 1.0);
            let Some(key) = self.lifecycle.key(self.rt, tid) else {
                continue;
            };
            let tags = self.rt.threads.tags_of(key);
            let refs = BuiltinRefs {
                thread: tags.as_deref(),
                ..BuiltinRefs::default()
            };
            emit_with(refs, |_| ThreadCpuLoad {
                start_time: ticks,
                event_thread: key,
                user: user as f32,
                system: system as f32,
            });
        }
        self.prev.threads.retain(|_, r| r.0 == round);
    }

    /// `flightrec.RecorderStatistics`: the totals since the recording
    /// started (see `crate::lifecycle::statistics`), and the rates since the last one
    /// (over the recording's start for the first).
    fn recorder_statistics(&mut self, ticks: i64) {
        let s = crate::lifecycle::statistics::snapshot(self.rt.pool.occupancy());
        let now = Instant::now();
        let (then, events0, samples0) = self.prev.statistics.unwrap_or((
            crate::lifecycle::statistics::started().unwrap_or(now),
            0,
            0,
        ));
        self.prev.statistics = Some((now, s.events, s.samples));
        let secs = now.duration_since(then).as_secs_f64();
        let rate = |n: u64, n0: u64| {
            if secs > 0.0 {
                (n.saturating_sub(n0) as f64 / secs).round() as i64
            } else {
                0
            }
        };
        let nanos = |d: std::time::Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        emit(RecorderStatistics {
            start_time: ticks,
            recorder_cpu_time: nanos(s.recorder_cpu),
            sampler_cpu_time: nanos(s.sampler_cpu),
            periodic_cpu_time: nanos(s.periodic_cpu),
            signal_handler_time: nanos(s.signal_handler),
            process_cpu_time: nanos(s.process_cpu),
            overhead: s.overhead() as f32,
            bytes_written: s.bytes_written as i64,
            buffer_occupancy: s.buffer_occupancy as f32,
            events: s.events as i64,
            events_per_second: rate(s.events, events0),
            samples: s.samples as i64,
            samples_per_second: rate(s.samples, samples0),
        });
    }

    fn thread_statistics(&mut self, ticks: i64) {
        let (live, acc, peak) = (
            self.lifecycle.live() as i64,
            self.lifecycle.accumulated as i64,
            self.lifecycle.peak as i64,
        );
        emit(JavaThreadStatistics {
            start_time: ticks,
            active_count: live,
            daemon_count: 0,
            accumulated_count: acc,
            peak_count: peak,
        });
    }

    fn network(&mut self, ticks: i64) {
        let Some(text) = procfs::read("/proc/net/dev") else {
            return;
        };
        let now = Instant::now();
        let cur = procfs::net_dev(&text);
        let Some((then, prev)) = self.prev.net.replace((now, cur.clone())) else {
            return;
        };
        let secs = now.duration_since(then).as_secs_f64();
        if secs <= 0.0 {
            return;
        }
        for (name, rx, tx) in &cur {
            let Some((_, rx0, tx0)) = prev.iter().find(|p| &p.0 == name) else {
                continue;
            };
            let read = (rx.saturating_sub(*rx0) as f64 * 8.0 / secs) as i64;
            let write = (tx.saturating_sub(*tx0) as f64 * 8.0 / secs) as i64;
            emit(NetworkUtilization {
                start_time: ticks,
                network_interface: name,
                read_rate: read,
                write_rate: write,
            });
        }
    }

    fn container_configuration(&mut self, ticks: i64) {
        let Some(c) = container_config(self.cgroup.as_ref()) else {
            return;
        };
        emit(ContainerConfiguration {
            start_time: ticks,
            container_type: &c.kind,
            cpu_slice_period: c.period_us,
            cpu_quota: c.quota_us,
            cpu_shares: c.shares,
            effective_cpu_count: c.cpus,
            memory_soft_limit: c.soft_limit,
            memory_limit: c.limit,
            swap_memory_limit: c.swap_limit,
            host_total_memory: c.host_memory,
            host_total_swap_memory: c.host_swap,
        });
    }

    fn container_cpu_usage(&mut self, ticks: i64) {
        let (total, user, system) = match &self.cgroup {
            Some(Cgroup::V2(dir)) => {
                let Some(stat) = procfs::read(dir.join("cpu.stat")) else {
                    return;
                };
                let us = |k| procfs::flat_keyed(&stat, k).unwrap_or(0) as i64 * 1000;
                (us("usage_usec"), us("user_usec"), us("system_usec"))
            }
            Some(Cgroup::V1(m)) => {
                let Some(dir) = m.get("cpuacct") else { return };
                let num = |f: &str| {
                    procfs::read(dir.join(f))
                        .and_then(|t| t.trim().parse::<i64>().ok())
                        .unwrap_or(-1)
                };
                (
                    num("cpuacct.usage"),
                    num("cpuacct.usage_user"),
                    num("cpuacct.usage_sys"),
                )
            }
            None => return,
        };
        emit(ContainerCpuUsage {
            start_time: ticks,
            cpu_time: total,
            cpu_user_time: user,
            cpu_system_time: system,
        });
    }

    fn container_memory_usage(&mut self, ticks: i64) {
        let num = |p: std::path::PathBuf| {
            procfs::read(p)
                .as_deref()
                .and_then(procfs::limit)
                .unwrap_or(-1)
        };
        let (fails, usage, swap) = match &self.cgroup {
            Some(Cgroup::V2(dir)) => {
                let fails = procfs::read(dir.join("memory.events"))
                    .and_then(|t| procfs::flat_keyed(&t, "max"))
                    .map_or(-1, |v| v as i64);
                let usage = num(dir.join("memory.current"));
                let swap = num(dir.join("memory.swap.current"));
                let swap = if swap >= 0 { usage + swap } else { usage };
                (fails, usage, swap)
            }
            Some(Cgroup::V1(m)) => {
                let Some(dir) = m.get("memory") else { return };
                (
                    num(dir.join("memory.failcnt")),
                    num(dir.join("memory.usage_in_bytes")),
                    num(dir.join("memory.memsw.usage_in_bytes")),
                )
            }
            None => return,
        };
        emit(ContainerMemoryUsage {
            start_time: ticks,
            memory_fail_count: fails,
            memory_usage: usage,
            swap_memory_usage: swap,
        });
    }

    fn container_cpu_throttling(&mut self, ticks: i64) {
        let (stat, micros) = match &self.cgroup {
            Some(Cgroup::V2(dir)) => (procfs::read(dir.join("cpu.stat")), true),
            Some(Cgroup::V1(m)) => (
                m.get("cpu").and_then(|d| procfs::read(d.join("cpu.stat"))),
                false,
            ),
            None => return,
        };
        let Some(stat) = stat else { return };
        let get = |k| procfs::flat_keyed(&stat, k).map_or(-1, |v| v as i64);
        let time = if micros {
            get("throttled_usec").saturating_mul(1000)
        } else {
            get("throttled_time")
        };
        let (elapsed, throttled) = (get("nr_periods"), get("nr_throttled"));
        emit(ContainerCpuThrottling {
            start_time: ticks,
            cpu_elapsed_slices: elapsed,
            cpu_throttled_slices: throttled,
            cpu_throttled_time: time,
        });
    }

    fn container_io_usage(&mut self, ticks: i64) {
        let (requests, bytes) = match &self.cgroup {
            Some(Cgroup::V2(dir)) => {
                let Some(t) = procfs::read(dir.join("io.stat")) else {
                    return;
                };
                (
                    procfs::io_stat_sum(&t, &["rios", "wios"]),
                    procfs::io_stat_sum(&t, &["rbytes", "wbytes"]),
                )
            }
            Some(Cgroup::V1(m)) => {
                let Some(dir) = m.get("blkio") else { return };
                let total = |f: &str| {
                    procfs::read(dir.join(f))
                        .map(|t| procfs::blkio_total(&t))
                        .unwrap_or(0)
                };
                (
                    total("blkio.throttle.io_serviced"),
                    total("blkio.throttle.io_service_bytes"),
                )
            }
            None => return,
        };
        emit(ContainerIoUsage {
            start_time: ticks,
            service_requests: requests as i64,
            data_transferred: bytes as i64,
        });
    }
}

/// User and system CPU time of thread `tid` of this process, in ns, from
/// its CPU clocks (`MAKE_THREAD_CPUCLOCK(tid, clock)` = `!tid << 3 | 4 |
/// clock`): the precise total (`CPUCLOCK_SCHED`) split in the ratio of the
/// tick-sampled user (`CPUCLOCK_VIRT`) to user + system (`CPUCLOCK_PROF`)
/// times, as the kernel splits it for `/proc/…/stat`. `None` once the
/// thread exited.
pub(crate) fn thread_times(tid: u64) -> Option<(u64, u64)> {
    let read = |clock: libc::clockid_t| {
        let id = (!(tid as libc::clockid_t) << 3) | 4 | clock;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a per-thread CPU clock id and a valid out-pointer; an
        // exited thread's clock fails with EINVAL.
        (unsafe { libc::clock_gettime(id, &mut ts) } == 0)
            .then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    };
    let (prof, virt, sched) = (read(0)?, read(1)?, read(2)?);
    let user = if prof == 0 {
        sched
    } else {
        (u128::from(sched) * u128::from(virt.min(prof)) / u128::from(prof)) as u64
    };
    Some((user, sched - user))
}

/// Processors available to the process (affinity and cgroup quota), the
/// JDK's divisor for CPU loads.
pub(crate) fn cpus() -> f64 {
    crate::base::sync::available_parallelism().map_or(1.0, |n| n.get() as f64)
}

/// The values of `jdk.ContainerConfiguration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContainerConfig {
    pub(crate) kind: String,
    pub(crate) period_us: i64,
    pub(crate) quota_us: i64,
    pub(crate) shares: i64,
    pub(crate) cpus: i64,
    pub(crate) soft_limit: i64,
    pub(crate) limit: i64,
    pub(crate) swap_limit: i64,
    pub(crate) host_memory: i64,
    pub(crate) host_swap: i64,
}

/// Reads the container configuration of `cgroup` (`None`: no cgroup).
pub(crate) fn container_config(cgroup: Option<&Cgroup>) -> Option<ContainerConfig> {
    let meminfo = procfs::read("/proc/meminfo").unwrap_or_default();
    let host_memory = procfs::kb_field(&meminfo, "MemTotal").map_or(-1, |v| v as i64);
    let host_swap = procfs::kb_field(&meminfo, "SwapTotal").map_or(-1, |v| v as i64);
    let num = |p: std::path::PathBuf| {
        procfs::read(p)
            .as_deref()
            .and_then(procfs::limit)
            .unwrap_or(-1)
    };
    let (kind, period, quota, shares, soft, limit, swap) = match cgroup? {
        Cgroup::V2(dir) => {
            let max = procfs::read(dir.join("cpu.max")).unwrap_or_default();
            let mut f = max.split_ascii_whitespace();
            let quota = f.next().and_then(procfs::limit).unwrap_or(-1);
            let period = f.next().and_then(|p| p.parse().ok()).unwrap_or(-1);
            let shares = procfs::read(dir.join("cpu.weight"))
                .and_then(|w| w.trim().parse().ok())
                .map_or(-1, procfs::weight_to_shares);
            let limit = num(dir.join("memory.max"));
            let swap = num(dir.join("memory.swap.max"));
            // v2 gives the swap alone; the JDK reports memory + swap.
            let swap = if limit >= 0 && swap >= 0 {
                limit + swap
            } else {
                -1
            };
            (
                "cgroupv2",
                period,
                quota,
                shares,
                num(dir.join("memory.low")),
                limit,
                swap,
            )
        }
        Cgroup::V1(m) => {
            let cpu = |f: &str| m.get("cpu").map_or(-1, |d| num(d.join(f)));
            let mem = |f: &str| m.get("memory").map_or(-1, |d| num(d.join(f)));
            let shares = cpu("cpu.shares");
            (
                "cgroupv1",
                cpu("cpu.cfs_period_us"),
                cpu("cpu.cfs_quota_us"),
                if shares == 1024 { -1 } else { shares },
                mem("memory.soft_limit_in_bytes"),
                mem("memory.limit_in_bytes"),
                mem("memory.memsw.limit_in_bytes"),
            )
        }
    };
    let online = cpus() as i64;
    let cpus = if quota > 0 && period > 0 {
        ((quota + period - 1) / period).min(online).max(1)
    } else {
        online
    };
    Some(ContainerConfig {
        kind: kind.to_owned(),
        period_us: period,
        quota_us: quota,
        shares,
        cpus,
        soft_limit: soft,
        limit,
        swap_limit: swap,
        host_memory,
        host_swap,
    })
}

fn os_information(ticks: i64) {
    let version = os_version();
    emit(OsInformation {
        start_time: ticks,
        os_version: &version,
    });
}

/// `uname` and the distribution's name, as the JDK's `osVersion` holds.
pub(crate) fn os_version() -> String {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid out-pointer.
    let ok = unsafe { libc::uname(&mut u) } == 0;
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let mut s = String::new();
    if ok {
        s = format!(
            "uname: {} {} {} {} {}",
            field(&u.sysname),
            field(&u.nodename),
            field(&u.release),
            field(&u.version),
            field(&u.machine)
        );
    }
    if let Some(name) = procfs::read("/etc/os-release").and_then(|t| {
        t.lines().find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_owned())
        })
    }) {
        s.push('\n');
        s.push_str(&name);
    }
    s
}

fn cpu_information(ticks: i64) {
    let info = procfs::cpu_info(&procfs::read("/proc/cpuinfo").unwrap_or_default());
    let cpu = format!("{} {}", std::env::consts::ARCH, cpu_features(&info.flags));
    emit(CpuInformation {
        start_time: ticks,
        cpu: cpu.trim_end(),
        description: &info.model,
        sockets: info.sockets as i32,
        cores: info.cores as i32,
        hw_threads: info.hw_threads as i32,
    });
}

/// The notable instruction-set extensions among `/proc/cpuinfo`'s flags.
fn cpu_features(flags: &str) -> String {
    const NOTABLE: &[&str] = &[
        "ht", "sse2", "sse4_2", "avx", "avx2", "avx512f", "aes", "sha_ni", "bmi2",
    ];
    let have: Vec<&str> = flags
        .split_ascii_whitespace()
        .filter(|f| NOTABLE.contains(f))
        .collect();
    have.join(" ")
}

fn physical_memory(ticks: i64) {
    let Some((total, used)) = procfs::read("/proc/meminfo")
        .as_deref()
        .and_then(procfs::physical_memory)
    else {
        return;
    };
    emit(PhysicalMemory {
        start_time: ticks,
        total_size: total as i64,
        used_size: used as i64,
    });
}

/// The JDK's names for what `VirtualizationInformation` detects.
fn virtualization(ticks: i64) {
    let flags = procfs::read("/proc/cpuinfo")
        .map(|t| procfs::cpu_info(&t).flags)
        .unwrap_or_default();
    let vendor = procfs::read("/sys/class/dmi/id/sys_vendor").unwrap_or_default()
        + &procfs::read("/sys/class/dmi/id/product_name").unwrap_or_default();
    let name = if !flags.split_ascii_whitespace().any(|f| f == "hypervisor") {
        "No virtualization detected"
    } else if vendor.contains("VMware") {
        "VMWare virtualization"
    } else if vendor.contains("Microsoft") {
        "Hyper-V virtualization"
    } else if vendor.contains("Xen") {
        "Xen virtualization"
    } else if vendor.contains("QEMU") || vendor.contains("KVM") || vendor.contains("Amazon") {
        "KVM virtualization"
    } else {
        "Unknown virtualization"
    };
    emit(VirtualizationInformation {
        start_time: ticks,
        name,
    });
}

fn native_libraries(ticks: i64) {
    let Some(maps) = procfs::read("/proc/self/maps") else {
        return;
    };
    for (name, lo, hi) in procfs::native_libraries(&maps) {
        emit(NativeLibrary {
            start_time: ticks,
            name: &name,
            base_address: lo as i64,
            top_address: hi as i64,
        });
    }
}

fn environment(ticks: i64) {
    for (k, v) in std::env::vars_os() {
        let (k, v) = (k.to_string_lossy(), v.to_string_lossy());
        emit(InitialEnvironmentVariable {
            start_time: ticks,
            key: &k,
            value: &v,
        });
    }
}

fn process_information(ticks: i64) {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let cmdline = procfs::read("/proc/self/cmdline")
        .map(|c| c.trim_end_matches('\0').replace('\0', " "))
        .unwrap_or_default();
    emit(ProcessInformation {
        start_time: ticks,
        pid: i64::from(std::process::id()),
        executable: &exe,
        command_line: &cmdline,
    });
}

fn time_stamp_counter(ticks: i64) {
    let tsc = clock::reads_tsc();
    let freq = clock::ticks_per_second();
    emit(CpuTimeStampCounter {
        start_time: ticks,
        fast_time_enabled: tsc,
        fast_time_auto_enabled: tsc,
        os_frequency: 1_000_000_000,
        fast_time_frequency: freq,
    });
}

impl SystemEvents {
    fn resident_set_size(&mut self, ticks: i64) {
        let Some(status) = self.self_status.read() else {
            return;
        };
        let (Some(rss), Some(peak)) = (
            procfs::kb_field(status, "VmRSS"),
            procfs::kb_field(status, "VmHWM"),
        ) else {
            return;
        };
        emit(ResidentSetSize {
            start_time: ticks,
            size: rss as i64,
            peak: peak as i64,
        });
    }
}
