#!/usr/bin/env bash
# Renders `stackpin report`'s pages in headless Chromium at a laptop's width (1366x900) and a
# phone's (390x844) and saves the screenshots under target/report-screenshots/.
#
# The pages come from the CLI tests (tests/cli/report.rs): a real archive with a proven, a
# drifted, an untrusted and a never-fetched stack (lab.html), and a records folder of three hosts
# (fleet.html). Checks, each failing the script:
#   - the page references no URL (no <script>, <link>, url(), and every src=/href= is an in-page
#     anchor or a data: image);
#   - Chromium runs in a network namespace with no interface but loopback (when `unshare -n` is
#     allowed), and its net log shows no request other than file: and data:;
#   - no cell's text is wider than its cell and no table wider than its box, at either width
#     (measured by a copy of the page with a small inline script, since the page itself has none).
#
# Usage: scripts/screenshot-report.sh [--keep-pages DIR]
# Needs: the Debian package `chromium` (installed with apt-get when missing and run as root).
set -euo pipefail

cd "$(dirname "$0")/.."
out=target/report-screenshots
pages=$out/pages
mkdir -p "$out"
rm -rf "$pages"

chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null
        chrome=$(command -v chromium)
    else
        echo "error: chromium is not installed; run: sudo apt-get install chromium" >&2
        exit 2
    fi
fi

echo "== building the demo pages (cargo test --test cli report::)"
STACKPIN_REPORT_DEMO="$PWD/$pages" cargo test --quiet --test cli report:: >/dev/null
for page in lab fleet; do
    [ -s "$pages/$page.html" ] || { echo "error: the tests wrote no $page.html" >&2; exit 1; }
done

fail=0

echo "== the pages reference nothing outside themselves"
for page in "$pages"/*.html; do
    if grep -Eio '<script|<link|<iframe|<object|<embed|@import|url\(' "$page" | sort -u | grep .; then
        echo "FAIL: $page holds a loading element"; fail=1
    fi
    if grep -Eo "(src|href)=[\"'][^\"'#][^\"']{0,30}" "$page" | grep -v "data:image/svg+xml;base64," | grep .; then
        echo "FAIL: $page references something that could load"; fail=1
    fi
done

# No network at all where the kernel lets us make a namespace; the net log checks either way.
isolate=()
if unshare -n true 2>/dev/null; then
    isolate=(unshare -n)
elif unshare -rn true 2>/dev/null; then
    isolate=(unshare -rn)
else
    echo "note: no network namespace here; relying on the page check and the net log"
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chrome_run() {
    "${isolate[@]}" "$chrome" --headless --no-sandbox --disable-gpu \
        --disable-background-networking --disable-component-update --no-first-run \
        --disable-sync --disable-default-apps --hide-scrollbars --no-pings \
        --disable-domain-reliability --disable-features=NetworkTimeServiceQuerying \
        --screen-info={1600x2400} --user-data-dir="$profile" "$@" 2>/dev/null
}

# A copy of the page with a script that measures overflow and writes the verdict into the DOM
# (the page itself has no script, and its CSP would refuse one).
measure_copy() {
    python3 - "$1" "$2" <<'PY'
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
script = r"""
(() => {
  const bad = [];
  for (const el of document.querySelectorAll('td, th, dd, h2, p, li')) {
    if (el.closest('.scroll')) continue;
    if (el.scrollWidth > el.clientWidth + 1) bad.push(el.tagName + ': ' + el.textContent.slice(0, 60));
  }
  for (const t of document.querySelectorAll('table')) {
    if (t.closest('.scroll')) continue;
    if (t.getBoundingClientRect().right > t.parentElement.getBoundingClientRect().right + 1)
      bad.push('table wider than its box: ' + t.className);
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    bad.push('page wider than the window: ' + document.documentElement.scrollWidth);
  const pre = document.createElement('pre');
  pre.id = 'overflow-verdict';
  pre.textContent = bad.length ? 'OVERFLOW\n' + bad.join('\n') : 'NO-OVERFLOW';
  document.body.appendChild(pre);
})();
"""
page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
page = page.replace("</body>", "<script>" + script + "</script></body>")
open(sys.argv[2], "w", encoding="utf-8").write(page)
PY
}

for page in lab fleet; do
    for size in laptop:1366,900 phone:390,844; do
        name=${size%%:*}
        wh=${size#*:}
        png=$out/$page-$name.png
        netlog=$out/$page-$name.netlog.json
        echo "== $page at $name ($wh)"
        chrome_run --window-size="$wh" --screenshot="$PWD/$png" --log-net-log="$PWD/$netlog" \
            "file://$PWD/$pages/$page.html" >/dev/null || true
        [ -s "$png" ] || { echo "FAIL: no screenshot $png"; fail=1; continue; }
        # The net log names every URL Chromium asked for: only the page and its data: may appear,
        # beside Chromium's own service calls (network time, component updates to Google hosts),
        # which its flags do not silence entirely and the namespace cuts off.
        if grep -Eo '"url":"[a-z-]+:[^"]{0,60}' "$netlog" | grep -Ev '"url":"(file|data):' |
            grep -Ev '"url":"https?://[a-z0-9.-]*\.(google\.com|googleapis\.com|gstatic\.com)/' |
            sort -u | grep .; then
            echo "FAIL: Chromium requested something other than the page"; fail=1
        fi
        measure_copy "$pages/$page.html" "$pages/$page-measure.html"
        verdict=$(chrome_run --window-size="$wh" --virtual-time-budget=2000 --dump-dom \
            "file://$PWD/$pages/$page-measure.html" |
            sed -n '/<pre id="overflow-verdict">/,/<\/pre>/p')
        case "$verdict" in
            *NO-OVERFLOW*) echo "   no text overflows its table; $png" ;;
            *) echo "FAIL: overflow at $name:"; echo "$verdict"; fail=1 ;;
        esac
    done
done

# The README's picture: the laptop width, tall enough for the matrix, a stack's archive and its
# proof (docs/report-laptop.png is a copy of this one).
chrome_run --window-size=1366,1900 --screenshot="$PWD/$out/lab-overview.png" \
    "file://$PWD/$pages/lab.html" >/dev/null || true

if [ "$fail" != 0 ]; then
    echo "screenshot-report: FAILED" >&2
    exit 1
fi
echo "screenshot-report: ok; screenshots in $out/"
