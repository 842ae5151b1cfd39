//! Whether a program can take a preloaded library: an ELF executable
//! with a program interpreter (`PT_INTERP`, the dynamic loader that reads
//! `LD_PRELOAD`). A statically linked program (or static PIE) has none:
//! the loader never runs, `LD_PRELOAD` is ignored, and a recording would
//! silently not happen.
//!
//! Only the ELF header and the program headers are read (64-bit and 32-bit,
//! either byte order); a file that is not ELF (a `#!` script) is left to
//! the kernel, which runs its interpreter.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// What [`inspect`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linkage {
    /// An ELF program with a program interpreter: `LD_PRELOAD` works.
    Dynamic,
    /// An ELF program without one: `LD_PRELOAD` cannot work.
    Static,
    /// Not ELF (a script, or something the kernel will refuse).
    NotElf,
}

const PT_INTERP: u32 = 3;

/// Reads the headers of `path`.
///
/// # Errors
///
/// The file cannot be read, or its ELF headers are cut short.
pub fn inspect(path: &Path) -> io::Result<Linkage> {
    let mut f = File::open(path)?;
    let mut ident = [0u8; 64];
    let n = read_up_to(&mut f, &mut ident)?;
    if n < 16 || ident[..4] != *b"\x7fELF" {
        return Ok(Linkage::NotElf);
    }
    let wide = match ident[4] {
        1 => false,
        2 => true,
        _ => return Ok(Linkage::NotElf),
    };
    let little = match ident[5] {
        1 => true,
        2 => false,
        _ => return Ok(Linkage::NotElf),
    };
    let header_len = if wide { 64 } else { 52 };
    if n < header_len {
        return Err(cut_short());
    }
    let u16_at = |b: &[u8], at: usize| {
        let v = [b[at], b[at + 1]];
        if little {
            u16::from_le_bytes(v)
        } else {
            u16::from_be_bytes(v)
        }
    };
    let u32_at = |b: &[u8], at: usize| {
        let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if little {
            u32::from_le_bytes(v)
        } else {
            u32::from_be_bytes(v)
        }
    };
    let u64_at = |b: &[u8], at: usize| {
        let mut v = [0u8; 8];
        v.copy_from_slice(&b[at..at + 8]);
        if little {
            u64::from_le_bytes(v)
        } else {
            u64::from_be_bytes(v)
        }
    };
    let (phoff, phentsize, phnum) = if wide {
        (u64_at(&ident, 32), u16_at(&ident, 54), u16_at(&ident, 56))
    } else {
        (
            u64::from(u32_at(&ident, 28)),
            u16_at(&ident, 42),
            u16_at(&ident, 44),
        )
    };
    if usize::from(phentsize) < 4 {
        return Err(cut_short());
    }
    let mut table = vec![0u8; usize::from(phentsize) * usize::from(phnum)];
    f.seek(SeekFrom::Start(phoff))?;
    f.read_exact(&mut table).map_err(|_| cut_short())?;
    let interp = table
        .chunks_exact(usize::from(phentsize))
        .any(|ph| u32_at(ph, 0) == PT_INTERP);
    Ok(if interp {
        Linkage::Dynamic
    } else {
        Linkage::Static
    })
}

fn read_up_to(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn cut_short() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "its ELF headers are cut short")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_is_dynamic_and_a_script_is_not_elf() {
        assert_eq!(inspect(Path::new("/bin/sh")).unwrap(), Linkage::Dynamic);
        let dir = std::env::temp_dir().join(format!("flightrec-elf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("s.sh");
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        assert_eq!(inspect(&script).unwrap(), Linkage::NotElf);
        let cut = dir.join("cut");
        std::fs::write(&cut, b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0").unwrap();
        assert!(inspect(&cut).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
