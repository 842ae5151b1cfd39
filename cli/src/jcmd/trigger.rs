//! The HotSpot handshake's trigger file, `.attach_pid<pid>`, made in
//! directories another user controls (the target's working directory,
//! its `/tmp`) without ever following or truncating what is there.
//!
//! # Created, never followed
//!
//! The directory is opened once (`O_DIRECTORY`; `/tmp` also `O_NOFOLLOW`,
//! and `/proc/<pid>/cwd`, a link the kernel makes, is followed because it
//! is the point) and checked: a directory owned by root, this user or the
//! target's user, not writable by every user unless sticky. The file is
//! made in it by `openat(O_CREAT | O_EXCL | O_NOFOLLOW)`, mode `0600`: a
//! name already taken (a planted symbolic link, any file) fails with
//! `EEXIST` and is left exactly as it is, and the handshake says why and
//! tries the next place. At the end the name is removed (`unlinkat` on the
//! same descriptor) only if it still is the file made (same device and
//! inode; the file is held open until then, so its inode is not reused).
//!
//! Invariant: the client opens for writing only files it has just
//! created, and removes only those.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A trigger file this client created, removed by [`Trigger::remove`].
pub(super) struct Trigger {
    dir: OwnedFd,
    name: CString,
    /// Held open until the removal, so that its inode cannot be reused
    /// by another file meanwhile.
    _file: OwnedFd,
    dev: u64,
    ino: u64,
}

/// `-1` to the last OS error.
fn os<T: Copy + PartialOrd + Default>(r: T) -> std::io::Result<T> {
    if r < T::default() {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn fstat(fd: libc::c_int) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open (the caller's) and `st` is a valid out-pointer.
    os(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what the name is itself.
fn lstat_at(dir: &OwnedFd, name: &CString) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is an open directory, `name` NUL-terminated, `st` a
    // valid out-pointer.
    os(unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    Ok(st)
}

/// What an existing entry is, for the refusal.
fn what(st: &libc::stat) -> &'static str {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFREG => "a file",
        libc::S_IFDIR => "a directory",
        _ => "a special file",
    }
}

impl Trigger {
    /// Creates `name` in `dir_path` (see the module doc); `follow` opens a
    /// `dir_path` that is itself a link (`/proc/<pid>/cwd`). `owners` are
    /// the uids the directory may belong to. The error is the reason, in
    /// words, this place was not used.
    pub(super) fn create(
        dir_path: &str,
        follow: bool,
        name: &str,
        owners: &[u32],
    ) -> Result<Trigger, String> {
        let c_dir = CString::new(dir_path).map_err(|_| "a NUL in the path".to_owned())?;
        let name = CString::new(name).map_err(|_| "a NUL in the name".to_owned())?;
        let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
        // SAFETY: `c_dir` is NUL-terminated; open has no other precondition.
        let fd = os(unsafe {
            libc::open(
                c_dir.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | nofollow,
            )
        })
        .map_err(|e| format!("cannot open the directory: {e}"))?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let dir = unsafe { OwnedFd::from_raw_fd(fd) };
        let st = fstat(dir.as_raw_fd()).map_err(|e| format!("cannot stat the directory: {e}"))?;
        if !owners.contains(&st.st_uid) {
            return Err(format!(
                "the directory belongs to uid {}, neither root, this user nor the process's",
                st.st_uid
            ));
        }
        if st.st_mode & 0o002 != 0 && st.st_mode & libc::S_ISVTX == 0 {
            return Err("the directory is writable by every user and not sticky".to_owned());
        }
        // SAFETY: `dir` is an open directory, `name` NUL-terminated;
        // O_EXCL | O_NOFOLLOW: nothing existing is opened, a link included.
        let made = os(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        });
        let fd = match made {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                let it = lstat_at(&dir, &name).map_or("something", |st| what(&st));
                return Err(format!(
                    "it already exists ({it}): not opened, not followed, left as it is"
                ));
            }
            Err(e) => return Err(format!("cannot create it: {e}")),
        };
        // SAFETY: `fd` was just created and is owned by nothing else.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        let st = fstat(file.as_raw_fd()).map_err(|e| format!("cannot stat it: {e}"))?;
        Ok(Trigger {
            dir,
            name,
            _file: file,
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }

    /// Removes the file if its name still names it.
    pub(super) fn remove(self) {
        let same = lstat_at(&self.dir, &self.name)
            .is_ok_and(|st| st.st_dev == self.dev && st.st_ino == self.ino);
        if same {
            // SAFETY: `dir` is an open directory and `name` NUL-terminated;
            // unlinkat removes the entry, never what a link names.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.name.as_ptr(), 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("flightrec-trigger-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_planted_link_is_refused_and_left_and_its_target_untouched() {
        let d = scratch("link");
        let target = d.join("precious");
        std::fs::write(&target, b"seventeen bytes!\n").unwrap();
        std::os::unix::fs::symlink(&target, d.join(".attach_pid1")).unwrap();
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let e = Trigger::create(d.to_str().unwrap(), false, ".attach_pid1", &[me])
            .err()
            .unwrap();
        assert!(e.contains("a symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"seventeen bytes!\n");
        assert!(d.join(".attach_pid1").symlink_metadata().is_ok());
        let t = Trigger::create(d.to_str().unwrap(), false, ".attach_pid2", &[me]).unwrap();
        assert!(d.join(".attach_pid2").is_file());
        t.remove();
        assert!(!d.join(".attach_pid2").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_replaced_trigger_is_not_removed() {
        let d = scratch("replaced");
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let t = Trigger::create(d.to_str().unwrap(), false, ".attach_pid3", &[me]).unwrap();
        std::fs::remove_file(d.join(".attach_pid3")).unwrap();
        std::fs::write(d.join(".attach_pid3"), b"someone else's").unwrap();
        t.remove();
        assert_eq!(
            std::fs::read(d.join(".attach_pid3")).unwrap(),
            b"someone else's"
        );
        assert!(
            Trigger::create(d.to_str().unwrap(), false, ".attach_pid3", &[me + 1])
                .err()
                .unwrap()
                .contains("belongs to uid")
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
