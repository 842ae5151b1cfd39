//! Per-thread accumulators: what the hot path adds a timed call to.
//!
//! # Mechanism
//!
//! Each thread owns a table of accumulators (count, sum, minimum, maximum,
//! and the timing generation they belong to) indexed by site, in blocks of
//! [`BLOCK`] allocated on the thread's first call of a site in a block. Only
//! the owning thread writes them, with relaxed loads and stores and no
//! read-modify-write, on lines no other thread writes, so a call costs no
//! lock and no shared cache line. The recorder reads them (relaxed) when it
//! emits `jdk.MethodTiming`, under [`THREADS`]' lock, and sums the
//! accumulators of the site's current generation over live threads and the
//! totals retired threads left behind.
//!
//! A snapshot taken while a thread is mid-call may pair a count with the
//! previous sum (the fields are separate words); the next chunk's batch
//! includes the call. Values are exact once the threads are quiescent.
//!
//! Invariant: a table in [`THREADS`]`.live` is freed only by its thread's
//! exit, which removes it under the lock after folding it into `retired`;
//! the recorder reads tables only under the lock.

use std::ptr;

use crate::base::sync::global::{AtomicPtr, AtomicU64, Mutex, Ordering};

/// Accumulators per block.
pub(crate) const BLOCK: usize = 64;
const BLOCKS: usize = 256;
/// The most sites a table can index.
pub(crate) const MAX_SITES: usize = BLOCK * BLOCKS;

/// One thread's accumulator for one site.
#[derive(Debug)]
struct Acc {
    generation: AtomicU64,
    count: AtomicU64,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Acc {
    const fn new() -> Self {
        Self {
            generation: AtomicU64::new(0),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }
}

type Block = [Acc; BLOCK];

/// One thread's table.
#[derive(Debug)]
struct Table {
    blocks: [AtomicPtr<Block>; BLOCKS],
}

/// Summed values of one site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) count: u64,
    pub(crate) sum: u64,
    pub(crate) min: u64,
    pub(crate) max: u64,
}

impl Totals {
    const EMPTY: Self = Self {
        count: 0,
        sum: 0,
        min: u64::MAX,
        max: 0,
    };

