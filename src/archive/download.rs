//! One file over HTTP(S) into `<file>.partial`: every chunk goes to disk and into the SHA-256
//! hasher in the same pass; an existing partial is re-hashed and continued with `Range`;
//! transient failures are retried with exponential backoff and `Retry-After`.
//!
//! Deciding the expected hash, renaming into place and the lock are `fetch`'s job.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::{Client, Response};
use reqwest::header::{CONTENT_RANGE, RANGE, RETRY_AFTER};
use sha2::{Digest, Sha256};

use super::http_error::chain;
use super::layout::HASH_BUFFER;
use super::{ArchiveError, Progress};

/// Network timeouts.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// How long a TCP/TLS connect may take.
    pub connect: Duration,
    /// How long the server may send nothing (headers or body) before the attempt is dropped.
    pub stall: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(15),
            stall: Duration::from_secs(30),
        }
    }
}

/// How often and how patiently transient failures are retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// Wait before the second attempt; doubled for each one after.
    pub base: Duration,
    /// No wait is longer than this, whatever `Retry-After` asks for.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            base: Duration::from_millis(500),
            max_wait: Duration::from_secs(60),
        }
    }
}

/// True when following a redirect from `from` to `to` would drop from https to plain http.
pub fn redirect_downgrades(from: &str, to: &str) -> bool {
    from.to_ascii_lowercase().starts_with("https://")
        && to.to_ascii_lowercase().starts_with("http://")
}

/// Why a redirect hop must not be followed, by the rules a URL given directly meets (`check`):
/// never from https down to plain http; and plain http only to a loopback host, unless the
/// first URL was itself plain http to another host (which `check` admits only with a pinned
/// sha256). So a loopback URL cannot send stackpin to a remote plain-http host.
pub fn redirect_refusal(first: &str, from: &str, to: &str) -> Option<String> {
    use crate::manifest::validate::is_loopback_http;
    if redirect_downgrades(from, to) {
        return Some(format!(
            "refused a redirect from https to plain http ({to})"
        ));
    }
    let plain = |u: &str| u.to_ascii_lowercase().starts_with("http://");
    let first_is_pinned_plain = plain(first) && !is_loopback_http(first);
    if plain(to) && !is_loopback_http(to) && !first_is_pinned_plain {
        return Some(format!(
            "refused a redirect from {from} to plain http on another host ({to}): only https, or plain http to this machine, may be followed without a pinned sha256"
        ));
    }
    None
}

/// Downloads one file that belongs to no stack (a release data set) into `partial`, with the
/// client, retries and timeouts a fetch uses; returns its sha256 and size. Checking the hash
/// and moving the file into place are the caller's.
pub fn download_one(
    url: &str,
    partial: &Path,
    retry: RetryPolicy,
    limit: u64,
    progress: &dyn Progress,
) -> Result<(String, u64), ArchiveError> {
    let label = crate::manifest::file_name_from_url(url).unwrap_or_else(|| url.to_string());
    let mut downloader = Downloader::new(Timeouts::default(), retry)?;
    downloader.limit = Some(limit);
    downloader.download(url, partial, &label, progress)
}

/// What one attempt ended with when it did not succeed.
struct AttemptError {
    transient: bool,
    reason: String,
    retry_after: Option<Duration>,
    /// This side's own file could not be read or written (a full disk): not the download's
    /// failure, never retried, reported with the file's error as it is.
    local: Option<Box<ArchiveError>>,
}

impl AttemptError {
    fn transient(reason: String) -> Self {
        Self {
            transient: true,
            reason,
            retry_after: None,
            local: None,
        }
    }
    fn fatal(reason: String) -> Self {
        Self {
            transient: false,
            reason,
            retry_after: None,
            local: None,
        }
    }
    fn local(error: ArchiveError) -> Self {
        Self {
            transient: false,
            reason: error.to_string(),
            retry_after: None,
            local: Some(Box::new(error)),
        }
    }
}

/// A configured HTTP client shared by all downloads of a fetch.
pub(crate) struct Downloader {
    client: Client,
    retry: RetryPolicy,
    timeouts: Timeouts,
    /// The most bytes one body may bring (a data set's cap); more is an error, never a disk
    /// filled by an endless body.
    pub(crate) limit: Option<u64>,
}

