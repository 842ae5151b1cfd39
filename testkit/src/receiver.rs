//! A small HTTP/1.1 server on 127.0.0.1 that stores every request it
//! receives: the Pyroscope ingest endpoint as the uploader's tests and the
//! `pyroscope_push` example see it.
//!
//! Modes ([`Mode`]): answer `200`, answer a status (e.g. `500`), be down
//! (the listener is closed, so connections are refused; it is opened
//! again on the same port when the mode changes back), or answer after a
//! delay. One connection is served per request (`Connection: close`),
//! each on its own thread, so a slow answer does not hold up the next.
//!
//! Requests must carry `Content-Length` (the uploader's client sends it);
//! one without is answered 411 and stored with an empty body.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `200 OK`.
    Ok,
    /// This status (e.g. 500, 302).
    Status(u16),
    /// The listener is closed: connections are refused.
    Down,
    /// `200 OK` after this delay.
    Slow(Duration),
}

/// One stored request.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`, ...
    pub method: String,
    /// The request target: path and query (`/ingest?name=...`).
    pub target: String,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The status it was answered with.
    pub status: u16,
    /// When it arrived.
    pub at: Instant,
}

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The `name` of its `Content-Disposition`.
    pub name: String,
    /// The `filename`, if any.
    pub filename: Option<String>,
    /// Its `Content-Type`, if any.
    pub content_type: Option<String>,
    /// Its bytes.
    pub data: Vec<u8>,
}

impl Request {
    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The query parameters, percent-decoded, in order.
    pub fn query(&self) -> Vec<(String, String)> {
        let Some((_, q)) = self.target.split_once('?') else {
            return Vec::new();
        };
        q.split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (percent_decode(k), percent_decode(v))
            })
            .collect()
    }

    /// The value of query parameter `key`.
    pub fn param(&self, key: &str) -> Option<String> {
        self.query()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The parts of a `multipart/form-data` body.
    ///
    /// # Panics
    ///
    /// If the content type is not multipart with a boundary, or the body
    /// is not well formed.
    pub fn parts(&self) -> Vec<Part> {
        let ct = self.header("content-type").expect("a Content-Type header");
        let boundary = ct
            .split(';')
            .map(str::trim)
            .find_map(|p| p.strip_prefix("boundary="))
            .unwrap_or_else(|| panic!("no boundary in {ct:?}"))
            .trim_matches('"');
        assert!(
            ct.starts_with("multipart/form-data"),
            "not multipart/form-data: {ct}"
        );
        parse_multipart(&self.body, boundary)
    }
}

/// Splits `body` at `--boundary` lines.
fn parse_multipart(body: &[u8], boundary: &str) -> Vec<Part> {
    let delim = format!("--{boundary}");
    let find = |hay: &[u8], from: usize| {
        hay[from..]
            .windows(delim.len())
            .position(|w| w == delim.as_bytes())
            .map(|p| p + from)
    };
    let mut parts = Vec::new();
    let mut at = find(body, 0).expect("the first boundary");
    loop {
        let after = at + delim.len();
        if body[after..].starts_with(b"--") {
            return parts;
        }
        assert!(
            body[after..].starts_with(b"\r\n"),
            "a boundary line ends with CRLF"
        );
        let start = after + 2;
        let next = find(body, start).expect("a closing boundary");
        // The part ends with the CRLF before the next boundary.
        let part = &body[start..next - 2];
        let split = part
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("the part's headers end with a blank line");
        let head = String::from_utf8_lossy(&part[..split]).into_owned();
        let data = part[split + 4..].to_vec();
        let (mut name, mut filename, mut content_type) = (String::new(), None, None);
        for line in head.split("\r\n") {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            match k.trim().to_ascii_lowercase().as_str() {
                "content-disposition" => {
                    for p in v.split(';').map(str::trim) {
                        if let Some(n) = p.strip_prefix("name=") {
                            name = n.trim_matches('"').to_owned();
                        } else if let Some(f) = p.strip_prefix("filename=") {
                            filename = Some(f.trim_matches('"').to_owned());
                        }
                    }
                }
                "content-type" => content_type = Some(v.trim().to_owned()),
                _ => {}
            }
        }
        parts.push(Part {
            name,
            filename,
            content_type,
            data,
        });
        at = next;
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Debug)]
struct Shared {
    mode: Mutex<Mode>,
    requests: Mutex<Vec<Request>>,
    arrived: Condvar,
    closed: AtomicBool,
}

