//! The HTTP client's failures and suspicious answers in the user's words, decided once here:
//! an untrusted certificate (with `SSL_CERT_FILE`), a port that does not speak TLS, a proxy that
//! cannot be reached, a body compressed on the way, and a web page (a captive portal's login)
//! where an installer was expected. `download` asks; it owns retries and the bytes.

use reqwest::blocking::Response;
use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE};

/// What a failed request means: whether trying again may help, and the words for it.
pub(super) struct Explained {
    pub transient: bool,
    pub reason: String,
}

/// A request that failed before an answer arrived, explained; `None` leaves it to the caller's
/// generic wording (a timeout, a redirect refused).
pub(super) fn explain(e: &reqwest::Error, url: &str) -> Option<Explained> {
    if let Some(tls) = rustls_error(e) {
        return Some(tls_failure(tls));
    }
    let text = chain(e);
    // reqwest's connector boxes the TLS error where a downcast may not reach it; rustls's
    // message then names the certificate problem by its variant.
    if let Some(cert) = text.split("invalid peer certificate: ").nth(1) {
        return Some(untrusted(cert_problem_named(cert)));
    }
    // hyper-rustls's words when the peer closes during the handshake: a plain-http port
    // answers a ClientHello with a 400 page or by hanging up.
    if text.contains("tls handshake eof") || text.contains("InvalidContentType") {
        return Some(not_tls());
    }
    if e.is_connect()
        && let Some((var, proxy)) = proxy_for(url)
    {
        return Some(Explained {
            transient: true,
            reason: format!(
                "cannot reach the proxy {proxy} (set by {var}): {text}; start the proxy or fix {var}, or unset it (or add the host to NO_PROXY) to connect directly"
            ),
        });
    }
    None
}

/// The TLS library's own error inside reqwest's chain of sources.
fn rustls_error<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e rustls::Error> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(tls) = s.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(tls) = inner.downcast_ref::<rustls::Error>()
        {
            return Some(tls);
        }
        source = s.source();
    }
    None
}

fn not_tls() -> Explained {
    Explained {
        transient: false,
        reason: "the server did not speak TLS (https) on that port; if it serves plain http, write the URL with http:// (and pin its sha256), or correct the port".into(),
    }
}

/// A certificate the machine does not trust is not a network hiccup: retrying cannot help.
fn tls_failure(e: &rustls::Error) -> Explained {
    match e {
        // The variant's name is the one account of the problem for both ways of finding it.
        rustls::Error::InvalidCertificate(cert) => {
            untrusted(cert_problem_named(&format!("{cert:?}")))
        }
        rustls::Error::InvalidMessage(_) => not_tls(),
        _ => Explained {
            transient: true,
            reason: format!("the TLS handshake failed: {e}"),
        },
    }
}

fn untrusted(problem: &str) -> Explained {
    Explained {
        transient: false,
        reason: format!(
            "the server's TLS certificate is not trusted: {problem}; {}",
            trust_fix()
        ),
    }
}

/// The certificate problem from rustls's words for it (`UnknownIssuer`,
/// `Other(OtherError(CaUsedAsEndEntity))`: webpki's self-signed case, made by
/// `openssl req -x509`, arrives wrapped in `Other` with its name as all there is to read).
fn cert_problem_named(text: &str) -> &'static str {
    let named = |n: &str| text.contains(n);
    if named("CaUsedAsEndEntity") {
        "it is self-signed (a CA certificate used by the server itself)"
    } else if named("UnknownIssuer") {
        "it is signed by an authority this machine does not trust"
    } else if named("Expired") {
        "it has expired"
    } else if named("NotValidYet") {
        "it is not valid yet (is this machine's clock right?)"
    } else if named("NotValidForName") {
        "it was issued for another host name"
    } else if named("Revoked") {
        "it has been revoked"
    } else {
        "it does not verify"
    }
}

#[cfg(windows)]
fn trust_fix() -> &'static str {
    "if this network has its own certificate authority (a company proxy, a lab mirror), import its CA certificate into the machine's Trusted Root Certification Authorities (certlm.msc) and fetch again; for a public download site, do not: the connection is being intercepted"
}