impl Downloader {
    /// Builds the client: rustls with the ring provider, redirects followed but never https → http.
    pub fn new(timeouts: Timeouts, retry: RetryPolicy) -> Result<Self, ArchiveError> {
        // reqwest is built without a default crypto provider; the error only says one is set.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let refusal = match (attempt.previous().first(), attempt.previous().last()) {
                (Some(first), Some(from)) => {
                    redirect_refusal(first.as_str(), from.as_str(), attempt.url().as_str())
                }
                _ => None,
            };
            if let Some(why) = refusal {
                attempt.error(why)
            } else if attempt.previous().len() >= 10 {
                attempt.error("more than 10 redirects")
            } else {
                attempt.follow()
            }
        });
        let client = Client::builder()
            .connect_timeout(timeouts.connect)
            // Blocking reqwest applies this to the wait for headers and to every body read:
            // exactly a stall timeout, never a cap on a slow but moving download.
            .timeout(timeouts.stall)
            .redirect(policy)
            .user_agent(concat!("stackpin/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ArchiveError::Download {
                url: String::new(),
                attempts: 0,
                reason: format!("cannot set up the HTTP client: {}", chain(&e)),
            })?;
        Ok(Self {
            client,
            retry,
            timeouts,
            limit: None,
        })
    }

    /// Downloads `url` into `partial` (continuing what is there) and returns its sha256 and size.
    /// The partial is kept on failure so the next run can resume it.
    pub fn download(
        &self,
        url: &str,
        partial: &Path,
        label: &str,
        progress: &dyn Progress,
    ) -> Result<(String, u64), ArchiveError> {
        self.download_at_most(url, partial, label, self.limit, progress)
    }

    /// [`Downloader::download`], stopping once the body brings more than `limit` bytes (the
    /// size a lock promised for this very file).
    pub fn download_at_most(
        &self,
        url: &str,
        partial: &Path,
        label: &str,
        limit: Option<u64>,
        progress: &dyn Progress,
    ) -> Result<(String, u64), ArchiveError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let error = match self.attempt(url, partial, label, limit, progress) {
                Ok(done) => return Ok(done),
                Err(e) => e,
            };
            if let Some(local) = error.local {
                return Err(*local);
            }
            if !error.transient || attempts >= self.retry.attempts {
                return Err(ArchiveError::Download {
                    url: url.to_string(),
                    attempts,
                    reason: error.reason,
                });
            }
            let backoff = self.retry.base.saturating_mul(1 << (attempts - 1).min(16));
            let wait = error
                .retry_after
                .unwrap_or(backoff)
                .min(self.retry.max_wait);
            progress.note(&format!(
                "{label}: {}; retrying in {:.1}s (attempt {} of {})",
                error.reason,
                wait.as_secs_f64(),
                attempts + 1,
                self.retry.attempts
            ));
            std::thread::sleep(wait);
        }
    }

    fn attempt(
        &self,
        url: &str,
        partial: &Path,
        label: &str,
        limit: Option<u64>,
        progress: &dyn Progress,
    ) -> Result<(String, u64), AttemptError> {
        let io = |what: &'static str, e: std::io::Error| {
            AttemptError::local(ArchiveError::io(what, partial, e))
        };
        let mut hasher = Sha256::new();
        // Resume only from bytes we can vouch for: the partial is re-hashed, not trusted.
        let have = match std::fs::metadata(partial) {
            Ok(m) if m.len() > 0 => {
                rehash(partial, &mut hasher).map_err(|e| io("re-reading", e))?
            }
            _ => 0,
        };
        let mut request = self.client.get(url);
        if have > 0 {
            request = request.header(RANGE, format!("bytes={have}-"));
        }
        let mut response = request.send().map_err(|e| self.classify(&e, url))?;
        let status = response.status();
        let resumed =
            have > 0 && status == StatusCode::PARTIAL_CONTENT && range_starts_at(&response, have);
        if !resumed {
            if status == StatusCode::PARTIAL_CONTENT || status == StatusCode::RANGE_NOT_SATISFIABLE
            {
                // A range we cannot use (wrong start, or the partial is stale): start over.
                if have > 0 {
                    std::fs::remove_file(partial).map_err(|e| io("deleting", e))?;
                }
                return Err(AttemptError {
                    transient: true,
                    reason: format!(
                        "the server could not resume (HTTP {status}); restarting from zero"
                    ),
                    retry_after: Some(Duration::ZERO),
                    local: None,
                });
            }
            if status != StatusCode::OK {
                // The partial stays: a 5xx now does not make its bytes wrong.
                return Err(status_error(&response));
            }
            // Judged before a byte is written: a portal's page never lands in the partial.
            if let Some(why) = super::http_error::refuse_body(&mut response, url) {
                return Err(AttemptError::fatal(why));
            }
            // 200 to a range request: the server ignored it, so the whole file follows.
            hasher = Sha256::new();
        }
        let start = if resumed { have } else { 0 };
        let total = response.content_length().map(|n| n + start);
        progress.started(label, total);
        if start > 0 {
            progress.resumed(label, start);
        }
        let file = File::options()
            .create(true)
            .append(resumed)
            .write(true)
            .truncate(!resumed)
            .open(partial)
            .map_err(|e| io("creating", e))?;
        let room = limit.map(|l| l.saturating_sub(start));
        let written = self.stream(response, file, &mut hasher, label, progress, partial, room)?;
        Ok((hex::encode(hasher.finalize()), start + written))
    }

    /// Copies the body into the file and the hasher; syncs before returning.
    ///
    /// Receiving and hashing run on two threads: while SHA-256 digests one buffer the next one
    /// is already arriving, so the download is not slowed by the hash (the manual way — download,
    /// then `openssl dgst` — reads the file twice; this reads the network once).
    // The body, its two ends and the progress it reports: splitting them up would only hide
    // that they travel together.
    #[allow(clippy::too_many_arguments)]
    fn stream(
        &self,
        mut response: Response,
        file: File,
        hasher: &mut Sha256,
        label: &str,
        progress: &dyn Progress,
        partial: &Path,
        limit: Option<u64>,
    ) -> Result<u64, AttemptError> {
        const BUFFER: usize = 256 * 1024;
        const IN_FLIGHT: usize = 8;
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(IN_FLIGHT);
        let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        for _ in 0..IN_FLIGHT {
            let _ = empty_tx.send(vec![0u8; BUFFER]);
        }
        std::thread::scope(|scope| {
            // The writer owns the file: it hashes, writes, and hands each buffer back.
            let writer = scope.spawn(move || -> Result<(u64, File), std::io::Error> {
                // A modest buffer: few syscalls, and a `kill -9` loses little of what arrived
                // (the partial is what the next run resumes from).
                let mut out = BufWriter::with_capacity(BUFFER, file);
                let mut written = 0u64;
                for (buf, n) in full_rx {
                    hasher.update(&buf[..n]);
                    out.write_all(&buf[..n])?;
                    written += n as u64;
                    progress.advanced(label, n as u64);
                    let _ = empty_tx.send(buf);
                }
                let file = out.into_inner().map_err(|e| e.into_error())?;
                Ok((written, file))
            });
            let (over, failure) = receive(&mut response, &empty_rx, &full_tx, limit);
            drop(full_tx);
            let (written, file) = match writer.join() {
                Ok(Ok(done)) => done,
                Ok(Err(e)) => {
                    return Err(AttemptError::local(ArchiveError::io("writing", partial, e)));
                }
                Err(_) => {
                    return Err(AttemptError::fatal(
                        "the download's writer thread panicked".into(),
                    ));
                }
            };
            if over {
                drop(file);
                let _ = std::fs::remove_file(partial);
                return Err(AttemptError::fatal(format!(
                    "the server sent more than the {} bytes this file may hold; stopped and deleted what arrived (is the URL right?)",
                    limit.unwrap_or_default()
                )));
            }
            // Flushed and synced either way: after a failure it is the next attempt's head start.
            file.sync_all()
                .map_err(|e| AttemptError::local(ArchiveError::io("syncing", partial, e)))?;
            match failure {
                Some(e) => Err(self.lost(&e, written)),
                None => Ok(written),
            }
        })
    }

    /// A body read that failed part way: a stall, or a connection that went away.
    fn lost(&self, e: &std::io::Error, written: u64) -> AttemptError {
        // reqwest wraps its timeout inside the io::Error it returns from read().
        let timed_out = e.kind() == std::io::ErrorKind::TimedOut
            || e.get_ref()
                .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
                .is_some_and(reqwest::Error::is_timeout);
        let reason = if timed_out {
            format!(
                "no data for {}s (stall timeout) after {written} bytes",
                self.timeouts.stall.as_secs()
            )
        } else {
            format!("connection lost after {written} bytes: {}", chain(e))
        };
        AttemptError::transient(reason)
    }

    fn classify(&self, e: &reqwest::Error, url: &str) -> AttemptError {
        if e.is_redirect() {
            return AttemptError::fatal(chain(e));
        }
        if e.is_timeout() {
            return AttemptError::transient(format!(
                "no response within {}s (stall timeout)",
                self.timeouts.stall.as_secs()
            ));
        }
        if let Some(why) = super::http_error::explain(e, url) {
            return AttemptError {
                transient: why.transient,
                reason: why.reason,
                retry_after: None,
                local: None,
            };
        }
        if e.is_connect() {
            return AttemptError::transient(format!("cannot connect: {}", chain(e)));
        }
        if e.is_builder() {
            return AttemptError::fatal(chain(e));
        }
        AttemptError::transient(chain(e))
    }
}

