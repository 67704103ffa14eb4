//! A loopback HTTP/1.1 server with injected faults, for download tests: cut the body after N
//! bytes, ignore `Range`, answer with error statuses first (with `Retry-After`), stall, redirect,
//! throttle, or 404 for unknown paths. It records every request it answered.
//!
//! Written on `std::net` rather than tiny_http because a fault like "cut the body and close the
//! connection" needs control of the socket that tiny_http's keep-alive handling does not give.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How one path is served. Counters (`cut_times`, `failures`, `stall_times`) are used up by
/// successive requests, so "500, 500, then 200" is `failures: vec![500, 500]`.
#[derive(Clone, Default)]
pub struct Route {
    pub body: Vec<u8>,
    /// End the body after this many bytes and close, for the next `cut_times` requests.
    pub cut_after: Option<usize>,
    pub cut_times: usize,
    /// Answer every request with the whole body and 200, whatever `Range` says.
    pub ignore_range: bool,
    /// Statuses answered (with an empty body) before the file is served.
    pub failures: Vec<u16>,
    /// `Retry-After` seconds sent with those failures.
    pub retry_after: Option<u64>,
    /// Send this many bytes, then send nothing more for a minute, for `stall_times` requests.
    pub stall_after: Option<usize>,
    pub stall_times: usize,
    /// Answer 302 to this location.
    pub redirect: Option<String>,
    /// Pause after each 64 KiB, to make downloads last.
    pub throttle: Option<Duration>,
    /// A `Content-Type` header for 200 answers (pip reads index pages only as `text/html`).
    pub content_type: Option<String>,
    /// A `Content-Encoding` header for 200 answers (a proxy that compresses on the way).
    pub content_encoding: Option<String>,
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Hit {
    pub path: String,
    pub range: Option<String>,
    pub status: u16,
    /// Body bytes written.
    pub sent: usize,
}

#[derive(Default)]
struct State {
    routes: HashMap<String, Route>,
    hits: Vec<Hit>,
}

/// The server; it runs until the test process ends.
pub struct TestServer {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl TestServer {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = serve(stream, &state);
                });
            }
        });
        Self { port, state }
    }

    pub fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }

    pub fn route(&self, path: &str, route: Route) {
        let key = format!("/{}", path.trim_start_matches('/'));
        self.state.lock().expect("state").routes.insert(key, route);
    }

    /// Serves `body` plainly at `path`.
    pub fn file(&self, path: &str, body: &[u8]) {
        self.route(
            path,
            Route {
                body: body.to_vec(),
                ..Route::default()
            },
        );
    }

    pub fn hits(&self, path: &str) -> Vec<Hit> {
        let key = format!("/{}", path.trim_start_matches('/'));
        let state = self.state.lock().expect("state");
        state
            .hits
            .iter()
            .filter(|h| h.path == key)
            .cloned()
            .collect()
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut range = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("range")
        {
            range = Some(value.trim().to_string());
        }
    }
    // Decide the whole answer under the lock, then write without it.
    let (status, headers, body, cut, stall, throttle) = {
        let mut s = state.lock().expect("state");
        match s.routes.get_mut(&path) {
            None => (404, String::new(), b"not found".to_vec(), None, None, None),
            Some(route) if !route.failures.is_empty() => {
                let status = route.failures.remove(0);
                let extra = route
                    .retry_after
                    .map(|r| format!("Retry-After: {r}\r\n"))
                    .unwrap_or_default();
                (status, extra, Vec::new(), None, None, None)
            }
            Some(route) if route.redirect.is_some() => {
                let to = route.redirect.clone().unwrap_or_default();
                (
                    302,
                    format!("Location: {to}\r\n"),
                    Vec::new(),
                    None,
                    None,
                    None,
                )
            }
            Some(route) => {
                let start = range
                    .as_deref()
                    .filter(|_| !route.ignore_range)
                    .and_then(|r| r.strip_prefix("bytes="))
                    .and_then(|r| r.trim_end_matches('-').parse::<usize>().ok());
                let cut = (route.cut_times > 0).then_some(route.cut_after).flatten();
                if cut.is_some() {
                    route.cut_times -= 1;
                }
                let stall = (route.stall_times > 0)
                    .then_some(route.stall_after)
                    .flatten();
                if stall.is_some() {
                    route.stall_times -= 1;
                }
                let len = route.body.len();
                match start {
                    Some(n) if n >= len => (
                        416,
                        format!("Content-Range: bytes */{len}\r\n"),
                        Vec::new(),
                        None,
                        None,
                        None,
                    ),
                    Some(n) => (
                        206,
                        format!("Content-Range: bytes {n}-{}/{len}\r\n", len - 1),
                        route.body[n..].to_vec(),
                        cut,
                        stall,
                        route.throttle,
                    ),
                    None => (
                        200,
                        route
                            .content_type
                            .as_ref()
                            .map(|t| format!("Content-Type: {t}\r\n"))
                            .into_iter()
                            .chain(
                                route
                                    .content_encoding
                                    .as_ref()
                                    .map(|e| format!("Content-Encoding: {e}\r\n")),
                            )
                            .collect::<String>(),
                        route.body.clone(),
                        cut,
                        stall,
                        route.throttle,
                    ),
                }
            }
        }
    };
    let mut out = stream;
    let reason = match status {
        200 => "OK",
        206 => "Partial Content",
        302 => "Found",
        404 => "Not Found",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        _ => "Error",
    };
    write!(
        out,
        "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\n{headers}Connection: close\r\n\r\n",
        body.len()
    )?;
    let limit = cut.or(stall).unwrap_or(body.len()).min(body.len());
    let mut sent = 0;
    let record = |sent: usize| {
        state.lock().expect("state").hits.push(Hit {
            path: path.clone(),
            range: range.clone(),
            status,
            sent,
        });
    };
    for (i, chunk) in body[..limit].chunks(64 * 1024).enumerate() {
        // Pause between chunks, not after the last: the hit is recorded before the client can
        // finish and the test looks at the hits.
        if let (Some(pause), true) = (throttle, i > 0) {
            std::thread::sleep(pause);
        }
        if out.write_all(chunk).is_err() {
            record(sent);
            return Ok(());
        }
        sent += chunk.len();
    }
    out.flush()?;
    record(sent);
    if stall.is_some() {
        std::thread::sleep(Duration::from_secs(60));
    }
    let _ = out.shutdown(std::net::Shutdown::Both);
    Ok(())
}