#[cfg(not(windows))]
fn trust_fix() -> &'static str {
    "if this network has its own certificate authority (a company proxy, a lab mirror), set SSL_CERT_FILE to a PEM file holding its CA certificate and fetch again (the server needs a certificate signed by that CA, not a self-signed one); for a public download site, do not: the connection is being intercepted"
}

/// The proxy reqwest takes from the environment for `url`, and the variable that set it.
// reqwest reads these variables itself; reading them again here only names what it used.
fn proxy_for(url: &str) -> Option<(String, String)> {
    let lower = url.to_ascii_lowercase();
    let host = lower
        .split_once("://")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split(['/', '?', '#']).next())
        .map(|h| h.rsplit_once(':').map_or(h, |(h, _)| h))
        .unwrap_or_default()
        .to_string();
    let var = |name: &str| {
        [name.to_string(), name.to_ascii_lowercase()]
            .into_iter()
            .find_map(|n| {
                std::env::var(&n)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| (n, v))
            })
    };
    if let Some((_, no_proxy)) = var("NO_PROXY")
        && no_proxy.split(',').map(str::trim).any(|entry| {
            let entry = entry.trim_start_matches('.');
            entry == "*"
                || (!entry.is_empty() && (host == entry || host.ends_with(&format!(".{entry}"))))
        })
    {
        return None;
    }
    let scheme = if lower.starts_with("https://") {
        "HTTPS_PROXY"
    } else {
        "HTTP_PROXY"
    };
    var(scheme).or_else(|| var("ALL_PROXY"))
}

/// Why a 200 answer is not the file asked for, read from its headers and first bytes before
/// anything is written: a web page (a captive portal or a login wall answers every URL with one),
/// or a body compressed on the way whose bytes would not be the publisher's.
pub(super) fn refuse_body(response: &mut Response, url: &str) -> Option<String> {
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .map(|v| v.trim().to_ascii_lowercase())
    };
    let encoding = header(CONTENT_ENCODING).filter(|e| !e.is_empty() && e != "identity");
    let content_type = header(CONTENT_TYPE);
    let name = crate::manifest::file_name_from_url(url)
        .unwrap_or_default()
        .to_ascii_lowercase();
    if let Some(encoding) = encoding {
        // A `.gz` served with `Content-Encoding: gzip` is a common server quirk: the bytes are
        // the file itself and the checksum decides.
        let packed = [".gz", ".tgz"].iter().any(|s| name.ends_with(s));
        if !(packed && encoding == "gzip") {
            return Some(format!(
                "the server sent the file {encoding}-compressed (Content-Encoding: {encoding}), so its bytes are not the publisher's file; stackpin never asks for that: a proxy or mirror in between is rewriting downloads; fetch from another network or mirror, or fix that proxy"
            ));
        }
    }
    let html = content_type
        .as_deref()
        .is_some_and(|t| t.starts_with("text/html") || t.starts_with("application/xhtml"));
    // A JSON data set or an `.html` the manifest names on purpose are what they say.
    if html && !name.ends_with(".html") && !name.ends_with(".htm") {
        let first = first_bytes(response);
        return Some(format!(
            "the server answered with a web page (Content-Type: {}) where the file was expected; it begins `{first}`; a captive portal, a login page or a moved download sends that: open the URL in a browser (log in to the network if asked), correct it in the manifest if it moved, then fetch again",
            content_type.unwrap_or_default()
        ));
    }
    None
}

/// Up to 80 bytes of the body, escaped so no control character reaches the terminal.
fn first_bytes(response: &mut Response) -> String {
    use std::io::Read;
    let mut buf = Vec::new();
    let _ = response.take(80).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// An error and its sources on one line: reqwest's own message alone rarely says what happened.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_certificate_is_final_and_in_plain_words() {
        let e = tls_failure(&rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ));
        assert!(!e.transient);
        assert!(e.reason.contains("not trusted"), "{}", e.reason);
        assert!(!e.reason.contains("UnknownIssuer"), "{}", e.reason);
    }
}
