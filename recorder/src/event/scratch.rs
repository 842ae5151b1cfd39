//! User encoders run outside the write section: the thread's scratch.
//!
//! A write section must close in bounded time: the rotation (and with it
//! `rotate()`, `dump()` and `stop()`) waits for every open one (see
//! docs/rotation-protocol.md). So no code the recorder does not own runs
//! inside one. An event whose fields are not all
//! [`BuiltinEncoder`](super::field::BuiltinEncoder) (a user's `FieldValue`,
//! a hand-written `Event::write_fields`, a `commit_fields` writer, a
//! `ValueSource`) is encoded first, with no section open, into a
//! buffer of the thread's own, the scratch; there it is checked against
//! its type's declared kinds ([`super::check`]); then its section copies
//! the bytes in and tags the constants they reference ([`super::refs`]).
//! An encoder that blocks, sleeps, takes a lock the stopping thread holds
//! or calls `exit()` therefore holds no section: the recorder goes on, and
//! the event is committed (in whatever recording is then running) only if
//! and when its encoder returns.
//!
//! ```text
//!  SCRATCH: null ──first lend: allocate──► buffer ──lend──► LENT ──return──► buffer
//!                                                   thread exit (guard): freed, null
//! ```
//!
//! # Reentrancy
//!
//! While lent, the thread-local holds `LENT`: a nested emit (an encoder
//! that commits an event, a signal handler that interrupts it) of another
//! event needing the scratch finds it lent and is dropped, counted as
//! [`LossCause::Reentrant`](crate::LossCause::Reentrant); one of built-in
//! fields goes to its section as usual (no section is open while user code
//! runs), and the record in the scratch is untouched by either. Lending is
//! a load and a store of the thread's own cell: a signal handler runs to
//! completion between them or not at all.
//!
//! The scratch starts at [`INITIAL`] bytes; a record that does not fit is
//! encoded once more into one grown to the block size (nothing larger fits
//! a block), so an encoder may run twice for one event.
//!
//! Invariant: bytes reach a thread's block from the scratch only whole,
//! checked ([`Encoded::Done`]), and never while the scratch is lent to
//! another emit on the same thread.

use std::cell::Cell;
use std::ptr::NonNull;

use super::check::fields_match;
use super::field::{FieldKind, FieldWriter, SCRATCH_EPOCH};
use super::refs::Refs;
use super::sink::RecordSink;

/// The scratch's first size: most records with a string fit.
const INITIAL: usize = 4096;

/// The thread-local while its scratch is lent (see the module docs).
const LENT: *mut Scratch = std::ptr::without_provenance_mut(1);

crate::base::sync::thread_local! {
    static SCRATCH: Cell<*mut Scratch> = const { Cell::new(std::ptr::null_mut()) };
}

/// A thread's scratch: the fields of one record and the constants they
/// reference.
#[derive(Debug)]
pub(crate) struct Scratch {
    buf: Box<[u8]>,
    refs: Refs,
}

/// What encoding into the scratch gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoded {
    /// This many bytes of checked fields.
    Done(usize),
    /// The writer abandoned the record.
    Abandoned,
    /// Not one well-formed value of each declared kind.
    Invalid,
    /// Larger than a block.
    TooLarge,
}

/// The thread's scratch, lent for one record; returned on drop, also when
/// the encoder unwinds.
#[derive(Debug)]
pub(crate) struct Lent(NonNull<Scratch>);

/// Lends the thread's scratch, allocating it on first use; `None` if it
/// is lent already (a nested emit) or the thread's locals are gone.
pub(crate) fn lend() -> Option<Lent> {
    let p = SCRATCH.try_with(|c| c.replace(LENT)).ok()?;
    if p == LENT {
        return None;
    }
    let p = if p.is_null() {
        Box::into_raw(Box::new(Scratch {
            buf: vec![0; INITIAL].into_boxed_slice(),
            refs: Refs::default(),
        }))
    } else {
        p
    };
    // Not null: either the thread's scratch or one just allocated.
    NonNull::new(p).map(Lent)
}

/// Frees the thread's scratch when it exits (its guard's destructor); a
/// scratch lent at that moment is freed by its `Lent`.
pub(crate) fn release() {
    let Ok(p) = SCRATCH.try_with(|c| c.replace(std::ptr::null_mut())) else {
        return;
    };
    if !p.is_null() && p != LENT {
        // SAFETY: `p` came from `Box::into_raw` in `lend` on this thread and
        // was not lent; the cell no longer holds it.
        drop(unsafe { Box::from_raw(p) });
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let back = self.0.as_ptr();
        let kept = SCRATCH.try_with(|c| {
            if c.get() == LENT {
                c.set(back);
                true
            } else {
                false
            }
        });
        if !matches!(kept, Ok(true)) {
            // The thread's guard released the cell meanwhile (thread exit).
            // SAFETY: `back` is this lend's box, held by nobody else.
            drop(unsafe { Box::from_raw(back) });
        }
    }
}

impl Lent {
    fn get(&mut self) -> &mut Scratch {
        // SAFETY: a lent scratch is reachable only through this `Lent`
        // (the cell holds LENT), on this thread.
        unsafe { self.0.as_mut() }
    }

    /// Encodes a record's fields with `write` (user code, no section
    /// open), for a thread with key `own_thread`, into a scratch of at most
    /// `max` bytes; checks them against `kinds`.
    pub(crate) fn encode<K: IntoIterator<Item = FieldKind>>(
        &mut self,
        own_thread: u64,
        max: usize,
        kinds: impl Fn() -> K,
        write: impl Fn(&mut FieldWriter<'_>) -> bool,
    ) -> Encoded {
        loop {
            let s = self.get();
            s.refs.clear();
            let mut w = FieldWriter {
                enc: RecordSink::begin_fields(&mut s.buf),
                epoch: SCRATCH_EPOCH,
                own_thread,
                refs: Some(NonNull::from(&mut s.refs)),
            };
            if !write(&mut w) {
                return Encoded::Abandoned;
            }
            let written = w.enc.fields_len();
            let s = self.get();
            match written {
                Some(n) if !s.refs.overflowed() && fields_match(kinds(), &s.buf[..n]) => {
                    return Encoded::Done(n);
                }
                Some(_) => return Encoded::Invalid,
                None if s.buf.len() < max => s.buf = vec![0; max].into_boxed_slice(),
                None => return Encoded::TooLarge,
            }
        }
    }

    /// The first `n` bytes of fields and their references, from
    /// [`encode`](Self::encode)'s [`Encoded::Done`]`(n)`.
    pub(crate) fn fields(&mut self, n: usize) -> (&[u8], &Refs) {
        let s = self.get();
        (&s.buf[..n], &s.refs)
    }
}
