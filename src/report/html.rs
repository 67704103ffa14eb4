//! The lab page: one self-contained HTML document. Styles are inline, the memory curve is the
//! record's own SVG as a `data:` image (an SVG image runs no script and loads nothing), and a
//! Content-Security-Policy forbids every other load, so the page works offline and a hostile
//! record cannot make it fetch anything. Every string from outside goes through [`escape`].

use std::fmt::Write as _;

use super::{Lab, LabState, Proof, SourceKind, StackReport, Trust};
use crate::vram::Verdict;

const STYLE: &str = include_str!("report.css");

/// `text` safe between tags and inside double- or single-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A record time as people read it: `2026-03-01 10:00 UTC`.
fn when(time: &str) -> String {
    match time.parse::<jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M UTC").to_string(),
        Err(_) => time.to_string(),
    }
}

fn mib(value: f64) -> String {
    format!("{value:.0} MiB")
}

fn bytes(size: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = size as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{size} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The whole page.
pub fn render(lab: &Lab) -> String {
    let mut page = String::new();
    let _ = write!(
        page,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>stackpin lab report</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n"
    );
    header(&mut page, lab);
    matrix(&mut page, lab);
    for report in &lab.reports {
        stack(&mut page, report);
    }
    page.push_str("</body>\n</html>\n");
    page
}

fn header(page: &mut String, lab: &Lab) {
    let source = match lab.source {
        SourceKind::Archive => "archive",
        SourceKind::Records => "records",
    };
    let needing = lab.hosts_needing_a_person();
    let _ = write!(
        page,
        "<header>\n<h1>Lab report</h1>\n<p class=\"meta\">{} hosts · {} stacks · \
         <strong class=\"{}\">{needing} host(s) need a person</strong><br>\
         from the {source} <code>{}</code>, made {}</p>\n</header>\n",
        lab.matrix.len(),
        lab.stacks.len(),
        if needing > 0 { "alarm" } else { "calm" },
        escape(&lab.input.display().to_string()),
        escape(&when(&lab.generated_at)),
    );
}

fn state_class(state: LabState) -> &'static str {
    match state {
        LabState::Failed => "s-failed",
        LabState::Drifted => "s-drifted",
        LabState::Untrusted => "s-untrusted",
        LabState::InProgress => "s-progress",
        LabState::NeverTried => "s-never",
        LabState::Proven => "s-proven",
    }
}

fn badge(state: LabState) -> String {
    format!(
        "<span class=\"badge {}\">{}</span>",
        state_class(state),
        state.word()
    )
}

/// An anchor id for one host's stack: only `[a-z0-9-]`, so no escaping question arises.
fn anchor(host: &str, stack: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect()
    };
    format!("s-{}--{}", clean(host), clean(stack))
}