/// The network side of [`Downloader::stream`]: fills whole buffers from the body and hands them
/// to the writer. Returns whether the body ran past `limit`, and the read error that ended it.
fn receive(
    response: &mut Response,
    empty_rx: &std::sync::mpsc::Receiver<Vec<u8>>,
    full_tx: &std::sync::mpsc::SyncSender<(Vec<u8>, usize)>,
    limit: Option<u64>,
) -> (bool, Option<std::io::Error>) {
    let mut received = 0u64;
    let mut over = false;
    let mut failure = None;
    // reqwest's blocking body hands out one network chunk (often 16 KiB) per read: fill a
    // whole buffer before handing it over, so the writer sees few, large writes.
    let mut done = false;
    while !done {
        let Ok(mut buf) = empty_rx.recv() else {
            break; // the writer stopped on an error; it reports it below
        };
        let mut n = 0;
        while n < buf.len() {
            match response.read(&mut buf[n..]) {
                Ok(0) => {
                    done = true;
                    break;
                }
                Ok(got) => n += got,
                Err(e) => {
                    failure = Some(e);
                    done = true;
                    break;
                }
            }
        }
        received += n as u64;
        if limit.is_some_and(|limit| received > limit) {
            over = true;
            break;
        }
        if n > 0 && full_tx.send((buf, n)).is_err() {
            break; // the writer stopped on an error; it reports it below
        }
    }
    (over, failure)
}

