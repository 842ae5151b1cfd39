//! Reading what the kernel says about the process and the machine:
//! `/proc` and the cgroup file systems. Parsers are pure functions over the
//! file's text (tested on fixed inputs); readers return `None` when a file
//! is missing or unreadable, and the event is then skipped.
//!
//! # Files read every period
//!
//! A file read at every period (`/proc/self/stat`, `/proc/stat`,
//! `/proc/self/status`, ...) is a [`ProcFile`]: opened once, then read
//! again from its start with `pread` into the same buffer, and parsed
//! from those bytes without allocating. Against an open, read, close and a
//! fresh `String`, that saves two system calls, the path walk and the
//! allocation, about 5 µs of each 13 µs read. These files are `seq_file`s,
//! whose read returns the whole text when it fits the buffer, so a read
//! that does not fill the buffer is the end of the file (one system call
//! per read once the buffer has grown to the file's size).
//!
//! Invariant: every reader does one file read per call, with no allocation
//! that grows with anything but the file's size; a [`ProcFile`] allocates
//! only when the file outgrows its buffer.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Reads a small file as text (files read once per chunk or rarer).
pub(crate) fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// A file kept open and read again from its start (module docs).
///
/// `/proc/self/...` names the process that opened it: after a `fork` the
/// child's copy still reads the parent, so a [`ProcFile`] belongs to the
/// periodic thread's state, which a child that records builds anew.
#[derive(Debug)]
pub(crate) struct ProcFile {
    file: Option<File>,
    buf: Vec<u8>,
}

impl ProcFile {
    /// Opens `path` (`None` inside if it cannot be: every read then
    /// returns `None`).
    pub(crate) fn open(path: impl AsRef<Path>) -> Self {
        Self {
            file: File::open(path).ok(),
            buf: vec![0; 1024],
        }
    }

    /// The file's text now, in the kept buffer.
    pub(crate) fn read(&mut self) -> Option<&str> {
        let file = self.file.as_ref()?;
        let mut n = 0;
        loop {
            match file.read_at(&mut self.buf[n..], n as u64) {
                Ok(0) => break,
                Ok(k) => {
                    n += k;
                    if n < self.buf.len() {
                        // A short read of a `seq_file`: the end (module docs).
                        break;
                    }
                    let grown = self.buf.len() * 2;
                    self.buf.resize(grown, 0);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        std::str::from_utf8(&self.buf[..n]).ok()
    }
}

/// Clock ticks per second of `/proc`'s times (`sysconf(_SC_CLK_TCK)`).
pub(crate) fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as u64 } else { 100 }
}

/// User and system time, in clock ticks, from a `stat` line
/// (`/proc/self/stat`, `/proc/self/task/TID/stat`): fields 14 and 15,
/// counted after the command name's closing parenthesis (the name may
/// hold spaces and parentheses).
pub(crate) fn stat_times(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_ascii_whitespace();
    // After ')': state(3) ppid(4) ... utime is field 14: skip 11.
    let utime = f.nth(11)?.parse().ok()?;
    let stime = f.next()?.parse().ok()?;
    Some((utime, stime))
}

/// Busy and total jiffies of all CPUs from `/proc/stat`'s first line
/// (idle and iowait count as idle).
pub(crate) fn machine_times(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().next()?;
    let mut f = line.split_ascii_whitespace();
    if f.next()? != "cpu" {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is in user).
    let (mut total, mut idle, mut fields) = (0u64, 0u64, 0);
    for (i, v) in f.filter_map(|x| x.parse::<u64>().ok()).take(8).enumerate() {
        total += v;
        if i == 3 || i == 4 {
            idle += v;
        }
        fields += 1;
    }
    if fields < 4 {
        return None;
    }
    Some((total - idle, total))
}

/// A `Key: value kB` field of `/proc/meminfo` or `/proc/self/status`, in
/// bytes.
pub(crate) fn kb_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let v = l.strip_prefix(key)?.strip_prefix(':')?;
        let n: u64 = v.split_ascii_whitespace().next()?.parse().ok()?;
        Some(n * 1024)
    })
}