    fn add(&mut self, o: Totals) {
        self.count += o.count;
        self.sum = self.sum.wrapping_add(o.sum);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
}

#[derive(Debug)]
struct TablePtr(*const Table);
// SAFETY: a table is only read through the pointer under `THREADS`' lock,
// and freed by its owner only after removing it under the same lock.
unsafe impl Send for TablePtr {}

#[derive(Debug)]
struct Threads {
    live: Vec<TablePtr>,
    /// (generation, totals) per site index, left by exited threads.
    retired: Vec<(u64, Totals)>,
}

static THREADS: Mutex<Threads> = Mutex::new(Threads {
    live: Vec::new(),
    retired: Vec::new(),
});

/// The calling thread's table: null before its first call, [`EXITED`]
/// after its exit.
const EXITED: *mut Table = ptr::dangling_mut::<Table>();

crate::base::sync::global::thread_local! {
    static CURRENT: AtomicPtr<Table> = const { AtomicPtr::new(ptr::null_mut()) };
    static OWNER: Owner = const { Owner };
}

/// Frees the thread's table at its exit.
struct Owner;

impl Drop for Owner {
    fn drop(&mut self) {
        let p = CURRENT.with(|c| c.swap(EXITED, Ordering::Relaxed));
        if p.is_null() || p == EXITED {
            return;
        }
        let mut t = THREADS.lock();
        t.live.retain(|l| !ptr::eq(l.0, p));
        // SAFETY: `p` was leaked by `first_call` on this thread and is no
        // longer in `live`, so nothing else reads it.
        let table = unsafe { Box::from_raw(p) };
        for (b, block) in table.blocks.iter().enumerate() {
            let block = block.load(Ordering::Relaxed);
            if block.is_null() {
                continue;
            }
            // SAFETY: allocated by `new_block` on this thread, owned by the table.
            let block = unsafe { Box::from_raw(block) };
            for (i, acc) in block.iter().enumerate() {
                retire(&mut t.retired, b * BLOCK + i, acc);
            }
        }
    }
}

fn retire(retired: &mut Vec<(u64, Totals)>, index: usize, acc: &Acc) {
    let generation = acc.generation.load(Ordering::Relaxed);
    if generation == 0 {
        return;
    }
    if retired.len() <= index {
        retired.resize(index + 1, (0, Totals::EMPTY));
    }
    let r = &mut retired[index];
    if r.0 != generation {
        if r.0 > generation {
            return; // an older generation than what is kept
        }
        *r = (generation, Totals::EMPTY);
    }
    r.1.add(read(acc));
}

fn read(acc: &Acc) -> Totals {
    Totals {
        count: acc.count.load(Ordering::Relaxed),
        sum: acc.sum.load(Ordering::Relaxed),
        min: acc.min.load(Ordering::Relaxed),
        max: acc.max.load(Ordering::Relaxed),
    }
}

/// Adds a call of `d` ticks to site `index` (generation `generation`) in the
/// calling thread's table. No lock, no allocation, no read-modify-write
/// after the thread's first call of a site.
#[inline(always)]
pub(crate) fn record(index: usize, generation: u64, d: u64) {
    let p = CURRENT.with(|c| c.load(Ordering::Relaxed));
    if p.is_null() || p == EXITED {
        return first_call(index, generation, d);
    }
    // SAFETY: a non-null, non-EXITED CURRENT is this thread's live table,
    // freed only by this thread's exit (after CURRENT is set to EXITED).
    let table = unsafe { &*p };
    let block = table.blocks[index / BLOCK].load(Ordering::Relaxed);
    if block.is_null() {
        return new_block(table, index, generation, d);
    }
    // SAFETY: blocks are freed only with the table.
    let acc = unsafe { &(*block)[index % BLOCK] };
    if acc.generation.load(Ordering::Relaxed) != generation {
        reset(acc, generation);
    }
    add(acc, d);
}

#[inline(always)]
fn add(acc: &Acc, d: u64) {
    // Single writer: plain loads and stores, no read-modify-write.
    acc.count
        .store(acc.count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    acc.sum.store(
        acc.sum.load(Ordering::Relaxed).wrapping_add(d),
        Ordering::Relaxed,
    );
    if d < acc.min.load(Ordering::Relaxed) {
        acc.min.store(d, Ordering::Relaxed);
    }
    if d > acc.max.load(Ordering::Relaxed) {
        acc.max.store(d, Ordering::Relaxed);
    }
}

#[cold]
#[inline(never)]
fn reset(acc: &Acc, generation: u64) {
    acc.count.store(0, Ordering::Relaxed);
    acc.sum.store(0, Ordering::Relaxed);
    acc.min.store(u64::MAX, Ordering::Relaxed);
    acc.max.store(0, Ordering::Relaxed);
    acc.generation.store(generation, Ordering::Release);
}

#[cold]
#[inline(never)]
fn new_block(table: &Table, index: usize, generation: u64, d: u64) {
    let block: Box<Block> = Box::new([const { Acc::new() }; BLOCK]);
    // Release: the recorder (Acquire, under the lock) sees initialised accumulators.
    table.blocks[index / BLOCK].store(Box::into_raw(block), Ordering::Release);
    record(index, generation, d);
}

/// The thread's first timed call: creates its table, or, on a thread that
/// is exiting, adds the call straight to the retired totals.
#[cold]
#[inline(never)]
fn first_call(index: usize, generation: u64, d: u64) {
    let exited = CURRENT
        .try_with(|c| c.load(Ordering::Relaxed) == EXITED)
        .unwrap_or(true);
    let owned = !exited && OWNER.try_with(|_| ()).is_ok();
    if !owned {
        let one = Acc::new();
        reset(&one, generation);
        add(&one, d);
        retire(&mut THREADS.lock().retired, index, &one);
        return;
    }
    let table = Box::into_raw(Box::new(Table {
        blocks: [const { AtomicPtr::new(ptr::null_mut()) }; BLOCKS],
    }));
    THREADS.lock().live.push(TablePtr(table));
    CURRENT.with(|c| c.store(table, Ordering::Relaxed));
    record(index, generation, d);
}

/// The totals of each `(index, generation)` asked for, over live and exited
/// threads.
pub(crate) fn totals(sites: &[(usize, u64)]) -> Vec<Totals> {
    let t = THREADS.lock();
    sites
        .iter()
        .map(|&(index, generation)| {
            let mut sum = Totals::EMPTY;
            if let Some((g, r)) = t.retired.get(index)
                && *g == generation
            {
                sum.add(*r);
            }
            for l in &t.live {
                // SAFETY: tables in `live` are valid while the lock is held.
                let table = unsafe { &*l.0 };
                let block = table.blocks[index / BLOCK].load(Ordering::Acquire);
                if block.is_null() {
                    continue;
                }
                // SAFETY: as above; blocks live as long as their table.
                let acc = unsafe { &(*block)[index % BLOCK] };
                if acc.generation.load(Ordering::Acquire) == generation {
                    sum.add(read(acc));
                }
            }
            sum
        })
        .collect()
}
