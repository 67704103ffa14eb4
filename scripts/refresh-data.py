#!/usr/bin/env python3
"""The maintainers' refresh: reads the package index and prints, row by row, where the shipped
release data (data/*.yaml) differs from what the index states.

For each library of data/libraries.yaml it reads the index's JSON (the PEP 691 simple API) and the
wheels' core metadata (PEP 658 where the index serves it; otherwise the METADATA file read out of
the wheel with HTTP range requests, the way pip's lazy wheel does), and derives:

  - the releases (torch, torchvision, tensorflow, tensorflow-gpu, onnxruntime-gpu);
  - the Python versions with wheels, per platform, from the wheel tags (cp310 ... cp315);
  - torchvision's pairing, from its wheel's `Requires-Dist: torch==...`;
  - the CUDA libraries each torch wheel pins (`nvidia-cudnn-cu13==...`, `cuda-toolkit==...`);
  - the distribution that holds TensorFlow's GPU build (`tensorflow-gpu` before 2.1);
  - the CUDA toolkit releases NVIDIA publishes as the `cuda-toolkit` meta-package;
  - uv's newest release and its wheels' sha256 per platform (the installer `pin` writes).

Facts the index cannot state (a toolkit's minimum driver, GPU generations, driver branches, the
CUDA builds on the PyTorch index when it cannot be reached) stay hand-written in data/; the
report names them as unverified, and lists new CUDA releases that need a minimum driver first.

The index is the one pip uses: `--index-url`, else $PIP_INDEX_URL, else pip's configured
`global.index-url`, else pip's own default. This file names no index host.

  python3 scripts/refresh-data.py                 # report against the live index
  python3 scripts/refresh-data.py --record DIR    # ... and save every response read into DIR
  python3 scripts/refresh-data.py --replay DIR    # report from saved responses, offline
  python3 scripts/refresh-data.py --check         # exit 1 when a row differs (the live check)
  python3 scripts/refresh-data.py --write DIR     # data/ with the corrections, for `data pack`

Exit codes: 0 every checked row matches (or no --check), 1 a row differs under --check,
3 the index could not be read, or PyYAML is missing (the check is then reported as skipped,
never as passed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import urllib.parse
import urllib.request
import zlib
from email.parser import HeaderParser
from pathlib import Path

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
# A wheel's zip end-of-central-directory record sits in its last bytes; 64 KiB holds it and, for
# every wheel seen so far, the whole central directory is read in one more request.
TAIL_BYTES = 65536
# The platforms the data set pins for: the wheel-tag prefixes of Linux x86_64 and Windows x64.
PLATFORMS = {"linux": ("manylinux", "linux_x86_64"), "windows": ("win_amd64",)}
UV_PLATFORMS = {"linux-x86_64": "manylinux_2_17_x86_64", "windows-x86_64": "win_amd64"}
# Where recorded responses keep the wheel files' host: replaced so fixtures name no host.
FILES_HOST = "{files}"


class IndexUnreachable(Exception):
    """The index did not answer; the refresh is skipped, never reported as a pass."""


# ---------------------------------------------------------------------------------------------
# Pure derivations over index responses (unit-tested over recorded fixtures).


def parse_wheel(filename: str) -> dict | None:
    """Name, version, Python tags, ABI and platform tags of a wheel file name (PEP 427)."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):
        return None
    name, version = parts[0], parts[1]
    py, abi, plat = parts[-3], parts[-2], parts[-1]
    return {
        "name": name,
        "version": version,
        "pythons": py.split("."),
        "abi": abi,
        "platforms": plat.split("."),
    }


def cpython_lines(tags: list[str]) -> list[tuple[int, int]]:
    """`cp312` -> (3, 12); other interpreters and `py3` are skipped."""
    out = []
    for tag in tags:
        m = re.fullmatch(r"cp(\d)(\d+)", tag)
        if m:
            out.append((int(m.group(1)), int(m.group(2))))
    return out


