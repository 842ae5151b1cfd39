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
//! recorder gives (an allowance as large as `max_memory`); otherwise its
//! addresses are named from its ELF symbols only.
//! [`DebugInfoBudget::released`] starts the sum again when the symbolizer
//! lets go of its parsed objects.
//!
//! A stripped object (a distribution's `libc.so.6`) has no symbol table of
//! its own, only the exported `.dynsym`; its separate debug file has the
//! full one. Such an object's addresses, when its debug info does not fit,
//! are looked up in that file's symbol table by their virtual address in
//! the object (the two files share their layout), so frames like
//! `start_thread` keep their names without any DWARF being read.
//!
//! Invariant: the estimated cost of the debug info the symbolizer holds
//! never exceeds the largest budget it was given since its last release.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment, ReadCache};

/// Parsed debug info costs about this many times its sections' size.
const COST_PER_BYTE: usize = 2;

/// What the budget needs to know of one object, read once.
#[derive(Debug, Default)]
struct ObjectInfo {
    /// Estimated bytes of reading its debug info.
    cost: usize,
    /// Its separate debug file, if it has no `.symtab` of its own but that
    /// file has one.
    symbols_elsewhere: Option<PathBuf>,
    /// Its loadable segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
}

/// Addresses of one stripped object, to be named from the symbol table of
/// its separate debug file.
#[derive(Debug)]
pub(crate) struct SeparateSymbols {
    /// The separate debug file.
    pub(crate) file: PathBuf,
    /// The object's own file name (`libc.so.6`), which names the frames.
    pub(crate) module: String,
    /// The addresses, as asked.
    pub(crate) addrs: Vec<u64>,
    /// The same addresses as virtual addresses of the object.
    pub(crate) virt: Vec<u64>,
}

/// Where each address of a batch is to be named from.
#[derive(Debug, Default)]
pub(crate) struct Split {
    /// From debug info (or from nothing: no file behind them).
    pub(crate) with_debug: Vec<u64>,
    /// From the ELF symbols of their own object.
    pub(crate) symbols_only: Vec<u64>,
    /// From the symbols of a separate debug file, per object.
    pub(crate) separate: Vec<SeparateSymbols>,
}

/// The objects whose debug info may be read, and what they cost.
#[derive(Debug)]
pub(crate) struct DebugInfoBudget {
    /// Bytes the debug info read since the last release may cost.
    limit: usize,
    /// Each object's facts.
    objects: HashMap<PathBuf, ObjectInfo>,
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
            objects: HashMap::new(),
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

    /// Splits `addrs` by where they are to be named from. Addresses outside
    /// any file (the vDSO, anonymous code) go with debug info: they have
    /// none to read.
    pub(crate) fn split(&mut self, addrs: &[u64]) -> Split {
        if self.limit == usize::MAX {
            return Split {
                with_debug: addrs.to_vec(),
                ..Split::default()
            };
        }
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let regions = file_regions(&maps);
        let mut split = Split::default();
        for &addr in addrs {
            let Some(region) = region_of(&regions, addr) else {
                split.with_debug.push(addr);
                continue;
            };
            if self.allow(region.path) {
                split.with_debug.push(addr);
                continue;
            }
            let info = &self.objects[region.path];
            let virt = info.symbols_elsewhere.as_ref().and_then(|file| {
                let offset = addr - region.start + region.offset;
                let &(seg_offset, _, seg_virt) = info
                    .segments
                    .iter()
                    .find(|&&(o, size, _)| (o..o + size).contains(&offset))?;
                Some((file, offset - seg_offset + seg_virt))
            });
            match virt {
                Some((file, virt)) => {
                    let at = match split.separate.iter().position(|s| &s.file == file) {
                        Some(i) => i,
                        None => {
                            split.separate.push(SeparateSymbols {
                                file: file.clone(),
                                module: file_name(region.path),
                                addrs: Vec::new(),
                                virt: Vec::new(),
                            });
                            split.separate.len() - 1
                        }
                    };
                    split.separate[at].addrs.push(addr);
                    split.separate[at].virt.push(virt);
                }
                None => split.symbols_only.push(addr),
            }
        }
        split
    }

    /// Whether `path`'s debug info fits, counting it as held if so.
    fn allow(&mut self, path: &Path) -> bool {
        if self.allowed.contains_key(path) {
            return true;
        }
        let cost = self
            .objects
            .entry(path.to_owned())
            .or_insert_with(|| object_info(path))
            .cost;
        if self.held().saturating_add(cost) <= self.limit {
            self.allowed.insert(path.to_owned(), cost);
            true
        } else {
            self.denied += 1;
            false
        }
    }
}

/// One executable file mapping of `/proc/self/maps`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Region<'m> {
    start: u64,
    end: u64,
    /// The file offset mapped at `start`.
    offset: u64,
    path: &'m Path,
}

