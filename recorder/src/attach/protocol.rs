//! Reading one attach request and writing its reply, with the limits of
//! the module docs: a request is read through a `take` of at most
//! [`MAX_REQUEST`] bytes, field by field, and must end at its last NUL.
//!
//! # Frames
//!
//! ```text
//! version 1: "1" NUL cmd NUL arg0 NUL arg1 NUL arg2 NUL
//! version 2: "2" NUL size NUL cmd[" " options] NUL { arg NUL }     size = bytes after it
//! reply:     status "\n" UTF-8 text, then close
//! ```
//!
//! The client first asks `getversion options` and is told `0\n2 streaming`;
//! `jcmd` then sends command `jcmd` with the whole diagnostic command line
//! (`JFR.dump filename=x.jfr`) as its argument. A connection closed before
//! its first byte (older clients probe so) is dropped silently. Status 0:
//! `jcmd` prints the text; non-zero: it prints it on stderr and exits 1.
//!
//! # Bounds
//!
//! Connections are served by the listener's own thread (the program's
//! threads never wait for it), side by side: it `poll`s every connection
//! whose request is still arriving (at most [`MAX_PENDING`](super::listener::MAX_PENDING)) and
//! answers each request as soon as it is whole, so silent or slow clients
//! cannot keep a `jcmd` waiting. A request must arrive whole within
//! [`REQUEST_DEADLINE`] and be at most [`MAX_REQUEST`]
//! bytes; anything else (a huge size, missing NULs, bytes that are not
//! UTF-8, an unknown version) gets an error reply or is closed. The reply
//! is written with a timeout too. So no request costs more than a fixed
//! amount of memory; a panic while answering is caught and answered as an
//! error. An error about a settings file a `JFR.start` names quotes
//! nothing of the file (only its path and line): the peer may name any
//! file the process can read.

use std::io::{self, BufRead as _, BufReader, Read, Write};
use std::time::Duration;

/// The largest request accepted, in bytes (a `jcmd` line is far shorter).
pub(crate) const MAX_REQUEST: usize = 64 << 10;
/// How long a client has to send its whole request.
pub(crate) const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// How long writing a reply may block.
pub(crate) const REPLY_TIMEOUT: Duration = Duration::from_secs(2);
/// The reply to `getversion options`: version 2, streaming output.
pub(crate) const VERSION_REPLY: &str = "2 streaming";

/// One decoded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// 1 or 2.
    pub(crate) version: u8,
    /// The operation (`jcmd`, `getversion`, ...).
    pub(crate) command: String,
    /// Version 2's options after the operation (`streaming=1`).
    pub(crate) options: String,
    /// The arguments (version 1 always has three, some empty).
    pub(crate) args: Vec<String>,
}

/// Why a request could not be read.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// The client closed before sending anything (a probe).
    Empty,
    /// Reading failed or the deadline passed.
    Io(io::Error),
    /// The request is larger than [`MAX_REQUEST`].
    TooLarge,
    /// Not version 1 or 2.
    BadVersion,
    /// The frame ends early, lacks a NUL, or is not UTF-8.
    Malformed(&'static str),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Empty => f.write_str("empty connection"),
            Self::Io(e) => write!(f, "reading the request: {e}"),
            Self::TooLarge => write!(f, "request larger than {MAX_REQUEST} bytes"),
            Self::BadVersion => f.write_str("unsupported protocol version"),
            Self::Malformed(why) => write!(f, "malformed request: {why}"),
        }
    }
}

/// Reads one request from `r` (whose reads the caller bounds in time).
pub(crate) fn read_request(r: impl Read) -> Result<Request, FrameError> {
    // One byte past the limit tells "too large" from "just fits".
    let mut r = BufReader::with_capacity(4096, r.take(MAX_REQUEST as u64 + 1));
    let mut field = Vec::new();
    let version = match read_field(&mut r, &mut field) {
        Ok(v) => v,
        Err(FrameError::Malformed(_)) if field.is_empty() => return Err(FrameError::Empty),
        Err(e) => return Err(e),
    };
    match version.as_str() {
        "1" => {
            let (command, options) = split_command(read_field(&mut r, &mut field)?);
            let args = (0..3)
                .map(|_| read_field(&mut r, &mut field))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Request {
                version: 1,
                command,
                options,
                args,
            })
        }
        "2" => {
            let size: usize = read_field(&mut r, &mut field)?
                .parse()
                .map_err(|_| FrameError::Malformed("the size is not a number"))?;
            if size > MAX_REQUEST {
                return Err(FrameError::TooLarge);
            }
            let mut body = vec![0; size];
            r.read_exact(&mut body).map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => FrameError::Malformed("shorter than its size"),
                _ => FrameError::Io(e),
            })?;
            let Some(body) = body.strip_suffix(&[0]) else {
                return Err(FrameError::Malformed("the last field has no NUL"));
            };
            let mut fields = body.split(|&b| b == 0).map(utf8);
            let (command, options) = split_command(fields.next().unwrap_or(Ok(String::new()))?);
            Ok(Request {
                version: 2,
                command,
                options,
                args: fields.collect::<Result<_, _>>()?,
            })
        }
        _ => Err(FrameError::BadVersion),
    }
}