def canonical(version: str) -> tuple:
    """A release version as PEP 440 compares it: `12.8.2.0` equals `12.8.2`."""
    key = list(version_key(version))
    while len(key) > 1 and key[-1] == 0:
        key.pop()
    return tuple(key)


def on_platform(wheel: dict, os_name: str) -> bool:
    prefixes = PLATFORMS[os_name]
    return any(p.startswith(prefixes) and "aarch64" not in p for p in wheel["platforms"])


def python_range(files: list[dict], version: str, os_name: str) -> tuple[str, str] | None:
    """The Python 3 lines that have a CPython wheel of `version` for the OS, as (min, max);
    free-threaded builds (`cp314t`) count as their line. Python 2 wheels are left out: the data
    set pins Python 3 interpreters only."""
    lines = set()
    for f in files:
        wheel = parse_wheel(f["filename"])
        if not wheel or canonical(wheel["version"]) != canonical(version):
            continue
        if not on_platform(wheel, os_name) or f.get("yanked"):
            continue
        lines.update(line for line in cpython_lines(wheel["pythons"]) if line[0] == 3)
    if not lines:
        return None
    low, high = min(lines), max(lines)
    return (f"{low[0]}.{low[1]}", f"{high[0]}.{high[1]}")


def release_versions(project: dict) -> list[str]:
    """Every version that has at least one file, in version order (final releases only)."""
    wheels = (parse_wheel(f["filename"]) for f in project["files"])
    with_files = {canonical(w["version"]) for w in wheels if w}
    finals = [v for v in project.get("versions", []) if re.fullmatch(r"\d+(\.\d+)*", v)]
    return sorted((v for v in finals if canonical(v) in with_files), key=version_key)