fn matrix(page: &mut String, lab: &Lab) {
    page.push_str("<section>\n<h2>Hosts × stacks</h2>\n<div class=\"scroll\">\n<table class=\"matrix\">\n<thead><tr><th>host</th>");
    for stack in &lab.stacks {
        let _ = write!(page, "<th>{}</th>", escape(stack));
    }
    page.push_str("</tr></thead>\n<tbody>\n");
    for row in &lab.matrix {
        let _ = write!(
            page,
            "<tr><th class=\"{}\">{}</th>",
            if row.needs_person { "alarm" } else { "" },
            escape(&row.host)
        );
        for cell in &row.cells {
            let date = cell.date.as_deref().map_or(String::new(), |d| {
                format!("<br><small>{}</small>", escape(&when(d)))
            });
            let label = if cell.state == LabState::NeverTried {
                badge(cell.state)
            } else {
                format!(
                    "<a href=\"#{}\">{}</a>",
                    anchor(&row.host, &cell.stack),
                    badge(cell.state)
                )
            };
            let _ = write!(page, "<td>{label}{date}</td>");
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</tbody>\n</table>\n</div>\n</section>\n");
}

fn stack(page: &mut String, r: &StackReport) {
    let _ = write!(
        page,
        "<section class=\"stack\" id=\"{}\">\n<h2>{} · {} {}</h2>\n",
        anchor(&r.host, &r.stack),
        escape(&r.host),
        escape(&r.stack),
        badge(r.state)
    );
    if let Some(date) = &r.date {
        let _ = writeln!(page, "<p class=\"meta\">as of {}</p>", escape(&when(date)));
    }
    for problem in &r.problems {
        let _ = writeln!(
            page,
            "<p class=\"problem\">problem: {}</p>",
            escape(problem)
        );
    }
    pins(page, r);
    files(page, r);
    match &r.proof {
        Some(p) => proof(page, p, r.memory_plot_svg.as_deref()),
        None => page.push_str("<h3>Proof</h3>\n<p>No proven-stack record yet.</p>\n"),
    }
    failed_and_drift(page, r);
    outdated(page, r);
    page.push_str("</section>\n");
}

fn facts(page: &mut String, rows: &[(&str, String)]) {
    page.push_str("<dl class=\"facts\">\n");
    for (key, value) in rows {
        let _ = writeln!(page, "<dt>{key}</dt><dd>{}</dd>", escape(value));
    }
    page.push_str("</dl>\n");
}

fn pins(page: &mut String, r: &StackReport) {
    page.push_str("<h3>Pinned layers</h3>\n");
    match &r.pins {
        Some(p) => facts(
            page,
            &[
                ("os", p.os.clone()),
                ("driver", p.driver.clone()),
                ("toolkit", format!("CUDA {}", p.toolkit)),
                (
                    "library",
                    format!("{} {} (CUDA {})", p.library, p.library_version, p.cuda),
                ),
            ],
        ),
        None => page.push_str("<p>No manifest kept in the stack's folder.</p>\n"),
    }
}

fn trust_word(t: Trust) -> &'static str {
    match t {
        Trust::Verified => "verified",
        Trust::Untrusted => "untrusted",
        Trust::Missing => "missing",
        Trust::NotCollected => "not collected",
    }
}

fn files(page: &mut String, r: &StackReport) {
    page.push_str("<h3>Archive</h3>\n");
    if r.files.is_empty() {
        page.push_str("<p>No archived files.</p>\n");
        return;
    }
    page.push_str(
        "<table class=\"files\">\n<thead><tr><th>layer</th><th>file</th><th>state</th>\
         <th>size</th><th>sha256</th><th>fetched</th><th>source</th></tr></thead>\n<tbody>\n",
    );
    for f in &r.files {
        let status = f
            .status
            .map(|s| super::stack::word(&s))
            .filter(|s| s != trust_word(f.trust) && s != "ok")
            .map_or(String::new(), |s| format!(" ({})", escape(&s)));
        let _ = writeln!(
            page,
            "<tr><td class=\"tight\" data-label=\"layer\">{}</td>\
             <td class=\"long\" data-label=\"file\">{}</td>\
             <td class=\"tight\" data-label=\"state\"><span class=\"t-{}\">{}</span>{status}</td>\
             <td class=\"tight\" data-label=\"size\">{}</td>\
             <td class=\"tight\" data-label=\"sha256\"><code>{}</code></td>\
             <td class=\"tight\" data-label=\"fetched\">{}</td>\
             <td class=\"long\" data-label=\"source\"><code>{}</code></td></tr>",
            f.layer,
            escape(&f.file),
            super::stack::word(&f.trust),
            trust_word(f.trust),
            f.size.map_or("—".into(), bytes),
            escape(f.sha256_prefix.as_deref().unwrap_or("—")),
            escape(&f.fetched_at.as_deref().map_or("—".into(), when)),
            escape(f.url.as_deref().unwrap_or("—")),
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

fn proof(page: &mut String, p: &Proof, plot: Option<&str>) {
    page.push_str("<h3>Proof</h3>\n");
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "—".into());
    facts(
        page,
        &[
            ("proven", when(&p.proven_at)),
            ("host", p.hostname.clone()),
            ("GPU", opt(&p.gpu)),
            ("VRAM", p.vram_mib.map_or("—".into(), |v| mib(v as f64))),
            ("driver", opt(&p.driver)),
            ("device", opt(&p.device)),
            ("toolkit", format!("CUDA {}", p.toolkit)),
            ("library", p.library.clone()),
            (
                "example",
                format!("batch {} in {:.1} s", p.batch, p.duration_s),
            ),
            (
                "peak",
                format!("{} ({} view)", mib(p.peak_mib), p.peak_authority),
            ),
            (
                "largest safe batch",
                p.largest_safe_batch
                    .map_or("none".into(), |b| b.to_string()),
            ),
        ],
    );
    page.push_str("<h4>Peak memory by source</h4>\n<table class=\"sources\">\n<tbody>\n");
    for s in &p.peak_by_source {
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td class=\"num\">{}</td></tr>",
            escape(&s.source),
            mib(s.mib)
        );
    }
    page.push_str("</tbody>\n</table>\n");
    batch_plan(page, p);
    if let Some(svg) = plot {
        let _ = writeln!(
            page,
            "<h4>Memory over the run</h4>\n<img class=\"curve\" alt=\"GPU memory over the proving \
             run, with the {:.0} % line\" src=\"data:image/svg+xml;base64,{}\">",
            p.line_share * 100.0,
            base64(svg.as_bytes())
        );
    }
}

/// Each configured batch's predicted peak as a bar on the card, the line drawn across.
fn batch_plan(page: &mut String, p: &Proof) {
    let line = (p.line_share * 100.0).clamp(0.0, 100.0);
    let _ = writeln!(
        page,
        "<h4>Batch plan against the {:.0} % line ({})</h4>\n<table class=\"plan\">\n\
         <thead><tr><th>batch</th><th>predicted peak</th><th>of the card</th></tr></thead>\n<tbody>",
        p.line_share * 100.0,
        mib(p.line_mib)
    );
    for pred in &p.predictions {
        let class = match pred.verdict {
            Verdict::Fits => "v-fits",
            Verdict::OverTheLine => "v-over",
            Verdict::OutOfMemory => "v-oom",
        };
        let width = pred.percent.clamp(0.0, 100.0);
        let measured = if pred.batch == p.batch {
            " (measured)"
        } else {
            ""
        };
        let _ = writeln!(
            page,
            "<tr><td class=\"num\">{}{measured}</td><td class=\"num\">{}</td>\
             <td><div class=\"bar\"><div class=\"fill {class}\" style=\"width:{width:.1}%\"></div>\
             <div class=\"line\" style=\"left:{line:.1}%\"></div></div>\
             <small>{:.1} % · {}</small></td></tr>",
            pred.batch,
            mib(pred.peak_mib),
            pred.percent,
            pred.verdict.words(),
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

fn failed_and_drift(page: &mut String, r: &StackReport) {
    if let Some(f) = &r.failed_run {
        let _ = writeln!(
            page,
            "<h3>Failed run</h3>\n<p class=\"problem\">{}: batch {} failed{}: {}</p>",
            escape(&when(&f.failed_at)),
            f.batch,
            f.layer
                .as_deref()
                .map_or(String::new(), |l| format!(" at the {}", escape(l))),
            escape(&f.reason)
        );
    }
    page.push_str("<h3>Drift</h3>\n");
    let Some(d) = &r.doctor else {
        page.push_str("<p>Doctor has not looked at this stack.</p>\n");
        return;
    };
    let _ = writeln!(
        page,
        "<p>Doctor looked {}: {}</p>",
        escape(&when(&d.seen_at)),
        if d.ok {
            "every check passed"
        } else {
            "a check failed"
        }
    );
    if !d.drift.is_empty() {
        page.push_str("<ul class=\"drift\">\n");
        for drift in &d.drift {
            let _ = writeln!(
                page,
                "<li>{} {} → {}</li>",
                drift.layer,
                escape(&drift.recorded),
                escape(&drift.now)
            );
        }
        page.push_str("</ul>\n");
    }
    for check in &d.failed {
        let _ = writeln!(
            page,
            "<p class=\"problem\">{}: {}{}</p>",
            check.check.question(),
            escape(&check.found),
            check
                .fix
                .as_deref()
                .map_or(String::new(), |f| format!(" — {}", escape(f)))
        );
    }
}

fn outdated(page: &mut String, r: &StackReport) {
    let Some(o) = &r.outdated else {
        return;
    };
    page.push_str("<h3>Newer releases</h3>\n");
    if o.newer.is_empty() {
        page.push_str("<p>Nothing newer in the release data in use.</p>\n");
    } else {
        page.push_str("<ul>\n");
        for n in &o.newer {
            let _ = writeln!(
                page,
                "<li>{} {} → {}: {}</li>",
                n.layer,
                escape(&n.pinned),
                escape(&n.newer),
                escape(&n.meaning)
            );
        }
        page.push_str("</ul>\n");
    }
    for note in &o.notes {
        let _ = writeln!(page, "<p class=\"meta\">{}</p>", escape(note));
    }
}

/// Standard base64 (RFC 4648, padded): the memory plot as a `data:` URI.
fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(TABLE[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_from_outside_is_escaped_in_text_and_attributes() {
        assert_eq!(
            escape("<img src=\"http://x\" onerror='a&b'>"),
            "&lt;img src=&quot;http://x&quot; onerror=&#39;a&amp;b&#39;&gt;"
        );
    }

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded, "{plain}");
        }
    }

    #[test]
    fn anchors_keep_only_safe_characters() {
        assert_eq!(anchor("ws-01.lab", "a\"b<c"), "s-ws-01-lab--a-b-c");
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(bytes(372), "372 B");
        assert_eq!(bytes(3 * 1024 * 1024 + 512 * 1024), "3.5 MiB");
    }
}
