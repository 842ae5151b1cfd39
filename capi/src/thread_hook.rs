//! `pthread_create`, defined by `libflightrec.so` and `libflightrec.a`:
//! sampling from birth and `jdk.ThreadStart`'s creator for C and C++
//! programs, preloaded or linked (the Rust crate's `thread-hook` feature,
//! which the C library always has).
//!
//! # Which `pthread_create` a program calls
//!
//! The dynamic linker binds a symbol to its first definition in load
//! order: the executable, then `LD_PRELOAD`ed libraries, then the
//! executable's `DT_NEEDED` libraries in link order, the C library (and on
//! glibc before 2.34 `libpthread`) last among them. So a preloaded
//! `libflightrec.so`, and one linked with `-lflightrec` ahead of the C
//! library, is the program's `pthread_create`, whether the program also
//! links `-lpthread` or not: its versioned reference
//! (`pthread_create@GLIBC_2.34`) binds to this unversioned definition, as
//! an interposed `malloc` does. The recorder finds the C library's own with
//! `dlsym(RTLD_NEXT)`, the next definition after this library. Calls the C
//! library makes to itself (`SIGEV_THREAD` timers) are not interposed: those
//! threads are found by listing, as without the hook. A program linked
//! with `libflightrec.a` defines `pthread_create` itself.
//!
//! # Unwinding
//!
//! The body does not panic (no lock it takes reports poisoning, nothing
//! indexes or unwraps), so it runs without [`crate::error::guard`], whose
//! frames would sit between the creator's recorded stack and this
//! function; and a panic leaving an `extern "C"` function aborts, it
//! never unwinds into C.

use std::ffi::{c_int, c_void};

/// Creates a thread with the C library's `pthread_create`. While a
/// recording samples CPU time, the new thread's timer is armed before
/// `start` runs; while `jdk.ThreadStart` is on, the thread's
/// `jdk.ThreadStart` has the caller as `parentThread` and the caller's
/// stack.
///
/// # Safety
///
/// The C library's contract for `pthread_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: recorder::__thread_hook::Start,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract, passed on.
    unsafe { recorder::__thread_hook::create(thread, attr, start, arg) }
}