def version_key(v: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def requires_dist(metadata: str) -> list[str]:
    return HeaderParser().parsestr(metadata).get_all("Requires-Dist") or []


def exact_pins(metadata: str) -> dict[str, str]:
    """`name==version` requirements of the wheel (markers dropped, extras dropped), by
    normalized name: the pins a wheel states for the libraries it must run with."""
    pins = {}
    for req in requires_dist(metadata):
        req = req.split(";")[0].strip()
        m = re.fullmatch(r"([A-Za-z0-9._-]+)(\[[^\]]*\])?\s*\(?==\s*([^,\s)]+)\)?", req)
        if m:
            pins[normalize(m.group(1))] = m.group(3)
    return pins


def requirement_spec(metadata: str, name: str) -> str | None:
    """The version specifier a wheel states for `name` (`>=2.14.0`, `==2.5.1`), markers dropped."""
    for req in requires_dist(metadata):
        req = req.split(";")[0].strip()
        m = re.fullmatch(r"([A-Za-z0-9._-]+)(\[[^\]]*\])?\s*\(?([^)]*)\)?", req)
        if m and normalize(m.group(1)) == normalize(name):
            return m.group(3).replace(" ", "")
    return None


def admits(spec: str, version: str) -> bool:
    """Whether a specifier (`>=2.14.0,<3`, `==2.5.*`) admits a release version."""
    have = canonical(version)
    for clause in filter(None, spec.split(",")):
        m = re.fullmatch(r"(==|!=|>=|<=|>|<|~=)(.+)", clause)
        if not m:
            return False
        op, want = m.groups()
        if want.endswith(".*"):
            prefix = version_key(want[:-2])
            same = tuple(version_key(version)[: len(prefix)]) == prefix
            if (op == "==") != same:
                return False
            continue
        w = canonical(want)
        ok = {"==": have == w, "!=": have != w, ">=": have >= w, "<=": have <= w,
              ">": have > w, "<": have < w, "~=": have >= w and have[: len(w) - 1] == w[:-1]}[op]
        if not ok:
            return False
    return True


def upload_day(project: dict, version: str) -> str | None:
    days = [f["upload-time"][:10] for f in project["files"]
            if (w := parse_wheel(f["filename"])) and canonical(w["version"]) == canonical(version)
            and f.get("upload-time")]
    return min(days) if days else None


def pair_companion(torch_version: str, torch_day: str | None, candidates: list[tuple[str, str, str | None]]) -> str | None:
    """The companion release published for `torch_version`, from (release, its `torch` specifier,
    its upload day) rows: the one pinning `torch==torch_version` exactly; else the one admitting
    it that was published the same day (torchvision 0.29.1 and 0.29.2 state `torch>=2.14.0` and
    came out with torch 2.14.1 and 2.15.0)."""
    for release, spec, _ in candidates:
        if spec and spec.startswith("==") and admits(spec, torch_version):
            return release
    for release, spec, day in candidates:
        if spec and admits(spec, torch_version) and day and day == torch_day:
            return release
    return None


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def cuda_libraries(metadata: str) -> dict[str, str]:
    """The CUDA pieces a wheel pins: `nvidia-*` libraries and NVIDIA's `cuda-toolkit`."""
    return {
        name: v
        for name, v in exact_pins(metadata).items()
        if name.startswith("nvidia-") or name == "cuda-toolkit"
    }


def cuda_line_of(libs: dict[str, str]) -> str | None:
    """The CUDA line (`13.0`) a wheel was built for, from the runtime it pins."""
    for name in ("cuda-toolkit", "nvidia-cuda-runtime-cu13", "nvidia-cuda-runtime-cu12",
                 "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu11"):
        if name in libs:
            return ".".join(libs[name].split(".")[:2])
    return None


def cudnn_of(libs: dict[str, str]) -> str | None:
    for name, v in libs.items():
        if name.startswith("nvidia-cudnn-cu") or name == "nvidia-cudnn":
            return v
    return None


def gpu_distribution(version: str, gpu_project: dict | None) -> str:
    """The distribution holding TensorFlow's GPU build of `version`: `tensorflow-gpu` while that
    project has wheels of the release and TensorFlow is older than 2.1 (from 2.1 on the
    `tensorflow` wheels carry the GPU build, per TensorFlow's install notes)."""
    if version_key(version) < (2, 1) and gpu_project and version in release_versions(gpu_project):
        return "tensorflow-gpu"
    return "tensorflow"


def pick_wheel(files: list[dict], version: str, os_name: str = "linux") -> dict | None:
    """One CPython wheel of `version` for the OS: the newest Python line, not free-threaded."""
    best = None
    for f in files:
        wheel = parse_wheel(f["filename"])
        if not wheel or canonical(wheel["version"]) != canonical(version):
            continue
        if not on_platform(wheel, os_name) or wheel["abi"].endswith("t"):
            continue
        lines = cpython_lines(wheel["pythons"])
        key = max(lines) if lines else (0, 0)
        if best is None or key > best[0]:
            best = (key, f)
    return best[1] if best else None


def uv_wheels(project: dict, version: str) -> dict[str, dict]:
    """uv's wheels of `version` for the platforms the data pins, with their sha256."""
    out = {}
    for key, tag in UV_PLATFORMS.items():
        for f in project["files"]:
            wheel = parse_wheel(f["filename"])
            if wheel and canonical(wheel["version"]) == canonical(version) and tag in wheel["platforms"]:
                out[key] = {"file": f["filename"], "sha256": f["hashes"].get("sha256")}
    return out


# ---------------------------------------------------------------------------------------------
# Reading the index (live, recording, or replaying recorded responses).


def pip_index_url() -> str:
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    try:
        configured = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
            capture_output=True, text=True, timeout=60, check=False,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        configured = ""
    if configured:
        return configured
    try:
        from pip._internal.models.index import PyPI  # pip's own default index

        return PyPI.simple_url
    except ImportError as e:
        raise IndexUnreachable("no index URL: pass --index-url or set PIP_INDEX_URL") from e


class Index:
    """The index's answers: live over HTTP (recorded into `record` when given) or replayed."""

    def __init__(self, url: str | None, record: Path | None = None, replay: Path | None = None):
        self.url = url.rstrip("/") if url else None
        self.record = record
        self.replay = replay
        self.projects: dict[str, dict | None] = {}
        self.metadatas: dict[str, str | None] = {}

    def project(self, name: str) -> dict | None:
        if name not in self.projects:
            self.projects[name] = self._project(name)
        return self.projects[name]

    def _project(self, name: str) -> dict | None:
        if self.replay:
            path = self.replay / f"{name}.json"
            return json.loads(path.read_text()) if path.exists() else None
        req = urllib.request.Request(f"{self.url}/{name}/", headers={"Accept": SIMPLE_JSON})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                data = json.load(r)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise IndexUnreachable(f"{self.url}/{name}/: HTTP {e.code}") from e
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            raise IndexUnreachable(f"{self.url}/{name}/: {e}") from e
        if self.record:
            self.record.mkdir(parents=True, exist_ok=True)
            (self.record / f"{name}.json").write_text(json.dumps(strip_hosts(data), indent=1) + "\n")
        return data

    def metadata(self, file: dict) -> str | None:
        """The wheel's core metadata (METADATA), PEP 658 first, else read out of the wheel."""
        if file["filename"] not in self.metadatas:
            self.metadatas[file["filename"]] = self._metadata(file)
        return self.metadatas[file["filename"]]

    def _metadata(self, file: dict) -> str | None:
        if self.replay:
            path = self.replay / "metadata" / f"{file['filename']}.metadata"
            return path.read_text() if path.exists() else None
        try:
            if file.get("core-metadata") or file.get("data-dist-info-metadata"):
                with urllib.request.urlopen(file["url"] + ".metadata", timeout=120) as r:
                    text = r.read().decode()
            else:
                text = metadata_from_wheel(file["url"], file["size"])
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as e:
            print(f"  note: no metadata for {file['filename']}: {e}", file=sys.stderr)
            return None
        if self.record:
            out = self.record / "metadata"
            out.mkdir(parents=True, exist_ok=True)
            # The headers only: the description after them is the project's README, which may
            # name hosts and is not read here.
            (out / f"{file['filename']}.metadata").write_text(text.split("\n\n", 1)[0] + "\n")
        return text


def strip_hosts(project: dict) -> dict:
    """The project JSON with each file URL's scheme and host replaced by FILES_HOST."""
    out = dict(project)
    out["files"] = []
    for f in project.get("files", []):
        f = dict(f)
        parsed = urllib.parse.urlsplit(f["url"])
        f["url"] = FILES_HOST + parsed.path
        out["files"].append(f)
    return out


def read_range(url: str, start: int, end: int) -> bytes:
    req = urllib.request.Request(url, headers={"Range": f"bytes={start}-{end - 1}"})
    with urllib.request.urlopen(req, timeout=120) as r:
        if r.status != 206:
            raise ValueError(f"the server ignored the Range request (HTTP {r.status})")
        return r.read()


def metadata_from_wheel(url: str, size: int) -> str:
    """`*.dist-info/METADATA` out of a remote wheel: the end of central directory, the central
    directory, then that one member, three range requests and no whole download."""
    tail_start = max(0, size - TAIL_BYTES)
    tail = read_range(url, tail_start, size)
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0:
        raise ValueError("no end-of-central-directory record in the wheel's last bytes")
    cd_size, cd_offset = struct.unpack("<II", tail[eocd + 12 : eocd + 20])
    if cd_offset >= tail_start:
        cd = tail[cd_offset - tail_start : cd_offset - tail_start + cd_size]
    else:
        cd = read_range(url, cd_offset, cd_offset + cd_size)
    pos = 0
    while pos + 46 <= len(cd) and cd[pos : pos + 4] == b"PK\x01\x02":
        method, = struct.unpack("<H", cd[pos + 10 : pos + 12])
        csize, = struct.unpack("<I", cd[pos + 20 : pos + 24])
        nlen, elen, clen = struct.unpack("<HHH", cd[pos + 28 : pos + 34])
        local, = struct.unpack("<I", cd[pos + 42 : pos + 46])
        name = cd[pos + 46 : pos + 46 + nlen].decode()
        pos += 46 + nlen + elen + clen
        if re.fullmatch(r"[^/]+\.dist-info/METADATA", name):
            head = read_range(url, local, local + 30 + 1024 + csize)
            lnlen, lelen = struct.unpack("<HH", head[26:30])
            body = head[30 + lnlen + lelen : 30 + lnlen + lelen + csize]
            data = zlib.decompress(body, -15) if method == 8 else body
            return data.decode()
    raise ValueError("no *.dist-info/METADATA in the wheel")


# ---------------------------------------------------------------------------------------------
# The comparison with the shipped set.


class Report:
    def __init__(self):
        self.rows: list[tuple[str, str, str, str, str]] = []
        # What --write changes in a copy of data/: (table, row key, field, value).
        self.fixes: list[tuple[str, str, str, str]] = []

    def fix(self, table: str, key: str, field: str, value: str):
        self.fixes.append((table, key, field, value))

    def row(self, what: str, fact: str, shipped, index, status: str | None = None):
        shipped_s = "-" if shipped is None else str(shipped)
        index_s = "-" if index is None else str(index)
        if status is None:
            status = "ok" if shipped_s == index_s else "DIFFERS"
        self.rows.append((what, fact, shipped_s, index_s, status))

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r[4]] = out.get(r[4], 0) + 1
        return out

    def print(self, out=sys.stdout):
        widths = [max(len(r[i]) for r in self.rows + [("row", "fact", "data", "index", "")]) for i in range(4)]
        head = ("row", "fact", "data", "index", "status")
        for r in [head] + self.rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[4], file=out)
        print(", ".join(f"{n} {k}" for k, n in sorted(self.counts().items())), file=out)


