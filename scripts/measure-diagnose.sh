#!/usr/bin/env bash
# Scores `stackpin diagnose` on a folder of cases against their acceptable layers and prints the
# table: per case its id, the acceptable layers, what diagnose said (layer, confidence, rule) and
# the verdict; then the totals.
#
#   bash scripts/measure-diagnose.sh [FOLDER]
#
# FOLDER defaults to ../shared/reference/diagnose-field-cases next to the repository. It holds
# one `<id>.log` per case (the message as the user pasted it) and a README.md whose table has an
# `id` column and a `layer(s)` column: the layers the thread's resolution supports, comma
# separated (`library,toolkit`), or `unknown` where the cause is outside the stack (the user's own
# code) and the honest answer is no layer.
#
# Each log goes through `stackpin diagnose LOG --host none --json` (the log comes from another
# machine, as every round is measured; see docs/diagnose-history.md). Verdicts:
#   acceptable  the layer diagnose named is one of the case's layers (or both are `unknown`)
#   unknown     diagnose named no layer for a case that has one
#   wrong       diagnose named a layer the case does not list
# Whether the fix matches the thread's resolution is left to a reader: the folder has no
# machine-readable resolution.
#
# The binary: $STACKPIN, else the release build (`cargo build --release`) under
# ${CARGO_TARGET_DIR:-target}. Needs python3 (standard library only) to read the JSON. Exit 0
# once the table is printed, whatever it says (a measurement, not a gate); 2 when the folder, a
# log or the binary is missing or diagnose fails to run.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
folder="${1:-$repo/../shared/reference/diagnose-field-cases}"
bin="${STACKPIN:-${CARGO_TARGET_DIR:-$repo/target}/release/stackpin}"

if [ ! -d "$folder" ]; then
  echo "error: no case folder at $folder; give one: bash scripts/measure-diagnose.sh FOLDER" >&2
  exit 2
fi
if [ ! -x "$bin" ]; then
  echo "error: no stackpin binary at $bin; run \`cargo build --release\` or set STACKPIN=/path/to/stackpin" >&2
  exit 2
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "error: python3 not found; the script reads diagnose's JSON with it" >&2
  exit 2
fi

read -r -d '' program <<'PY' || true
import json, pathlib, subprocess, sys

folder, binary = pathlib.Path(sys.argv[1]), sys.argv[2]
LAYERS = {"driver", "toolkit", "library", "memory", "hardware", "unknown"}


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def expected_layers(readme):
    """{id: [layers]} from the first Markdown table with an `id` and a `layer…` column."""
    rows, columns = {}, None
    for line in readme.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line.startswith("|"):
            if rows:
                break  # the first such table is the one
            columns = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if columns is None:
            names = [c.lower() for c in cells]
            layer = next((i for i, n in enumerate(names) if n.startswith("layer")), None)
            if "id" in names and layer is not None:
                columns = (names.index("id"), layer)
            continue
        if set("".join(cells)) <= set("-: "):
            continue  # the separator row
        case_id, layers = cells[columns[0]], cells[columns[1]]
        wanted = [l.strip().lower() for l in layers.split(",") if l.strip()]
        unknown = [l for l in wanted if l not in LAYERS]
        if not case_id or not wanted or unknown:
            fail(f"{readme}: case {case_id!r} has layers {layers!r}; expected some of {sorted(LAYERS)}")
        rows[case_id] = wanted
    return rows


readme = folder / "README.md"
if not readme.is_file():
    fail(f"{readme} is missing: it names each case's acceptable layers (an `id` and a `layer(s)` column)")
expected = expected_layers(readme)
if not expected:
    fail(f"{readme} has no table with an `id` and a `layer(s)` column")
logs = {p.stem: p for p in folder.glob("*.log")}
for case_id in sorted(set(logs) - set(expected)):
    print(f"note: {logs[case_id].name} has no row in {readme.name}; not scored", file=sys.stderr)
missing = sorted(set(expected) - set(logs))
if missing:
    fail(f"no log for {', '.join(missing)} in {folder} (one <id>.log per row of {readme.name})")

results = []
for case_id in sorted(expected):
    run = subprocess.run(
        [binary, "diagnose", str(logs[case_id]), "--host", "none", "--json"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )
    if run.returncode not in (0, 1):
        fail(f"diagnose exited {run.returncode} on {logs[case_id]}: {run.stderr.strip()}")
    try:
        said = json.loads(run.stdout)
    except json.JSONDecodeError as err:
        fail(f"diagnose printed no JSON document for {logs[case_id]} ({err})")
    layer, wanted = said["layer"], expected[case_id]
    if layer in wanted:
        verdict = "acceptable"
    elif layer == "unknown":
        verdict = "unknown"
    else:
        verdict = "wrong"
    answer = layer if not said.get("second_layer") else f"{layer} (or {said['second_layer']})"
    results.append((case_id, ",".join(wanted), answer, said["confidence"], said["id"], verdict))

header = ("id", "acceptable layers", "diagnose said", "confidence", "rule", "verdict")
widths = [max(len(row[i]) for row in results + [header]) for i in range(len(header))]
for row in [header, tuple("-" * w for w in widths)] + results:
    print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())

total = len(results)
count = {v: sum(1 for r in results if r[5] == v) for v in ("acceptable", "unknown", "wrong")}
known_wrong = sum(1 for r in results if r[5] == "wrong" and r[3] == "known")
pct = lambda n: f"{round(100 * n / total)} %"
print()
print(
    f"total: {total} cases in {folder}: {count['acceptable']} acceptable ({pct(count['acceptable'])}), "
    f"{count['unknown']} unknown ({pct(count['unknown'])}), {count['wrong']} wrong ({pct(count['wrong'])}; "
    f"{known_wrong} of them with known confidence)"
)
PY

exec python3 -c "$program" "$folder" "$bin"