/// File-backed executable regions of `/proc/self/maps`.
fn file_regions(maps: &str) -> Vec<Region<'_>> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(6, ' ');
            let (range, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
            let path = fields.nth(2)?.trim_start();
            if !perms.contains('x') || !path.starts_with('/') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            Some(Region {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                path: Path::new(path),
            })
        })
        .collect()
}

/// The file region mapped at `addr`, if any.
fn region_of<'r, 'm>(regions: &'r [Region<'m>], addr: u64) -> Option<&'r Region<'m>> {
    regions.iter().find(|r| (r.start..r.end).contains(&addr))
}

/// The file name of `path`, as frames name their object.
fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// What the budget needs of the object at `path`; an object that cannot be
/// read costs nothing (blazesym will not read it either).
fn object_info(path: &Path) -> ObjectInfo {
    let Ok(file) = File::open(path) else {
        return ObjectInfo::default();
    };
    let cache = ReadCache::new(file);
    let Ok(object) = object::File::parse(&cache) else {
        return ObjectInfo::default();
    };
    let separate = object
        .build_id()
        .ok()
        .flatten()
        .and_then(separate_debug_file);
    let (separate_cost, separate_symtab) = separate.as_deref().map_or((0, false), |p| {
        File::open(p).ok().map_or((0, false), |f| {
            let cache = ReadCache::new(f);
            object::File::parse(&cache).map_or((0, false), |o| {
                (
                    debug_section_bytes(&o),
                    o.section_by_name(".symtab").is_some(),
                )
            })
        })
    });
    let own_symtab = object.section_by_name(".symtab").is_some();
    ObjectInfo {
        cost: debug_section_bytes(&object)
            .saturating_add(separate_cost)
            .saturating_mul(COST_PER_BYTE),
        symbols_elsewhere: separate.filter(|_| !own_symtab && separate_symtab),
        segments: object
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                (offset, size, s.address())
            })
            .collect(),
    }
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

    fn path_at(r: &[Region<'_>], addr: u64) -> Option<(u64, PathBuf)> {
        region_of(r, addr).map(|r| (r.offset, r.path.to_owned()))
    }

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
            path_at(&r, 0x55d0c0002000),
            Some((0x1000, PathBuf::from("/usr/bin/app")))
        );
        assert_eq!(path_at(&r, 0x55d0c0000100), None, "not executable");
        assert_eq!(path_at(&r, 0x7ffd000c3100), None, "vdso");
        assert_eq!(
            path_at(&r, 0x7f1000000010),
            Some((
                0x28000,
                PathBuf::from("/usr/lib/x86_64-linux-gnu/libc.so.6")
            ))
        );
    }

    #[test]
    fn this_test_binary_has_debug_info_and_a_small_budget_refuses_it() {
        let exe = std::env::current_exe().unwrap();
        let cost = object_info(&exe).cost;
        assert!(cost > 0, "the test binary is built with debug info");
        let here = regions_are_the_executable_file_mappings as fn() as usize as u64;
        let mut budget = DebugInfoBudget::unlimited();
        budget.set_limit(cost - 1);
        let split = budget.split(&[here]);
        assert_eq!((split.with_debug.len(), split.symbols_only.len()), (0, 1));
        assert_eq!(budget.denied(), 1);
        budget.released();
        budget.set_limit(cost);
        let split = budget.split(&[here]);
        assert_eq!(
            (split.with_debug, split.symbols_only.len()),
            (vec![here], 0)
        );
        assert_eq!(budget.held(), cost);
    }

    #[test]
    fn a_stripped_library_is_named_from_its_separate_debug_file() {
        // libc's own code, at the address its `getpid` is called through.
        let addr = libc::getpid as *const () as usize as u64;
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let regions = file_regions(&maps);
        let Some(region) = region_of(&regions, addr) else {
            return;
        };
        let info = object_info(region.path);
        let Some(file) = info.symbols_elsewhere.clone() else {
            // No separate debug file installed for this libc: nothing to test.
            return;
        };
        let mut budget = DebugInfoBudget::unlimited();
        budget.set_limit(0);
        let split = budget.split(&[addr]);
        assert_eq!(split.separate.len(), 1, "{split:?}");
        let s = &split.separate[0];
        assert_eq!((&s.file, s.addrs.as_slice()), (&file, &[addr][..]));
        assert!(s.module.starts_with("libc"), "{}", s.module);
        // The virtual address lies in one of the object's segments.
        assert!(
            info.segments
                .iter()
                .any(|&(_, size, virt)| (virt..virt + size).contains(&s.virt[0])),
            "{:#x} in {:?}",
            s.virt[0],
            info.segments
        );
    }
}