fn rehash(path: &Path, hasher: &mut Sha256) -> std::io::Result<u64> {
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; HASH_BUFFER];
    let mut total = 0;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        hasher.update(&buf[..n]);
        total += n as u64;
    }
}

/// A 206 is only usable when it really starts where our partial ends.
fn range_starts_at(response: &Response, have: u64) -> bool {
    response
        .headers()
        .get(CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("bytes "))
        .and_then(|v| v.split('-').next())
        .and_then(|v| v.trim().parse::<u64>().ok())
        == Some(have)
}

/// 5xx and 429 are worth retrying (with the server's `Retry-After`); anything else is final.
fn status_error(response: &Response) -> AttemptError {
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let transient = status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS;
    let hint = if status == StatusCode::NOT_FOUND {
        "; check the URL in the manifest (the publisher may have moved the file)"
    } else {
        ""
    };
    AttemptError {
        transient,
        reason: format!("HTTP {status}{hint}"),
        retry_after,
        local: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_hop_meets_the_rules_of_a_url_given_directly() {
        let local = "http://127.0.0.1:8080/driver.run";
        let remote_plain = "http://mirror.example/driver.run";
        let remote_tls = "https://mirror.example/driver.run";
        assert!(redirect_refusal(local, local, remote_plain).is_some());
        assert!(redirect_refusal(remote_tls, remote_tls, remote_plain).is_some());
        assert!(redirect_refusal(local, local, "http://localhost:9/x").is_none());
        assert!(redirect_refusal(local, local, remote_tls).is_none());
        // A plain-http URL to another host passed check only with a pinned sha256.
        assert!(redirect_refusal(remote_plain, remote_plain, "http://other.example/x").is_none());
    }

    #[test]
    fn redirect_from_https_to_http_is_a_downgrade() {
        assert!(redirect_downgrades(
            "https://a.test/x.run",
            "http://a.test/x.run"
        ));
        assert!(redirect_downgrades("HTTPS://a.test/x", "Http://b.test/x"));
        assert!(!redirect_downgrades("https://a.test/x", "https://b.test/x"));
        assert!(!redirect_downgrades("http://a.test/x", "https://b.test/x"));
        assert!(!redirect_downgrades("http://a.test/x", "http://b.test/x"));
    }

    #[test]
    fn errors_keep_their_causes_once_on_one_line() {
        let inner = std::io::Error::other("reset by peer");
        let outer = std::io::Error::other(inner);
        assert_eq!(chain(&outer), "reset by peer");
    }
}
