//! Resolving instruction addresses of this process to named frames.
//!
//! # Mechanism
//!
//! [`Symbolizer`] wraps a `blazesym` symbolizer over the current process. For
//! each batch of addresses it has not seen, blazesym reads `/proc/self/maps`
//! afresh, finds the ELF object each address falls into (the main binary, a
//! shared library, the vDSO, or a library `dlopen`ed since the last call),
//! and looks the address up in the object's DWARF (function names, inlined
//! calls, file and line) or, without debug info, its ELF symbol table. Names
//! come back demangled, without the legacy hash. Each address expands to one
//! frame per inlined call, innermost first, plus the frame of the function
//! that physically contains the address; [`names`](super::names) maps each
//! name to a JFR class and method.
//!
//! # Names from `line-tables-only` builds
//!
//! With `debug = "line-tables-only"` (our release profile) rustc writes
//! DWARF functions without linkage name, so they come back as bare `inner`
//! or `push<u8>`. For the physical function a second, ELF-only lookup of the
//! same addresses fetches the full symbol (`my_crate::work::inner`), used
//! when it starts at the same address as the DWARF function. Inlined
//! functions have no symbol of their own; their class is guessed from their
//! source file (`library/core/src/option.rs` gives `core/option`).
//!
//! # Cache
//!
//! Results are cached per address, so an address costs one hash lookup after
//! its first resolution. Only addresses that were resolved are cached: an
//! address never asked for always goes to blazesym, which is what makes
//! libraries loaded later resolve. A library unloaded and replaced by another
//! at the same addresses would keep its old names; nothing we record does that.
//!
//! # Memory
//!
//! blazesym keeps every object it opened mapped, and its parsed DWARF
//! (units, line programs, decompressed sections) on the heap: for a
//! program built with debug info, tens of MB, far more than the constant
//! pools, and proportional to the debug info of the objects looked up,
//! not to what is recorded. Parsing it again costs the recorder thread
//! from a fraction of a second to seconds, so it is kept while new
//! addresses come: [`Symbolizer::release_idle_objects`] lets go of it once
//! a whole chunk needed no new address (a program whose code paths are
//! known holds none of it). It is also bounded: the recorder gives the
//! symbolizer an allowance as large as `max_memory`, and an object whose
//! debug info would not fit is named from its ELF symbols alone (see
//! [`debug_budget`](super::debug_budget)). The per-address cache is measured
//! ([`Symbolizer::cache_bytes`], counted with the constant pools) and
//! dropped by [`Symbolizer::trim_cache`] when it grows past the limit it is
//! given.

//! # Addresses
//!
//! Addresses are looked up exactly as given. For call frames that must be the
//! return address minus one (see [`capture`](fn@super::capture)), or the frame's
//! line and inlined calls would be those of the instruction after the call.
//!
//! Invariant: [`Symbolizer::resolve`] returns at least one frame for every
//! address, innermost first, exactly one of them (the last) with
//! `inlined == false`.
//!
//! This runs off the hot path, on the recorder thread (and later the CPU
//! sampler's consumer thread); it allocates, reads files and may take
//! milliseconds on first use of an object.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use blazesym::Pid;
use blazesym::symbolize::source::{Elf, Process, Source};
use blazesym::symbolize::{CodeInfo, Input, Sym, Symbolized};

use super::debug_budget::DebugInfoBudget;
use super::names::{JfrName, has_path, jfr_name};

/// One frame of a resolved address, in JFR's class/method model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedFrame {
    /// The class's package in internal form (`my_crate/module`), or empty.
    pub package: String,
    /// The class in internal form (`my_crate/module/Type`, `libc.so.6`).
    pub class: String,
    /// The method (`method`, `main::{{closure}}`, `[unknown]`).
    pub method: String,
    /// The source file, if debug info names it.
    pub file: Option<String>,
    /// The source line, if debug info has it.
    pub line: Option<u32>,
    /// Whether this frame was inlined into the frame after it.
    pub inlined: bool,
}

impl ResolvedFrame {
    /// A frame of the function `symbol`, in the object `module`, at `code`.
    fn new(symbol: &str, module: Option<&str>, code: Option<&CodeInfo<'_>>, inlined: bool) -> Self {
        let file = code.map(|code| code.to_path().to_string_lossy().into_owned());
        let JfrName {
            package,
            class,
            method,
        } = jfr_name(symbol, module, file.as_deref());
        Self {
            package,
            class,
            method,
            file,
            line: code.and_then(|code| code.line).filter(|&line| line > 0),
            inlined,
        }
    }

    /// The frame of an address that could not be symbolized.
    fn unknown() -> Self {
        let JfrName {
            package,
            class,
            method,
        } = JfrName::unknown(None);
        Self {
            package,
            class,
            method,
            file: None,
            line: None,
            inlined: false,
        }
    }
}