def merged_fixes(fixes: list[tuple[str, str, str, str]]) -> dict[tuple[str, str, str], str]:
    """One value per (table, row, field): a row's Python range must hold for every version in
    it, so the highest minimum and the lowest maximum win."""
    out: dict[tuple[str, str, str], str] = {}
    for table, key, field, value in fixes:
        k = (table, key, field)
        if k in out and field == "python.min":
            value = max(out[k], value, key=version_key)
        elif k in out and field == "python.max":
            value = min(out[k], value, key=version_key)
        out[k] = value
    return out


def apply_fix(text: str, table: str, key: str, field: str, value: str) -> str:
    """One correction in a table's text, the row's own line edited in place (comments, order and
    flow style kept): pytorch.yaml rows by `release`, tensorflow.yaml rows by `<os> <version>`."""
    lines = text.split("\n")
    if table == "pytorch.yaml":
        start = lines.index(f'  - release: "{key}"')
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("  - ")), len(lines))
        name = field.split(".")[0]
        target = next(i for i in range(start, end) if lines[i].startswith(f"    {name}: {{"))
    else:
        os_name, version = key.split(" ")
        section = lines.index(f"{os_name}:")
        target = next(i for i in range(section + 1, len(lines))
                      if f'{{version: "{version}"' in lines[i])
    line = lines[target]
    if field in ("python.min", "python.max"):
        attr = field.split(".")[1]
        line = re.sub(rf'{attr}: "[^"]*"', f'{attr}: "{value}"', line, count=1)
    elif field.startswith("cudnn."):
        cuda = field.split(".", 1)[1]
        line = re.sub(rf'"{re.escape(cuda)}": "[^"]*"', f'"{cuda}": "{value}"', line, count=1)
    elif field == "distribution":
        line = re.sub(r", distribution: [^,}]+", "", line)
        if value != "tensorflow":
            line = line[: line.rindex("}")] + f", distribution: {value}" + line[line.rindex("}"):]
    lines[target] = line
    return "\n".join(lines)


