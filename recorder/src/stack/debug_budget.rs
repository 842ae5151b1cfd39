//! Which objects the symbolizer may read debug info (DWARF) of, within the
//! memory the recording allows.
//!
//! # Mechanism
//!
//! Reading an object's DWARF gives inlined calls, files and lines, but
//! blazesym then keeps the parsed units, line programs and decompressed
//! sections on the heap and the sections' pages mapped: measured, about
//! twice the object's debug sections (see `docs/memory.md`). Its ELF symbol
//! table alone costs a small fraction of that and still names every
//! function. So before a batch of addresses goes to blazesym,
//! [`DebugInfoBudget::split`] finds the object of each address in
//! `/proc/self/maps` and estimates what reading its debug info would cost:
//! twice the uncompressed size of its `.debug_*` sections, plus those of
//! its separate debug file (`/usr/lib/debug/.build-id/…`) if there is one.
//! The estimate reads section headers only, once per object.
//!
//! An object's DWARF is read while its cost, added to the cost of the other
//! objects already read since the last release, fits in the budget the
//! recorder gives (what the constant pools' share of `max_memory` has
//! left); otherwise its addresses are named from its ELF symbols only.
//! [`DebugInfoBudget::released`] starts the sum again when the symbolizer
//! lets go of its parsed objects.
//!
//! Invariant: the estimated cost of the debug info the symbolizer holds
//! never exceeds the largest budget it was given since its last release.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ReadCache};

/// Parsed debug info costs about this many times its sections' size.
const COST_PER_BYTE: usize = 2;

/// The objects whose debug info may be read, and what they cost.
#[derive(Debug)]
pub(crate) struct DebugInfoBudget {
    /// Bytes the debug info read since the last release may cost.
    limit: usize,
    /// Estimated cost of reading each object's debug info.
    costs: HashMap<PathBuf, usize>,
    /// Objects whose debug info was allowed since the last release.
    allowed: HashMap<PathBuf, usize>,
    /// Objects that had to go without since the last release.
    denied: usize,
}

impl DebugInfoBudget {
    /// No limit: every object's debug info is read.
    pub(crate) fn unlimited() -> Self {
        Self {
            limit: usize::MAX,
            costs: HashMap::new(),
            allowed: HashMap::new(),
            denied: 0,
        }
    }

    /// Sets the bytes the debug info may cost from now on; objects already
    /// read stay read until the next release.
    pub(crate) fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// The estimated bytes of the debug info allowed since the last release.
    pub(crate) fn held(&self) -> usize {
        self.allowed.values().sum()
    }

    /// Objects named from their symbols only since the last release.
    pub(crate) fn denied(&self) -> usize {
        self.denied
    }

    /// The symbolizer let go of every parsed object.
    pub(crate) fn released(&mut self) {
        self.allowed.clear();
        self.denied = 0;
    }

    /// Splits `addrs` into those that may be named from debug info and those
    /// named from ELF symbols only. Addresses outside any file (the vDSO,
    /// anonymous code) go to the first: they have no debug info to read.
    pub(crate) fn split(&mut self, addrs: &[u64]) -> (Vec<u64>, Vec<u64>) {
        if self.limit == usize::MAX {
            return (addrs.to_vec(), Vec::new());
        }
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let regions = file_regions(&maps);
        let mut with = Vec::new();
        let mut without = Vec::new();
        for &addr in addrs {
            let Some(path) = object_of(&regions, addr) else {
                with.push(addr);
                continue;
            };
            if self.allow(path) {
                with.push(addr);
            } else {
                without.push(addr);
            }
        }
        (with, without)
    }

    /// Whether `path`'s debug info fits, counting it as held if so.
    fn allow(&mut self, path: &Path) -> bool {
        if self.allowed.contains_key(path) {
            return true;
        }
        let cost = *self
            .costs
            .entry(path.to_owned())
            .or_insert_with(|| debug_info_cost(path));
        if self.held().saturating_add(cost) <= self.limit {
            self.allowed.insert(path.to_owned(), cost);
            true
        } else {
            self.denied += 1;
            false
        }
    }
}