/// The server. Dropping it stops it.
#[derive(Debug)]
pub struct Receiver {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    /// Starts a receiver on a free port of 127.0.0.1, answering `200`.
    ///
    /// # Panics
    ///
    /// If no port can be bound.
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            mode: Mutex::new(Mode::Ok),
            requests: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            closed: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("test-receiver".into())
            .spawn(move || accept_loop(Some(listener), addr, &s))
            .expect("spawn the receiver thread");
        Receiver {
            addr,
            shared,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Changes how later requests are answered (`Down` closes the
    /// listener within 10 ms; another mode opens it again).
    pub fn set_mode(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// Every request stored so far.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests answered 2xx.
    pub fn accepted(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| (200..300).contains(&r.status))
            .collect()
    }

    /// Waits until at least `n` requests were stored or `timeout` passed;
    /// returns how many there are.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> usize {
        let end = Instant::now() + timeout;
        let mut r = self.shared.requests.lock().unwrap();
        while r.len() < n {
            let now = Instant::now();
            if now >= end {
                break;
            }
            r = self.shared.arrived.wait_timeout(r, end - now).unwrap().0;
        }
        r.len()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accepts until closed; closes the listener while the mode is `Down`.
fn accept_loop(mut listener: Option<TcpListener>, addr: SocketAddr, s: &Arc<Shared>) {
    if let Some(l) = &listener {
        l.set_nonblocking(true).expect("non-blocking listener");
    }
    while !s.closed.load(Ordering::Acquire) {
        let down = *s.mode.lock().unwrap() == Mode::Down;
        if down {
            listener = None;
        } else if listener.is_none() {
            // std sets SO_REUSEADDR: the port is free again at once.
            match TcpListener::bind(addr) {
                Ok(l) => {
                    l.set_nonblocking(true).expect("non-blocking listener");
                    listener = Some(l);
                }
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            }
        }
        let Some(l) = &listener else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        match l.accept() {
            Ok((stream, _)) => {
                let s = Arc::clone(s);
                std::thread::spawn(move || {
                    let _ = serve(stream, &s);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Reads one request, stores it, answers it.
fn serve(stream: TcpStream, s: &Shared) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let at = Instant::now();
    let mut r = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or("").to_owned();
    let target = words.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok());
    let mut body = vec![0; len.unwrap_or(0)];
    r.read_exact(&mut body)?;
    let mode = *s.mode.lock().unwrap();
    let status = match (len, mode) {
        (None, _) => 411,
        (_, Mode::Status(code)) => code,
        (_, Mode::Slow(d)) => {
            std::thread::sleep(d);
            200
        }
        (_, Mode::Ok | Mode::Down) => 200,
    };
    s.requests.lock().unwrap().push(Request {
        method,
        target,
        headers,
        body,
        status,
        at,
    });
    s.arrived.notify_all();
    let reason = match status {
        200 => "OK",
        302 => "Found",
        411 => "Length Required",
        500 => "Internal Server Error",
        _ => "Status",
    };
    let mut w = stream;
    let location = if (300..400).contains(&status) {
        "Location: http://example.invalid/ingest\r\n"
    } else {
        ""
    };
    write!(
        w,
        "HTTP/1.1 {status} {reason}\r\n{location}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(url: &str, body: &str) -> std::io::Result<String> {
        let addr = url.strip_prefix("http://").unwrap();
        let mut c = TcpStream::connect(addr)?;
        write!(
            c,
            "POST /ingest?name=a%7Bk%3Dv%7D&x=1 HTTP/1.1\r\nHost: {addr}\r\n\
             Content-Type: multipart/form-data; boundary=XX\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        let mut answer = String::new();
        c.read_to_string(&mut answer)?;
        Ok(answer)
    }

    #[test]
    fn stores_requests_and_follows_its_mode() {
        let rx = Receiver::start();
        let body = "--XX\r\nContent-Disposition: form-data; name=\"jfr\"; filename=\"jfr\"\r\n\r\nabc\r\n--XX\r\nContent-Disposition: form-data; name=\"labels\"\r\n\r\n\r\n--XX--\r\n";
        assert!(post(&rx.url(), body).unwrap().starts_with("HTTP/1.1 200"));
        rx.set_mode(Mode::Status(500));
        assert!(post(&rx.url(), body).unwrap().starts_with("HTTP/1.1 500"));
        rx.set_mode(Mode::Down);
        std::thread::sleep(Duration::from_millis(100));
        assert!(post(&rx.url(), body).is_err(), "refused while down");
        rx.set_mode(Mode::Ok);
        std::thread::sleep(Duration::from_millis(100));
        assert!(post(&rx.url(), body).unwrap().starts_with("HTTP/1.1 200"));
        let reqs = rx.requests();
        assert_eq!(
            reqs.iter().map(|r| r.status).collect::<Vec<_>>(),
            [200, 500, 200]
        );
        let r = &reqs[0];
        assert_eq!(r.path(), "/ingest");
        assert_eq!(r.param("name").as_deref(), Some("a{k=v}"));
        let parts = r.parts();
        assert_eq!(parts.len(), 2);
        assert_eq!(
            (parts[0].name.as_str(), &parts[0].data[..]),
            ("jfr", &b"abc"[..])
        );
        assert_eq!((parts[1].name.as_str(), parts[1].data.len()), ("labels", 0));
    }
}