def write_set(data: Path, out: Path, fixes: list[tuple[str, str, str, str]]) -> list[str]:
    """A copy of `data` with the index's corrections applied, ready for `stackpin data pack`.
    New releases are not written: each needs facts the index cannot state (a toolkit's minimum
    driver, the CUDA builds on the PyTorch index), so the report lists them for a maintainer."""
    out.mkdir(parents=True, exist_ok=True)
    texts = {p.name: p.read_text() for p in sorted(data.glob("*.yaml"))}
    done = []
    for (table, key, field), value in merged_fixes(fixes).items():
        texts[table] = apply_fix(texts[table], table, key, field, value)
        done.append(f"{table}: {key} {field} = {value}")
    for name, text in texts.items():
        (out / name).write_text(text)
    return done


def load_yaml(path: Path):
    try:
        import yaml  # PyYAML: the maintainers' machine; the derivations above need nothing
    except ImportError as e:
        raise IndexUnreachable("the comparison reads data/*.yaml with PyYAML, not installed here "
                               "(pip install pyyaml)") from e
    return yaml.safe_load(path.read_text())


def compare_torch(index: Index, data: dict, report: Report):
    torch = index.project("torch")
    vision = index.project("torchvision")
    if torch is None:
        report.row("torch", "releases", "listed", None, "UNVERIFIED")
        return
    on_index = release_versions(torch)
    shipped = {v for row in data["releases"] for v in row["versions"]}
    oldest = min((version_key(v) for v in shipped), default=(0,))
    for v in on_index:
        if version_key(v) >= oldest and v not in shipped:
            report.row(f"torch {v}", "release", None, v, "NEW")
    for row in data["releases"]:
        for v in row["versions"]:
            if v not in on_index:
                report.row(f"torch {v}", "release", v, None, "DIFFERS")
                continue
            for os_name in ("linux", "windows"):
                got = python_range(torch["files"], v, os_name)
                want = (str(row["python"]["min"]), str(row["python"]["max"]))
                status = python_status(want, got)
                report.row(f"torch {v}", f"python ({os_name})", "-".join(want),
                           "-".join(got) if got else None, status)
                if got and got != want and status != "narrower":
                    report.fix("pytorch.yaml", str(row["release"]), "python.min", got[0])
                    report.fix("pytorch.yaml", str(row["release"]), "python.max", got[1])
            wheel = pick_wheel(torch["files"], v)
            meta = index.metadata(wheel) if wheel else None
            if meta is None:
                report.row(f"torch {v}", "cuDNN of the default build", None, None, "UNVERIFIED")
            else:
                libs = cuda_libraries(meta)
                line = cuda_line_of(libs)
                cudnn = row.get("cudnn", {})
                shipped_cudnn = cudnn.get(line, cudnn.get("all")) if line else None
                report.row(f"torch {v}", f"cuDNN for CUDA {line or '?'} (default build)",
                           shipped_cudnn, cudnn_of(libs))
                if line and line in cudnn and cudnn_of(libs) and cudnn[line] != cudnn_of(libs):
                    report.fix("pytorch.yaml", str(row["release"]), f"cudnn.{line}", cudnn_of(libs))
            pair = row.get("torchvision", {}).get(v)
            if vision is not None:
                report.row(f"torch {v}", "torchvision", pair, companion_for(index, vision, torch, v))


