"""Inputs that are not local paths: object-storage URLs (`s3://`, `gs://`, `az://`, `hf://`,
any fsspec protocol whose package is installed) and MLflow store URIs (`mlflow.db` via
`sqlite:///...`, `postgresql://...`, a server's `http(s)://` URL).

Everything after discovery reads local paths, and the local path stays the fast path, so a
remote input becomes one:

- an object-storage prefix is listed once (`fs.find(detail=True)`: one recursive LIST,
  paged, whose sizes are reused, so no HEAD per file) and its log files are copied into a
  private temporary folder in large ranged reads (`fs.cat_ranges`, 64 MiB ranges, many in
  flight); checkpoints and pictures are never fetched. Sources read there are reported
  under their URL (`display`).
- an MLflow URI becomes a small pointer file in a temporary folder that the MLflow
  importers claim; they report runs under the URI itself.

Credentials come from each filesystem's usual environment (AWS_*, GOOGLE_*, AZURE_*,
HF_TOKEN; `FSSPEC_<PROTOCOL>_<OPTION>` for anything else, e.g. FSSPEC_S3_ENDPOINT_URL)
and are never printed: URLs are shown without a password. Temporary copies are removed
when the process exits; nothing is ever written where the logs live.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from . import errors
from .errors import InputError

POINTER_SUFFIX = ".spikelens-uri"
MIRROR_PREFIX = "spikelens-remote-"
MARKER = ".source-url"
RANGE_BYTES = 64 << 20
"""One ranged GET reads up to this much of a file."""
BATCH_BYTES = 256 << 20
"""Ranges in flight at once (memory held before they are written to the copy)."""
NOT_LOGS = {".pt", ".pth", ".ckpt", ".safetensors", ".bin", ".h5", ".hdf5", ".keras", ".npy", ".npz",
            ".pkl", ".pickle", ".joblib", ".onnx", ".engine", ".gguf", ".msgpack", ".index",
            ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".mp4", ".mov", ".wav", ".mp3",
            ".tar", ".gz", ".tgz", ".zip", ".7z", ".whl", ".so", ".arrow"}
"""Suffixes of checkpoints, media and archives: never copied (never logs of scalars)."""
SKIP_PARTS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", ".ipynb_checkpoints"}
_MANGLED = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)(.*)$")  # two letters at least: C:/ is a drive
_MIRRORS: dict[str, Path] = {}


def unmangle(text: str) -> str:
    """`pathlib.Path('s3://b/x')` is `s3:/b/x` (the CLI's Path arguments do this): put
    the `//` back. `sqlite:/abs.db` was `sqlite:////abs.db` when that file exists."""
    m = _MANGLED.match(text)
    if m is None or os.path.exists(text):
        return text
    scheme, rest = m.groups()
    if scheme.lower().startswith("sqlite"):
        file = rest.split("?", 1)[0].split("#", 1)[0]
        return f"{scheme}:///" + ("/" + rest if os.path.exists("/" + file) else rest)
    return f"{scheme}://{rest}"


def protocol(text: str) -> str | None:
    """The URL scheme of a remote input, or None for a local path."""
    if "://" not in text:
        return None
    scheme = text.split("://", 1)[0].lower()
    return None if scheme in ("file", "local") or len(scheme) < 2 else scheme


MLFLOW_SQL_SCHEMES = ("sqlite", "postgresql", "postgres")


def is_server_url(text: str) -> bool:
    """An MLflow tracking server (REST over HTTP)."""
    return text.lower().startswith(("http://", "https://"))


def is_sql_uri(text: str) -> bool:
    """An MLflow tracking database (SQLAlchemy URI, e.g. `sqlite:///mlflow.db`)."""
    scheme = text.split(":", 1)[0].split("+", 1)[0].lower() if "://" in text else ""
    return scheme in MLFLOW_SQL_SCHEMES


def is_mlflow_uri(text: str) -> bool:
    return is_server_url(text) or is_sql_uri(text)


def localize(raw: str | os.PathLike) -> Path:
    """The local path discovery walks for one input the user gave."""
    text = unmangle(os.fspath(raw))
    if protocol(text) is None:
        return Path(raw)
    if is_mlflow_uri(text):
        return pointer(text)
    return mirror(text)


def safe_url(url: str) -> str:
    """A URL fit to print: any `user:password@` is dropped to `user@`."""
    return re.sub(r"(://[^/@:]*):[^/@]*@", r"\1@", url)


# ------------------------------------------------------------------ MLflow URIs

def pointer(uri: str) -> Path:
    """A temporary file holding the URI (claimed by the MLflow importers)."""
    folder = _tempdir("spikelens-uri-")
    path = folder / (hashlib.sha1(uri.encode()).hexdigest()[:16] + POINTER_SUFFIX)
    path.write_text(uri, encoding="utf-8")
    return path


def pointed_uri(path: Path, head: bytes = b"") -> str | None:
    """The URI a pointer file holds, or None when the path is no pointer."""
    if not str(path).endswith(POINTER_SUFFIX):
        return None
    try:
        return (head or path.read_bytes()).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


@lru_cache(maxsize=None)
def _tempdir(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)
    return folder


# ------------------------------------------------------------------ object storage

def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem and the path inside it; a one-line error when the protocol's
    package is missing."""
    try:
        from fsspec.core import url_to_fs
    except ImportError as exc:
        raise InputError(safe_url(url), "reading object storage needs fsspec: pip install fsspec") from exc
    try:
        return url_to_fs(url)
    except (ImportError, ValueError) as exc:
        from fsspec.registry import known_implementations

        known = known_implementations.get(protocol(url) or "", {})
        hint = known.get("err") if isinstance(exc, ImportError) and known.get("err") else str(exc).splitlines()[0]
        raise InputError(safe_url(url), f"cannot open this URL ({hint})") from exc


def listing(fs: Any, root: str) -> dict[str, int]:
    """Every file under the prefix and its size, from one recursive listing."""
    try:
        found = fs.find(root, detail=True)
    except FileNotFoundError:
        found = {}
    except PermissionError as exc:
        raise InputError(None, f"access denied listing the bucket ({type(exc).__name__})") from exc
    files = {}
    for path, info in found.items():
        if info.get("type", "file") != "file":
            continue
        rel = PurePosixPath(path)
        if rel.suffix.lower() in NOT_LOGS or SKIP_PARTS & set(rel.parts):
            continue
        files[path] = int(info.get("size") or 0)
    return files


def mirror(url: str) -> Path:
    """A local copy of the log files under `url` (made once per process)."""
    url = url.rstrip("/")  # `s3://b/runs/` and `s3://b/runs` (a Path drops the slash) are one copy
    have = _MIRRORS.get(url)
    if have is not None:
        return have
    fs, root = filesystem(url)
    root = root.rstrip("/")
    try:
        files = listing(fs, root)
    except InputError as exc:
        raise InputError(safe_url(url), exc.problem) from exc
    except OSError as exc:
        raise InputError(safe_url(url), f"cannot list ({type(exc).__name__}: {exc})") from exc
    if not files:
        raise InputError(safe_url(url), "no such file or folder (nothing listed under this URL)")
    folder = Path(tempfile.mkdtemp(prefix=MIRROR_PREFIX))
    atexit.register(shutil.rmtree, folder, True)
    name = PurePosixPath(root).name or "bucket"
    single = len(files) == 1 and next(iter(files)) == root
    (folder / MARKER).write_text(safe_url(url) + ("\n" if not single else "\nfile\n"), encoding="utf-8")
    local_root = folder / name
    targets = {}
    for path in files:
        rel = PurePosixPath(path).name if single else PurePosixPath(path).relative_to(root).as_posix()
        target = folder / name / rel if not single else folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        targets[path] = target
    copy_ranges(fs, files, targets)
    _MIRRORS[url] = targets[root] if single else local_root
    return _MIRRORS[url]


def copy_ranges(fs: Any, sizes: dict[str, int], targets: dict[str, Path]) -> None:
    """Copy files in ranged reads of up to RANGE_BYTES, BATCH_BYTES in flight at a time."""
    ranges = []
    for path, size in sizes.items():
        targets[path].write_bytes(b"")
        ranges += [(path, start, min(start + RANGE_BYTES, size)) for start in range(0, size, RANGE_BYTES)]
    batch: list[tuple[str, int, int]] = []
    held = 0
    for r in ranges + [None]:  # type: ignore[list-item]
        if r is not None and (not batch or held + (r[2] - r[1]) <= BATCH_BYTES):
            batch.append(r)
            held += r[2] - r[1]
            continue
        if batch:
            _fetch(fs, batch, targets)
        if r is not None:
            batch, held = [r], r[2] - r[1]


def _fetch(fs: Any, batch: list[tuple[str, int, int]], targets: dict[str, Path]) -> None:
    paths, starts, ends = (list(x) for x in zip(*batch))
    try:
        blobs = fs.cat_ranges(paths, starts, ends)
    except OSError as exc:
        raise InputError(None, f"cannot read from object storage ({type(exc).__name__}: {exc})") from exc
    for (path, start, _end), blob in zip(batch, blobs):
        with open(targets[path], "r+b") as fh:
            fh.seek(start)
            fh.write(blob)


# ------------------------------------------------------------------ names shown

@lru_cache(maxsize=256)
def _marker(folder: str) -> tuple[str, bool] | None:
    try:
        lines = (Path(folder) / MARKER).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    return (lines[0], len(lines) > 1 and lines[1] == "file") if lines else None


def display(source: str | os.PathLike) -> str:
    """A source as the user named it: a file of a remote copy is shown under its URL."""
    text = os.fspath(source)
    if text.endswith(POINTER_SUFFIX):
        uri = pointed_uri(Path(text))
        return safe_url(uri) if uri else text
    temp = tempfile.gettempdir().rstrip("/") + "/" + MIRROR_PREFIX
    if not text.startswith(temp):
        return text
    folder, _, rest = text[len(tempfile.gettempdir().rstrip("/")) + 1:].partition("/")
    found = _marker(os.path.join(tempfile.gettempdir(), folder))
    if found is None:
        return text
    url, single = found
    if single:
        return url
    parts = rest.split("/", 1)  # the copy's root folder is the prefix's last component
    return url if len(parts) == 1 else f"{url}/{parts[1]}"


def display_text(line: str) -> str:
    """A message with every remote-copy path in it replaced by its URL."""
    temp = tempfile.gettempdir().rstrip("/") + "/"
    if temp + MIRROR_PREFIX not in line and POINTER_SUFFIX not in line:
        return line
    return re.sub(re.escape(temp) + r"spikelens-(?:remote|uri)-[^\s:,;)'\"]*", lambda m: display(m.group(0)), line)


def folder_of(source: str) -> str:
    """The folder a source lies in, for sources that may be URLs (`s3://b/run/f` → `s3://b/run`)
    or runs inside a store (`mlflow.db#<run id>`, a server's run page: each its own folder)."""
    if "#" in source:
        return source
    if protocol(source) is not None:
        return source.rsplit("/", 1)[0]
    return os.path.dirname(os.path.abspath(source))


def common_folder(sources: list[str]) -> str:
    """The deepest folder holding every source (URLs kept whole, unlike os.path.commonpath)."""
    folders = sorted({folder_of(s) for s in sources})
    if len(folders) == 1:
        return folders[0]
    common: list[str] = []
    for level in zip(*(f.split("/") for f in folders)):
        if any(part != level[0] for part in level):
            break
        common.append(level[0])
    return "/".join(common) or "/"


errors.path_shown = display  # errors name remote copies by their URL (errors cannot import this module)