/// Resolves instruction addresses of this process to frames, with a cache.
pub struct Symbolizer {
    /// blazesym's symbolizer; it caches parsed objects between calls.
    inner: blazesym::symbolize::Symbolizer,
    /// Frames per looked-up address, innermost first, never empty.
    cache: HashMap<u64, Box<[ResolvedFrame]>>,
    /// Returned when a lookup failed as a whole (not cached: may be transient).
    unknown: [ResolvedFrame; 1],
    /// Estimated bytes of `cache` (entries, frames and their strings).
    cache_bytes: usize,
    /// `inner` looked something up since it was made.
    loaded: bool,
    /// `inner` looked something up since the last
    /// [`Self::release_idle_objects`].
    used: bool,
    /// Which objects' debug info `inner` may read.
    budget: DebugInfoBudget,
}

/// Estimated bytes of a cache entry besides its frames: the map's slot
/// (key, boxed slice, control byte, load factor) and the allocation's
/// header.
const CACHE_SLOT: usize = 48;

/// Estimated bytes of `frames` in the cache.
fn frames_bytes(frames: &[ResolvedFrame]) -> usize {
    frames
        .iter()
        .map(|f| {
            std::mem::size_of::<ResolvedFrame>()
                + f.package.len()
                + f.class.len()
                + f.method.len()
                + f.file.as_ref().map_or(0, String::len)
        })
        .sum()
}

/// `Symbolizer` may move to another thread (the recorder builds it, then
/// hands it to its writer thread). blazesym's symbolizer is `!Send` only
/// because it shares parsed objects among its own caches through `Rc` and
/// `RefCell`: every `Rc` clone stays inside the one blazesym `Symbolizer` we
/// own, and nothing borrowed from it outlives [`Symbolizer::prefetch`] (the
/// results are copied into owned [`ResolvedFrame`]s), so a move takes all
/// clones along and no count is ever touched from two threads. blazesym
/// keeps no thread-local or global state that a move would leave behind
/// (checked for 0.2.3 to 0.2.7: no `thread_local!`, no mutable statics;
/// re-check when upgrading). Not `Sync`: `&Symbolizer` across threads would
/// share the `Rc`s.
// SAFETY: see above; the move carries every owner of the non-atomic counts.
unsafe impl Send for Symbolizer {}

impl fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Symbolizer")
            .field("cached", &self.cache.len())
            .finish_non_exhaustive()
    }
}

impl Default for Symbolizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Symbolizer {
    /// Creates a symbolizer for the current process, with an empty cache.
    pub fn new() -> Self {
        Self {
            inner: Self::fresh_inner(),
            cache: HashMap::new(),
            unknown: [ResolvedFrame::unknown()],
            cache_bytes: 0,
            loaded: false,
            used: false,
            budget: DebugInfoBudget::unlimited(),
        }
    }

    /// Limits the estimated bytes of the debug info read from now on (see
    /// [`debug_budget`](super::debug_budget)); the objects of addresses
    /// past it are named from their ELF symbols only (no inlined calls, no
    /// lines). Without a limit every object's debug info is read.
    pub fn set_debug_info_limit(&mut self, bytes: usize) {
        self.budget.set_limit(bytes);
    }

    /// Estimated bytes of the debug info held now.
    pub fn debug_info_bytes(&self) -> usize {
        self.budget.held()
    }

    /// Objects named from their ELF symbols only, to stay within the
    /// limit, since the last release.
    pub fn objects_without_debug_info(&self) -> usize {
        self.budget.denied()
    }

    fn fresh_inner() -> blazesym::symbolize::Symbolizer {
        blazesym::symbolize::Symbolizer::builder()
            .enable_demangling(true)
            .enable_inlined_fns(true)
            .enable_code_info(true)
            .enable_auto_reload(true)
            .build()
    }

    /// Estimated bytes of the per-address cache.
    pub fn cache_bytes(&self) -> usize {
        self.cache_bytes
    }

    /// Called at each chunk's end: lets go of the objects blazesym opened
    /// and parsed (see the module docs, "Memory") if it opened any and
    /// looked nothing up since the previous call (a whole chunk without a
    /// new address). The next new address opens its object again.
    pub fn release_idle_objects(&mut self) {
        if self.loaded && !self.used {
            self.inner = Self::fresh_inner();
            self.loaded = false;
            self.budget.released();
        }
        self.used = false;
    }

    /// Empties the per-address cache if its estimated bytes exceed `limit`.
    pub fn trim_cache(&mut self, limit: usize) {
        if self.cache_bytes > limit {
            self.cache = HashMap::new();
            self.cache_bytes = 0;
        }
    }

    /// The frames at `addr` (a return address minus one for call frames),
    /// innermost first: inlined calls, then the containing function. Never
    /// empty; an address that cannot be symbolized gives one `[unknown]`
    /// frame.
    pub fn resolve(&mut self, addr: u64) -> &[ResolvedFrame] {
        if !self.cache.contains_key(&addr) {
            self.prefetch(&[addr]);
        }
        self.cache
            .get(&addr)
            .map_or(&self.unknown[..], |frames| &frames[..])
    }