def python_status(shipped: tuple[str, str], index: tuple[str, str] | None) -> str | None:
    """`ok`/`DIFFERS` as for any row, but `narrower` when the data offers fewer Pythons than
    have wheels (a hand-made choice, such as a Python the release notes call experimental):
    only a Python the data allows without a wheel is a mismatch."""
    if index is None or shipped == index:
        return None
    lo, hi = (version_key(x) for x in shipped)
    if version_key(index[0]) <= lo and hi <= version_key(index[1]):
        return "narrower"
    return None


def companion_for(index: Index, companion: dict, torch: dict, torch_version: str) -> str | None:
    """The companion release published for `torch_version` (see pair_companion); reads the
    companion's wheels newest first and stops at the first that pins an older torch exactly."""
    candidates = []
    for v in reversed(release_versions(companion)):
        wheel = pick_wheel(companion["files"], v)
        meta = index.metadata(wheel) if wheel else None
        spec = requirement_spec(meta, "torch") if meta else None
        candidates.append((v, spec, upload_day(companion, v)))
        if spec and spec.startswith("==") and canonical(spec[2:]) < canonical(torch_version):
            break
    return pair_companion(torch_version, upload_day(torch, torch_version), candidates)


def compare_tensorflow(index: Index, data: dict, report: Report):
    tf = index.project("tensorflow")
    gpu = index.project("tensorflow-gpu")
    if tf is None:
        report.row("tensorflow", "releases", "listed", None, "UNVERIFIED")
        return
    for os_name in ("linux", "windows"):
        for row in data[os_name]:
            v = str(row["version"])
            dist = gpu_distribution(v, gpu)
            files = (gpu or tf)["files"] if dist == "tensorflow-gpu" else tf["files"]
            got = python_range(files, v, os_name)
            want = (str(row["python"]["min"]), str(row["python"]["max"]))
            status = python_status(want, got)
            report.row(f"tensorflow {v} ({os_name})", "python", "-".join(want),
                       "-".join(got) if got else None, status)
            if got and got != want and status != "narrower":
                report.fix("tensorflow.yaml", f"{os_name} {v}", "python.min", got[0])
                report.fix("tensorflow.yaml", f"{os_name} {v}", "python.max", got[1])
            report.row(f"tensorflow {v} ({os_name})", "GPU distribution",
                       row.get("distribution", "tensorflow"), dist)
            if row.get("distribution", "tensorflow") != dist:
                report.fix("tensorflow.yaml", f"{os_name} {v}", "distribution", dist)


