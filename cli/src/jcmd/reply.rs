//! Reading an attach reply with bounded time and memory: the status line,
//! then the text streamed to the caller's writer as it arrives.
//!
//! One deadline covers the whole exchange (the request written, every
//! read), so a peer that trickles a byte at a time cannot stretch it; the
//! text may be at most [`Limits::max_reply`] bytes, past which the reply is
//! cut off with an error; and nothing is held but one buffer of
//! [`BUFFER`] bytes, whatever the size of the reply.
//!
//! Invariant: memory is bounded by [`BUFFER`] and the status line's
//! [`MAX_STATUS`]; time by [`Limits::deadline`].

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// How long the whole exchange may take by default (a `JFR.dump` of a
/// long recording writes a file first).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(120);
/// The most reply text accepted by default: far more than any diagnostic
/// command's text (a JVM's `Thread.print` of thousands of threads).
pub const DEFAULT_MAX_REPLY: u64 = 64 << 20;
/// The read buffer.
const BUFFER: usize = 64 << 10;
/// The longest status line (`0`, `-1`, an errno): a longer one is not an
/// attach reply.
const MAX_STATUS: usize = 64;

/// What bounds one exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The whole exchange, from the connection to the last byte.
    pub deadline: Duration,
    /// The most bytes of text after the status line.
    pub max_reply: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            deadline: DEFAULT_DEADLINE,
            max_reply: DEFAULT_MAX_REPLY,
        }
    }
}

/// Why the reply did not arrive whole.
#[derive(Debug)]
pub(super) enum ReplyError {
    /// The peer did not take the request.
    Request(io::Error),
    /// The deadline passed (the reply so far was passed on).
    Late(Duration),
    /// More than the limit: cut off there.
    TooLarge(u64),
    /// The connection failed.
    Read(io::Error),
    /// The first line is not a status.
    NotAReply,
    /// The caller's writer failed.
    Output(io::Error),
}

/// A stream read under one deadline.
struct Deadlined<'a> {
    stream: &'a UnixStream,
    until: Instant,
}

impl Deadlined<'_> {
    fn left(&self) -> io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            self.stream.set_read_timeout(Some(self.left()?))?;
            match (&mut &*self.stream).read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                r => return r,
            }
        }
    }
}

fn late(e: io::Error, limits: &Limits, other: fn(io::Error) -> ReplyError) -> ReplyError {
    if e.kind() == io::ErrorKind::TimedOut {
        ReplyError::Late(limits.deadline)
    } else {
        other(e)
    }
}

/// Sends `request`, reads the status, then calls `start(status)` for the
/// writer the text goes to, and streams the text into it. Returns the
/// status.
pub(super) fn exchange<'w>(
    stream: &UnixStream,
    request: &[u8],
    limits: &Limits,
    start: impl FnOnce(i32) -> io::Result<&'w mut dyn Write>,
) -> Result<i32, ReplyError> {
    let until = Instant::now() + limits.deadline;
    let mut r = Deadlined { stream, until };
    let mut written = 0;
    while written < request.len() {
        let left = r.left().map_err(|e| late(e, limits, ReplyError::Request))?;
        stream
            .set_write_timeout(Some(left))
            .map_err(ReplyError::Request)?;
        match (&mut &*stream).write(&request[written..]) {
            Ok(0) => return Err(ReplyError::Request(io::ErrorKind::WriteZero.into())),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(ReplyError::Late(limits.deadline));
            }
            Err(e) => return Err(late(e, limits, ReplyError::Request)),
        }
    }
    let mut buf = vec![0u8; BUFFER];
    // The status line, then whatever came after it in the same reads.
    let mut head = Vec::with_capacity(MAX_STATUS);
    let (status, rest) = loop {
        let n = r
            .read(&mut buf)
            .map_err(|e| late(e, limits, ReplyError::Read))?;
        let eof = n == 0;
        let take = n.min(MAX_STATUS + 1 - head.len());
        head.extend_from_slice(&buf[..take]);
        if let Some(nl) = head.iter().position(|&b| b == b'\n') {
            let status = parse_status(&head[..nl])?;
            // What followed the newline: in `head`, then in `buf`.
            let mut rest = head[nl + 1..].to_vec();
            rest.extend_from_slice(&buf[take..n]);
            break (status, rest);
        }
        if eof {
            // A reply without text and without newline ("0").
            break (parse_status(&head)?, Vec::new());
        }
        if head.len() > MAX_STATUS {
            return Err(ReplyError::NotAReply);
        }
    };
    let out = start(status).map_err(ReplyError::Output)?;
    let mut total = 0u64;
    let mut pass = |bytes: &[u8], out: &mut dyn Write| -> Result<(), ReplyError> {
        total += bytes.len() as u64;
        if total > limits.max_reply {
            let fits = bytes.len() as u64 - (total - limits.max_reply);
            out.write_all(&bytes[..fits as usize])
                .map_err(ReplyError::Output)?;
            let _ = out.flush();
            return Err(ReplyError::TooLarge(limits.max_reply));
        }
        out.write_all(bytes).map_err(ReplyError::Output)
    };
    pass(&rest, out)?;
    drop(rest);
    loop {
        let n = match r.read(&mut buf) {
            Ok(n) => n,
            Err(e) => {
                let _ = out.flush();
                return Err(late(e, limits, ReplyError::Read));
            }
        };
        if n == 0 {
            break;
        }
        pass(&buf[..n], out)?;
    }
    out.flush().map_err(ReplyError::Output)?;
    Ok(status)
}

