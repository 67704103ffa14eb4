#!/usr/bin/env bash
# Lists the functions in src/ (outside `#[cfg(test)]` modules) longer than LIMIT lines, counted
# from the `fn` line to its closing brace, longest first (issue 37: none past about 100).
#
#   bash scripts/long-functions.sh [LIMIT] [FOLDER]     # defaults: 100, src
#
# A brace counter, not a parser: it skips strings, chars and `//` comments, which is enough for
# this code base; a file included only under `#[cfg(test)]` from another file (diagnose's
# families/variants.rs) is counted as if it were not a test. Needs python3. Exit 0 always.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python3 - "${2:-$repo/src}" "${1:-100}" <<'PY'
import re, sys, pathlib
root = pathlib.Path(sys.argv[1]); limit = int(sys.argv[2]) if len(sys.argv) > 2 else 100
fn_re = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)')
rows = []
for path in sorted(root.rglob('*.rs')):
    lines = path.read_text().splitlines()
    i = 0; skip_depth = None; depth = 0
    pending_cfg_test = False
    # strip strings/comments crudely per char for brace counting
    def braces(line):
        out = 0; in_str = False; esc = False; j = 0
        s = line
        while j < len(s):
            c = s[j]
            if in_str:
                if esc: esc = False
                elif c == '\\': esc = True
                elif c == '"': in_str = False
            else:
                if s.startswith('//', j): break
                if c == '"': in_str = True
                elif c == "'" and j + 2 < len(s) and (s[j+2] == "'" or (s[j+1] == '\\')):
                    # char literal
                    k = s.find("'", j + 2 if s[j+1] != '\\' else j + 3)
                    j = k if k > 0 else j
                elif c == '{': out += 1
                elif c == '}': out -= 1
            j += 1
        return out, in_str
    # multi-line strings: track in_str across lines
    n = len(lines); stack = []  # (name, start, depth_at_start)
    depth = 0; in_ml = False; test_depth = None; cfg_test = False
    for idx, raw in enumerate(lines):
        line = raw
        if in_ml:
            # find closing quote not escaped
            j = 0; esc = False; closed = -1
            while j < len(line):
                c = line[j]
                if esc: esc = False
                elif c == '\\': esc = True
                elif c == '"': closed = j; break
                j += 1
            if closed < 0: continue
            line = line[closed+1:]; in_ml = False
        stripped = line.strip()
        if stripped.startswith('#[cfg(test)]'): cfg_test = True
        m = fn_re.match(line)
        if m and test_depth is None:
            stack.append((m.group(6), idx + 1, depth))
        if cfg_test and (stripped.startswith('mod ') or stripped.startswith('pub mod ') or stripped.startswith('fn ') or stripped.startswith('impl')):
            if '{' in stripped and test_depth is None:
                test_depth = depth
            cfg_test = False
        d, in_ml = braces(line)
        depth += d
        if test_depth is not None and depth <= test_depth:
            test_depth = None
        while stack and depth <= stack[-1][2] and ('}' in line or line.rstrip().endswith(';')):
            name, start, _ = stack.pop()
            rows.append((idx + 1 - start + 1, str(path), name, start))
rows.sort(reverse=True)
for length, path, name, start in rows:
    if length > limit: print(f"{length:5d}  {path}:{start}  {name}")
PY