/// Physical memory: total and used (total minus available), from
/// `/proc/meminfo`.
pub(crate) fn physical_memory(meminfo: &str) -> Option<(u64, u64)> {
    let total = kb_field(meminfo, "MemTotal")?;
    let avail = kb_field(meminfo, "MemAvailable")
        .or_else(|| kb_field(meminfo, "MemFree"))
        .unwrap_or(0);
    Some((total, total.saturating_sub(avail)))
}

/// What `/proc/cpuinfo` says about the processors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct CpuInfo {
    /// `model name` of the first processor (the architecture if none).
    pub(crate) model: String,
    /// Distinct `physical id`s (1 if none is given).
    pub(crate) sockets: u32,
    /// Distinct (`physical id`, `core id`) pairs (the hardware threads if
    /// none is given).
    pub(crate) cores: u32,
    /// `processor` entries.
    pub(crate) hw_threads: u32,
    /// The `flags` of the first processor.
    pub(crate) flags: String,
}

/// Parses `/proc/cpuinfo`.
pub(crate) fn cpu_info(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    let mut sockets = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut physical = String::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" => info.hw_threads += 1,
            "model name" if info.model.is_empty() => info.model = v.to_owned(),
            "flags" if info.flags.is_empty() => info.flags = v.to_owned(),
            "physical id" => {
                physical = v.to_owned();
                sockets.insert(v.to_owned());
            }
            "core id" => {
                cores.insert((physical.clone(), v.to_owned()));
            }
            _ => {}
        }
    }
    info.sockets = (sockets.len() as u32).max(1);
    info.cores = if cores.is_empty() {
        info.hw_threads
    } else {
        cores.len() as u32
    };
    if info.model.is_empty() {
        info.model = std::env::consts::ARCH.to_owned();
    }
    info
}

/// Loaded objects from `/proc/self/maps`: path → (lowest, highest
/// address), in the order first mapped. An object the loader mapped is a
/// run of adjacent mappings of its file, one of them executable; other
/// mappings of a file (a data file, a debug file the symbolizer reads, the
/// program's own file mapped again for reading) are not libraries.
pub(crate) fn native_libraries(maps: &str) -> Vec<(String, u64, u64)> {
    let mut out: Vec<(String, u64, u64)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    // The run being read: path, lowest, highest, executable.
    let mut run: Option<(&str, u64, u64, bool)> = None;
    fn flush<'m>(
        run: Option<(&'m str, u64, u64, bool)>,
        seen: &mut HashSet<&'m str>,
        out: &mut Vec<(String, u64, u64)>,
    ) {
        if let Some((path, lo, hi, true)) = run
            && seen.insert(path)
        {
            out.push((path.to_owned(), lo, hi));
        }
    }
    for line in maps.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(range), Some(perms), Some(_off), Some(_dev), Some(_inode)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        let path = f.next().filter(|p| p.starts_with('/'));
        let exec = perms.contains('x');
        match (&mut run, path) {
            (Some((p, _, end, x)), Some(path)) if *p == path && *end == lo => {
                *end = hi;
                *x |= exec;
            }
            _ => {
                flush(run.take(), &mut seen, &mut out);
                run = path.map(|p| (p, lo, hi, exec));
            }
        }
    }
    flush(run, &mut seen, &mut out);
    out
}

/// Bytes received and sent per interface, from `/proc/net/dev`.
pub(crate) fn net_dev(text: &str) -> Vec<(String, u64, u64)> {
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let v: Vec<u64> = rest
                .split_ascii_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            Some((name.trim().to_owned(), *v.first()?, *v.get(8)?))
        })
        .collect()
}

/// The cgroup the process is in, and where its controllers' files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cgroup {
    /// Unified hierarchy: one directory.
    V2(PathBuf),
    /// Legacy: a directory per controller (`cpu`, `cpuacct`, `memory`,
    /// `blkio`), those that are mounted.
    V1(HashMap<String, PathBuf>),
}

/// Finds the process's cgroup from `/proc/self/cgroup` and the mounts in
/// `/proc/self/mountinfo`. `None` if neither hierarchy is readable.
pub(crate) fn cgroup() -> Option<Cgroup> {
    let own = read("/proc/self/cgroup")?;
    let mounts = read("/proc/self/mountinfo").unwrap_or_default();
    locate_cgroup(&own, &mounts, |p| p.exists())
}