    /// Resolves the addresses of `addrs` that are not cached yet, in one
    /// batch (one read of `/proc/self/maps`, two if some names need the ELF
    /// symbol table). Call it with a whole stack before
    /// [`resolve`](Self::resolve)-ing its addresses one by one.
    pub fn prefetch(&mut self, addrs: &[u64]) {
        let mut misses: Vec<u64> = addrs
            .iter()
            .copied()
            .filter(|a| !self.cache.contains_key(a))
            .collect();
        misses.sort_unstable();
        misses.dedup();
        if misses.is_empty() {
            return;
        }
        self.used = true;
        self.loaded = true;
        let split = self.budget.split(&misses);
        let mut resolved: Vec<(u64, Box<[ResolvedFrame]>)> = Vec::with_capacity(misses.len());
        for (addrs, debug_syms) in [(split.with_debug, true), (split.symbols_only, false)] {
            if addrs.is_empty() {
                continue;
            }
            let Ok(results) = self
                .inner
                .symbolize(&process_source(debug_syms), Input::AbsAddr(&addrs[..]))
            else {
                // Maps unreadable: answer `[unknown]` now, retry next time.
                continue;
            };
            let elf_names = if debug_syms {
                self.elf_names(&addrs, &results)
            } else {
                HashMap::new()
            };
            resolved.extend(addrs.iter().zip(&results).map(|(&addr, result)| {
                let elf_name = elf_names.get(&addr).map(String::as_str);
                (addr, frames_of(result, elf_name, None))
            }));
        }
        for separate in split.separate {
            let mut elf = Elf::new(&separate.file);
            elf.debug_syms = false;
            let Ok(results) = self
                .inner
                .symbolize(&Source::Elf(elf), Input::VirtOffset(&separate.virt[..]))
            else {
                continue;
            };
            let module = Some(separate.module.as_str());
            resolved.extend(
                (separate.addrs.iter().zip(&results))
                    .map(|(&addr, result)| (addr, frames_of(result, None, module))),
            );
        }
        self.cache_bytes += resolved
            .iter()
            .map(|(_, frames)| CACHE_SLOT + frames_bytes(frames))
            .sum::<usize>();
        self.cache.extend(resolved);
    }

    /// Full ELF symbol names for the addresses whose DWARF function name has
    /// no path, when the symbol starts where the DWARF function does.
    fn elf_names(&self, addrs: &[u64], results: &[Symbolized<'_>]) -> HashMap<u64, String> {
        let pathless: Vec<(u64, &Sym<'_>)> = addrs
            .iter()
            .zip(results)
            .filter_map(|(&addr, result)| result.as_sym().map(|sym| (addr, sym)))
            .filter(|(_, sym)| !has_path(&sym.name))
            .collect();
        if pathless.is_empty() {
            return HashMap::new();
        }
        let lookup: Vec<u64> = pathless.iter().map(|&(addr, _)| addr).collect();
        let Ok(elf) = self
            .inner
            .symbolize(&process_source(false), Input::AbsAddr(&lookup[..]))
        else {
            return HashMap::new();
        };
        pathless
            .iter()
            .zip(&elf)
            .filter_map(|(&(addr, dwarf), elf)| {
                let elf = elf.as_sym()?;
                (elf.addr == dwarf.addr && has_path(&elf.name))
                    .then(|| (addr, elf.name.to_string()))
            })
            .collect()
    }
}

/// The current process as a blazesym source, with or without DWARF.
fn process_source(debug_syms: bool) -> Source<'static> {
    let mut process = Process::new(Pid::Slf);
    process.debug_syms = debug_syms;
    // Symbolic paths from /proc/self/maps name the library (`libc.so.6`);
    // for our own process they are as reliable as `map_files` entries and
    // need no privilege.
    process.map_files = false;
    process.perf_map = false;
    Source::Process(process)
}

/// Expands one blazesym result to frames, innermost first; `elf_name`
/// replaces a pathless DWARF name of the physical function, `module` the
/// name of the object blazesym read (a separate debug file's).
fn frames_of(
    result: &Symbolized<'_>,
    elf_name: Option<&str>,
    module: Option<&str>,
) -> Box<[ResolvedFrame]> {
    let Symbolized::Sym(sym) = result else {
        return Box::new([ResolvedFrame::unknown()]);
    };
    let own = module_name(sym);
    let module = module.or(own.as_deref());
    // `sym.inlined` runs outermost first; each entry's code info is the
    // location inside that function, the last one's the address itself.
    let inlined =
        sym.inlined.iter().rev().map(|inlined| {
            ResolvedFrame::new(&inlined.name, module, inlined.code_info.as_ref(), true)
        });
    let name = elf_name.unwrap_or(&sym.name);
    let physical = ResolvedFrame::new(name, module, sym.code_info.as_deref(), false);
    inlined.chain(std::iter::once(physical)).collect()
}

/// The file name of the object holding `sym` (`libc.so.6`, `[vdso]`).
fn module_name(sym: &Sym<'_>) -> Option<String> {
    let module = Path::new(sym.module.as_deref()?);
    let name = module.file_name().unwrap_or(module.as_os_str());
    Some(name.to_string_lossy().into_owned())
}
