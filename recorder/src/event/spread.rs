//! Spreading a value's bits into varint groups with one instruction where
//! the CPU does that fast: BMI2's `pdep` deposits the low 56 bits of a
//! value into the low seven bits of each byte of a word, which is what a
//! varint's first eight bytes hold. The portable form
//! (`jfr_format::write::encode::varint_fixed9_parts`) takes three rounds of
//! mask, shift and or, some twenty instructions on the commit path of
//! every event (its start time).
//!
//! `pdep` is used only where it is one fast micro-op: Intel since Haswell,
//! AMD since Zen 3 (family 0x19). Zen 1 and 2 run it in microcode, tens of
//! cycles per set bit, slower than the shifts. The choice is made once, by
//! [`init`] at runtime start, and read with one relaxed load.
//!
//! Invariant: [`fixed9_low_with`] returns exactly the first eight bytes (as a
//! little-endian word) of `encode_varint_fixed9(v)`, on every CPU.

use crate::base::sync::global::{AtomicBool, Ordering};

/// True once [`init`] found a fast `pdep` (a std static: the loom models take
/// whichever spread the CPU has, both give the same bytes).
static FAST_PDEP: AtomicBool = AtomicBool::new(false);

/// The seven-bit groups of a varint, one per byte.
const GROUPS: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// Every byte's continuation bit.
const CONTINUATION: u64 = 0x8080_8080_8080_8080;

/// Decides, once, whether [`spread7_with`] may use `pdep`.
#[cold]
pub(crate) fn init() {
    FAST_PDEP.store(pdep_is_fast(), Ordering::Relaxed);
}

#[cfg(target_arch = "x86_64")]
fn pdep_is_fast() -> bool {
    if !std::arch::is_x86_feature_detected!("bmi2") {
        return false;
    }
    // `cpuid` leaves 0 (vendor) and 1 (family) exist on every x86-64 CPU.
    let v = core::arch::x86_64::__cpuid(0);
    let (vendor, signature) = ([v.ebx, v.edx, v.ecx], core::arch::x86_64::__cpuid(1).eax);
    let amd = vendor == [0x6874_7541, 0x6974_6e65, 0x444d_4163]; // "AuthenticAMD"
    let hygon = vendor == [0x6f67_7948, 0x6e65_476e, 0x656e_6975]; // "HygonGenuine"
    let base = (signature >> 8) & 0xf;
    let family = if base == 0xf {
        base + ((signature >> 20) & 0xff)
    } else {
        base
    };
    // Zen 1/2 (0x17) and Hygon (0x18, Zen 1) microcode `pdep`.
    !(hygon || amd && family < 0x19)
}

#[cfg(not(target_arch = "x86_64"))]
fn pdep_is_fast() -> bool {
    false
}

/// True if [`spread7_with`] may use `pdep`: one relaxed load, for a caller
/// that reads it ahead of the value to spread (the commit path reads it
/// before the clock, see `commit::Start`).
#[inline(always)]
pub(crate) fn fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    return FAST_PDEP.load(Ordering::Relaxed);
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The low 56 bits of `v` in the low seven bits of each byte: a varint's
/// first eight bytes without their continuation bits
/// (`jfr_format::write::encode::spread7`).
#[inline(always)]
pub(crate) fn spread7(v: u64) -> u64 {
    spread7_with(v, fast())
}

/// [`spread7`] with [`fast`] read already.
#[inline(always)]
pub(crate) fn spread7_with(v: u64, fast: bool) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if fast {
        let spread: u64;
        // SAFETY: `FAST_PDEP` is set only where `cpuid` reported BMI2
        // (`init`); `pdep` reads and writes registers only.
        unsafe {
            core::arch::asm!(
                "pdep {out}, {v}, {mask}",
                v = in(reg) v,
                mask = in(reg) GROUPS,
                out = lateout(reg) spread,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        return spread;
    }
    // Laid out after the fast form, which then needs no jump over it.
    #[cfg(target_arch = "x86_64")]
    cold_path();
    jfr_format::write::encode::spread7(v)
}

/// The first eight bytes of the nine-byte padded varint of `v`, as a
/// little-endian word (the ninth byte is `v >> 56`), with [`fast`] read
/// already.
#[inline(always)]
pub(crate) fn fixed9_low_with(v: u64, fast: bool) -> u64 {
    spread7_with(v, fast) | CONTINUATION
}

/// Marks the branch that calls it as unlikely, so the compiler lays the
/// other one out as the straight path (what `std::hint::cold_path` does
/// since Rust 1.95, newer than this crate's MSRV).
#[cfg(target_arch = "x86_64")]
#[cold]
#[inline(always)]
fn cold_path() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_match_the_format_crates_encoding() {
        let values = [
            0,
            1,
            0x7f,
            0x80,
            300,
            1 << 49,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX,
            0x0123_4567_89ab_cdef,
        ];
        for fast in [false, true] {
            if fast && !pdep_is_fast() {
                continue;
            }
            for &v in &values {
                let want = jfr_format::write::encode::encode_varint_fixed9(v);
                assert_eq!(
                    fixed9_low_with(v, fast).to_le_bytes(),
                    want[..8],
                    "{v:#x}, pdep {fast}"
                );
            }
        }
    }
}