/// [`cgroup`] over given texts; `exists` tells whether a directory exists.
pub(crate) fn locate_cgroup(
    own: &str,
    mountinfo: &str,
    exists: impl Fn(&Path) -> bool,
) -> Option<Cgroup> {
    // mountinfo: id parent maj:min root mountpoint opts ... - fstype src superopts
    let mut v2_mount = None;
    let mut v1_mounts: Vec<(String, PathBuf, String)> = Vec::new();
    for line in mountinfo.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split_ascii_whitespace().collect();
        let post: Vec<&str> = post.split_ascii_whitespace().collect();
        if pre.len() < 5 || post.is_empty() {
            continue;
        }
        let (root, point) = (pre[3].to_owned(), PathBuf::from(pre[4]));
        match post[0] {
            "cgroup2" => v2_mount = Some((root, point)),
            "cgroup" => {
                let opts = post.get(2).copied().unwrap_or("");
                for c in opts.split(',') {
                    v1_mounts.push((c.to_owned(), point.clone(), root.clone()));
                }
            }
            _ => {}
        }
    }
    let join = |point: &Path, root: &str, path: &str| {
        let rel = path.strip_prefix(root).unwrap_or(path);
        point.join(rel.trim_start_matches('/'))
    };
    let mut v1 = HashMap::new();
    let mut v2 = None;
    for line in own.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_id), Some(ctrls), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if ctrls.is_empty() {
            if let Some((root, point)) = &v2_mount {
                v2 = Some(join(point, root, path));
            }
            continue;
        }
        for c in ctrls.split(',') {
            if let Some((_, point, root)) = v1_mounts.iter().find(|(n, _, _)| n == c) {
                v1.insert(c.to_owned(), join(point, root, path));
            }
        }
    }
    if v1.contains_key("memory") || v1.contains_key("cpu") {
        return Some(Cgroup::V1(
            v1.into_iter().filter(|(_, p)| exists(p)).collect(),
        ));
    }
    v2.filter(|p| exists(p) && exists(&p.join("cgroup.controllers")))
        .map(Cgroup::V2)
}

/// A number from a cgroup file: `max` (v2) and v1's "unlimited"
/// (≥ 2^62) become -1, as the JDK reports no limit.
pub(crate) fn limit(text: &str) -> Option<i64> {
    let t = text.split_ascii_whitespace().next()?;
    if t == "max" {
        return Some(-1);
    }
    let v: u64 = t.parse().ok()?;
    Some(if v >= 1 << 62 { -1 } else { v as i64 })
}

/// `key value` lines (`cpu.stat`, `memory.events`, `memory.stat`).
pub(crate) fn flat_keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// Sums `key=value` over the lines of a v2 `io.stat`.
pub(crate) fn io_stat_sum(text: &str, keys: &[&str]) -> u64 {
    text.split_ascii_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| keys.contains(k))
        .filter_map(|(_, v)| v.parse::<u64>().ok())
        .sum()
}

/// Sums the `Total` lines of v1 `blkio.throttle.io_service*` files.
pub(crate) fn blkio_total(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_ascii_whitespace();
            let a = f.next()?;
            let b = f.next()?;
            let c = f.next();
            // "MAJ:MIN Op N" lines; "Total N" is the sum, skipped per device.
            match c {
                Some(n) if b == "Total" => n.parse::<u64>().ok(),
                None if a == "Total" => None,
                _ => None,
            }
        })
        .sum()
}