/// File-backed executable regions of `/proc/self/maps`: (start, end, path).
fn file_regions(maps: &str) -> Vec<(u64, u64, &Path)> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(6, ' ');
            let (range, perms) = (fields.next()?, fields.next()?);
            let path = fields.nth(3)?.trim_start();
            if !perms.contains('x') || !path.starts_with('/') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?;
            Some((start, end, Path::new(path)))
        })
        .collect()
}

/// The object mapped at `addr`, if a file.
fn object_of<'m>(regions: &[(u64, u64, &'m Path)], addr: u64) -> Option<&'m Path> {
    regions
        .iter()
        .find(|&&(start, end, _)| (start..end).contains(&addr))
        .map(|&(_, _, path)| path)
}

/// Estimated bytes of reading `path`'s debug info: twice its `.debug_*`
/// sections, uncompressed, and those of its separate debug file. An object
/// that cannot be read costs nothing (blazesym will not read it either).
fn debug_info_cost(path: &Path) -> usize {
    let Ok(file) = File::open(path) else {
        return 0;
    };
    let cache = ReadCache::new(file);
    let Ok(object) = object::File::parse(&cache) else {
        return 0;
    };
    let own = debug_section_bytes(&object);
    let separate = object
        .build_id()
        .ok()
        .flatten()
        .and_then(separate_debug_file)
        .map_or(0, |p| {
            File::open(p).ok().map_or(0, |f| {
                let cache = ReadCache::new(f);
                object::File::parse(&cache).map_or(0, |o| debug_section_bytes(&o))
            })
        });
    own.saturating_add(separate).saturating_mul(COST_PER_BYTE)
}

/// The uncompressed bytes of an object's `.debug_*` sections.
fn debug_section_bytes<'d, R: object::ReadRef<'d>>(object: &object::File<'d, R>) -> usize {
    object
        .sections()
        .filter(|s| {
            s.name()
                .is_ok_and(|n| n.starts_with(".debug_") || n.starts_with(".zdebug_"))
        })
        .map(|s| {
            s.compressed_file_range()
                .map_or(s.size(), |r| r.uncompressed_size)
        })
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        .fold(0, usize::saturating_add)
}

/// Where a distribution keeps the debug info of the object with build id
/// `id`: `/usr/lib/debug/.build-id/ab/cdef….debug`.
fn separate_debug_file(id: &[u8]) -> Option<PathBuf> {
    let (first, rest) = id.split_first()?;
    let rest: String = rest.iter().map(|b| format!("{b:02x}")).collect();
    let path = PathBuf::from(format!("/usr/lib/debug/.build-id/{first:02x}/{rest}.debug"));
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_the_executable_file_mappings() {
        let maps = "\
55d0c0000000-55d0c0001000 r--p 00000000 08:01 123 /usr/bin/app
55d0c0001000-55d0c0005000 r-xp 00001000 08:01 123 /usr/bin/app
7f0000000000-7f0000021000 rw-p 00000000 00:00 0 
7ffd000c3000-7ffd000c5000 r-xp 00000000 00:00 0                          [vdso]
7f1000000000-7f1000100000 r-xp 00028000 08:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
";
        let r = file_regions(maps);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(
            object_of(&r, 0x55d0c0002000),
            Some(Path::new("/usr/bin/app"))
        );
        assert_eq!(object_of(&r, 0x55d0c0000100), None, "not executable");
        assert_eq!(object_of(&r, 0x7ffd000c3100), None, "vdso");
        assert_eq!(
            object_of(&r, 0x7f1000000010),
            Some(Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6"))
        );
    }

    #[test]
    fn this_test_binary_has_debug_info_and_a_small_budget_refuses_it() {
        let exe = std::env::current_exe().unwrap();
        let cost = debug_info_cost(&exe);
        assert!(cost > 0, "the test binary is built with debug info");
        let here = regions_are_the_executable_file_mappings as fn() as usize as u64;
        let mut budget = DebugInfoBudget::unlimited();
        budget.set_limit(cost - 1);
        let (with, without) = budget.split(&[here]);
        assert_eq!((with.len(), without.len()), (0, 1));
        assert_eq!(budget.denied(), 1);
        budget.released();
        budget.set_limit(cost);
        let (with, without) = budget.split(&[here]);
        assert_eq!((with, without.len()), (vec![here], 0));
        assert_eq!(budget.held(), cost);
    }
}