def compare_cuda(index: Index, data: dict, report: Report):
    meta = index.project("cuda-toolkit")
    if meta is None:
        report.row("cuda-toolkit", "releases", "listed", None, "UNVERIFIED")
        return
    shipped = {str(r["version"]) for r in data["toolkits"]}
    for v in release_versions(meta):
        if v in shipped:
            report.row(f"CUDA {v}", "release", v, v)
        elif version_key(v) >= (12, 0):
            report.row(f"CUDA {v}", "release", None, v, "NEW: needs its minimum driver by hand")


def compare_uv(index: Index, data: dict | None, report: Report):
    uv = index.project("uv")
    if uv is None:
        report.row("uv", "release", None, None, "UNVERIFIED")
        return
    newest = release_versions(uv)[-1]
    shipped = (data or {}).get("version")
    report.row("uv", "release", shipped, newest, None if shipped else "NEW")
    for key, wheel in uv_wheels(uv, newest).items():
        pinned = ((data or {}).get("wheels") or {}).get(key, {}).get("sha256")
        report.row(f"uv {newest}", f"wheel {key} sha256", pinned, wheel["sha256"],
                   None if shipped == newest else "NEW")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index-url", help="the index's simple API (default: the index pip uses)")
    ap.add_argument("--data", default=str(Path(__file__).resolve().parent.parent / "data"))
    ap.add_argument("--record", type=Path, help="save every response read into this folder")
    ap.add_argument("--replay", type=Path, help="read saved responses instead of the index")
    ap.add_argument("--check", action="store_true", help="exit 1 when a row differs")
    ap.add_argument("--write", type=Path, help="write data/ with the corrections into this folder")
    args = ap.parse_args(argv)
    data = Path(args.data)
    try:
        url = None if args.replay else (args.index_url or pip_index_url())
        index = Index(url, record=args.record, replay=args.replay)
        report = Report()
        compare_torch(index, load_yaml(data / "pytorch.yaml"), report)
        compare_tensorflow(index, load_yaml(data / "tensorflow.yaml"), report)
        compare_cuda(index, load_yaml(data / "cuda.yaml"), report)
        uv_path = data / "tools.yaml"
        compare_uv(index, (load_yaml(uv_path) or {}).get("uv") if uv_path.exists() else None, report)
    except IndexUnreachable as e:
        print(f"skipped: nothing was checked ({e})", file=sys.stderr)
        return 3
    report.print()
    if args.write:
        for line in write_set(data, args.write, report.fixes):
            print(f"wrote {line}")
        print(f"wrote {args.write}; pack it with `stackpin data pack {args.write} -o FILE`")
    print("not checked against the index (hand-written, with sources in data/): minimum drivers, "
          "GPU generations, driver branches, CUDA builds served only by the PyTorch index")
    if args.check and report.counts().get("DIFFERS"):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