/// The JDK's conversion of cgroup v2 `cpu.weight` to v1 shares (-1 for the
/// default weight 100, meaning "no shares set").
pub(crate) fn weight_to_shares(weight: u64) -> i64 {
    if weight == 100 {
        return -1;
    }
    // OpenJDK's CgroupV2Subsystem::cpu_shares.
    let x = 262_142i64 * weight as i64 - 1;
    let frac = x as f64 / 9999.0;
    let x = frac as i64 + 2;
    let f = x as f64 / 1024.0;
    let lower = (f as i64) * 1024;
    let upper = lower + 1024;
    let shares = if (x - lower) < (upper - x) {
        lower
    } else {
        upper
    };
    shares.max(1024.min(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_times_skip_a_name_with_spaces_and_parens() {
        let s = "42 (a (b) c) R 1 42 42 0 -1 4194304 100 0 0 0 250 37 0 0 20 0 3 0";
        assert_eq!(stat_times(s), Some((250, 37)));
    }

    #[test]
    fn machine_times_count_iowait_as_idle() {
        let s = "cpu  100 5 50 800 40 1 2 3 9 9\ncpu0 1 2 3 4\n";
        // total = 100+5+50+800+40+1+2+3 = 1001, idle = 840
        assert_eq!(machine_times(s), Some((161, 1001)));
    }

    #[test]
    fn meminfo_and_cpuinfo() {
        let m = "MemTotal:       16000 kB\nMemFree:  1000 kB\nMemAvailable:   4000 kB\n";
        assert_eq!(physical_memory(m), Some((16000 * 1024, 12000 * 1024)));
        let c = "processor\t: 0\nmodel name\t: X CPU\nphysical id\t: 0\ncore id\t: 0\n\n\
                 processor\t: 1\nmodel name\t: X CPU\nphysical id\t: 0\ncore id\t: 0\n\n\
                 processor\t: 2\nphysical id\t: 1\ncore id\t: 0\n";
        let i = cpu_info(c);
        assert_eq!((i.sockets, i.cores, i.hw_threads), (2, 2, 3));
        assert_eq!(i.model, "X CPU");
    }

    #[test]
    fn maps_group_by_path() {
        let m = "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/x\n\
                 00452000-00652000 rw-p 00051000 08:02 173521 /usr/bin/x\n\
                 7f00-7f10 rw-p 00000000 00:00 0 \n\
                 7f10-7f20 r--p 00000000 00:00 0 [heap]\n\
                 7f20-7f30 r--p 00000000 08:02 99 /usr/lib/debug/.build-id/ab/cd.debug\n\
                 7f30-7f40 r--p 00000000 08:02 173521 /usr/bin/x\n\
                 7f50-7f60 r--p 00000000 08:02 77 /usr/lib/libz.so\n\
                 7f60-7f70 r-xp 00001000 08:02 77 /usr/lib/libz.so\n\
                 7f70-7f80 rw-p 00002000 08:02 77 /usr/lib/libz.so\n";
        assert_eq!(
            native_libraries(m),
            vec![
                ("/usr/bin/x".to_owned(), 0x400000, 0x652000),
                ("/usr/lib/libz.so".to_owned(), 0x7f50, 0x7f80),
            ]
        );
    }

    #[test]
    fn cgroups_v1_and_v2_are_found() {
        let mounts = "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let v2 = locate_cgroup("0::/app.slice\n", mounts, |_| true);
        assert_eq!(
            v2,
            Some(Cgroup::V2(PathBuf::from("/sys/fs/cgroup/app.slice")))
        );
        let mounts = "31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
                      32 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        let Some(Cgroup::V1(m)) =
            locate_cgroup("4:memory:/x/y\n3:cpu,cpuacct:/\n", mounts, |_| true)
        else {
            panic!("v1 not found")
        };
        assert_eq!(m["memory"], PathBuf::from("/sys/fs/cgroup/memory/x/y"));
        assert_eq!(m["cpu"], PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"));
        assert_eq!(limit("max\n"), Some(-1));
        assert_eq!(limit("9223372036854771712\n"), Some(-1));
        assert_eq!(limit("1048576\n"), Some(1 << 20));
        assert_eq!(weight_to_shares(100), -1);
        assert_eq!(
            io_stat_sum("8:0 rbytes=10 wbytes=5 rios=1 wios=2\n", &["rios", "wios"]),
            3
        );
        assert_eq!(
            blkio_total("8:0 Read 4\n8:0 Write 6\n8:0 Total 10\nTotal 10\n"),
            10
        );
        assert_eq!(
            net_dev("h1\nh2\n  lo: 100 1 0 0 0 0 0 0 200 2 0\n"),
            vec![("lo".into(), 100, 200)]
        );
    }
}