/// Reads up to the next NUL into `buf` (cleared first) and returns it
/// without the NUL.
fn read_field<R: Read>(
    r: &mut BufReader<io::Take<R>>,
    buf: &mut Vec<u8>,
) -> Result<String, FrameError> {
    buf.clear();
    r.read_until(0, buf).map_err(FrameError::Io)?;
    if buf.last() != Some(&0) {
        // Stopped by the request's limit, or by the client's end.
        return Err(if r.get_ref().limit() == 0 {
            FrameError::TooLarge
        } else {
            FrameError::Malformed("a field has no NUL")
        });
    }
    buf.pop();
    utf8(buf)
}

fn utf8(bytes: &[u8]) -> Result<String, FrameError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| FrameError::Malformed("not UTF-8"))
}

/// `jcmd streaming=1` → (`jcmd`, `streaming=1`).
fn split_command(cmd: String) -> (String, String) {
    match cmd.split_once(' ') {
        Some((c, o)) => (c.to_owned(), o.to_owned()),
        None => (cmd, String::new()),
    }
}

/// Writes `status`, a newline and `text`: the whole reply.
pub(crate) fn write_reply(mut w: impl Write, status: i32, text: &str) -> io::Result<()> {
    let mut out = format!("{status}\n").into_bytes();
    out.extend_from_slice(text.as_bytes());
    w.write_all(&out)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<Request, FrameError> {
        read_request(bytes)
    }

    #[test]
    fn version_1_is_a_command_and_three_arguments() {
        let r = read(b"1\0getversion\0options\0\0\0").unwrap();
        assert_eq!(r.version, 1);
        assert_eq!(r.command, "getversion");
        assert_eq!(r.args, ["options", "", ""]);
    }

    #[test]
    fn version_2_carries_its_size_and_options() {
        let body = b"jcmd streaming=1\0JFR.dump filename=x.jfr\0";
        let mut frame = format!("2\0{}\0", body.len()).into_bytes();
        frame.extend_from_slice(body);
        let r = read(&frame).unwrap();
        assert_eq!(
            (r.version, r.command.as_str(), r.options.as_str()),
            (2, "jcmd", "streaming=1")
        );
        assert_eq!(r.args, ["JFR.dump filename=x.jfr"]);
    }

    #[test]
    fn bad_frames_are_refused_not_trusted() {
        assert!(matches!(read(b""), Err(FrameError::Empty)));
        assert!(matches!(read(b"3\0x\0"), Err(FrameError::BadVersion)));
        assert!(matches!(
            read(b"2\0999999999999\0jcmd\0"),
            Err(FrameError::TooLarge)
        ));
        assert!(matches!(
            read(b"2\x00100\x00jcmd\x00"),
            Err(FrameError::Malformed(_))
        ));
        assert!(matches!(
            read(b"2\x005\0jcmd!"),
            Err(FrameError::Malformed(_))
        ));
        assert!(matches!(
            read(b"1\0jcmd\0no nul"),
            Err(FrameError::Malformed(_))
        ));
        assert!(matches!(
            read(b"1\0\xff\xfe\0\0\0\0"),
            Err(FrameError::Malformed(_))
        ));
        let endless = vec![b'1'; MAX_REQUEST * 4];
        assert!(matches!(read(&endless), Err(FrameError::TooLarge)));
        let mut long_arg = b"1\0jcmd\0".to_vec();
        long_arg.extend(std::iter::repeat_n(b'a', MAX_REQUEST * 2));
        assert!(matches!(read(&long_arg), Err(FrameError::TooLarge)));
    }

    #[test]
    fn the_reply_is_status_newline_text() {
        let mut out = Vec::new();
        write_reply(&mut out, 0, "2 streaming").unwrap();
        assert_eq!(out, b"0\n2 streaming");
    }
}