fn parse_status(line: &[u8]) -> Result<i32, ReplyError> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or(ReplyError::NotAReply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(reply: &'static [u8], limits: Limits) -> (Result<i32, ReplyError>, Vec<u8>) {
        let (a, mut b) = UnixStream::pair().unwrap();
        let peer = std::thread::spawn(move || {
            let mut req = [0u8; 64];
            let _ = b.read(&mut req);
            let _ = b.write_all(reply);
        });
        let mut out = Vec::new();
        let r = exchange(&a, b"1\0jcmd\0help\0\0\0", &limits, |_| Ok(&mut out));
        drop(a);
        peer.join().unwrap();
        (r, out)
    }

    #[test]
    fn status_and_text_are_split_and_streamed() {
        let (r, out) = run(b"0\nhello\nworld\n", Limits::default());
        assert_eq!(r.unwrap(), 0);
        assert_eq!(out, b"hello\nworld\n");
        let (r, out) = run(b"-1\nno", Limits::default());
        assert_eq!(r.unwrap(), -1);
        assert_eq!(out, b"no");
        let (r, _) = run(b"0", Limits::default());
        assert_eq!(r.unwrap(), 0);
    }

    #[test]
    fn too_much_text_is_cut_at_the_limit() {
        let limits = Limits {
            max_reply: 4,
            ..Limits::default()
        };
        let (r, out) = run(b"0\n123456789", limits);
        assert!(matches!(r, Err(ReplyError::TooLarge(4))), "{r:?}");
        assert_eq!(out, b"1234");
    }

    #[test]
    fn what_is_not_a_reply_is_named() {
        let (r, _) = run(b"hello there\n", Limits::default());
        assert!(matches!(r, Err(ReplyError::NotAReply)), "{r:?}");
        let (r, _) = run(&[b'7'; 200], Limits::default());
        assert!(matches!(r, Err(ReplyError::NotAReply)), "{r:?}");
        let (r, _) = run(b"", Limits::default());
        assert!(matches!(r, Err(ReplyError::NotAReply)), "{r:?}");
    }

    #[test]
    fn a_silent_peer_ends_at_the_deadline() {
        let (a, _b) = UnixStream::pair().unwrap();
        let limits = Limits {
            deadline: Duration::from_millis(300),
            ..Limits::default()
        };
        let mut out = Vec::new();
        let t = Instant::now();
        let r = exchange(&a, b"1\0jcmd\0help\0\0\0", &limits, |_| Ok(&mut out));
        assert!(matches!(r, Err(ReplyError::Late(_))), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
