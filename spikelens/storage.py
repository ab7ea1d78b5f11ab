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
- within `kept_copies()` (a sweep that writes a findings dataset) the copy is kept in the
  cache folder (`$SPIKELENS_CACHE_DIR`, else `$XDG_CACHE_HOME/spikelens` or
  `~/.cache/spikelens`) with a manifest of each object's size and version (ETag, else
  md5Hash or modification time, as the listing gives it): a later process fetches only
  new or changed objects and deletes the ones no longer listed, and `recorded` gives the
  incremental sweep each file's (size, version) instead of a digest of its bytes.
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
import json
import os
import re
import shutil
import tempfile
from contextlib import ExitStack, contextmanager
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

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
CACHE_ENV = "SPIKELENS_CACHE_DIR"
MANIFEST = ".manifest.json"
PARTIAL = ".partial"
LOCK = ".lock"
VERSION_KEYS = ("ETag", "etag", "md5Hash", "LastModified", "last_modified", "mtime")
"""Listing fields that change when an object's content does, first found wins (s3fs: ETag)."""
_MANGLED = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)(.*)$")  # two letters at least: C:/ is a drive
_MIRRORS: dict[tuple[str, bool], Path] = {}
_KEEP: ExitStack | None = None  # set within kept_copies(): its locks, released on leaving
_RECORDED: dict[str, tuple[int, str]] = {}  # a kept copy's file -> (size, version) as listed


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
    """A URL fit to print: any `user:password@` is dropped to `user@`, credential query
    values (`X-Amz-Signature`, `token`, `secret`) masked (`sanitize.mask_url`)."""
    from .sanitize import mask_url

    return mask_url(url)


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


def listing(fs: Any, root: str) -> dict[str, tuple[int, str | None]]:
    """Every file under the prefix, its size and version token, from one recursive listing."""
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
        if rel.suffix.lower() in NOT_LOGS or SKIP_PARTS & set(rel.parts) or ".." in rel.parts:
            continue
        files[path] = (int(info.get("size") or 0), version_token(info))
    return files


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


def version_token(info: dict) -> str | None:
    """What changes with an object's content in its listing entry (None: nothing does)."""
    for key in VERSION_KEYS:
        if info.get(key) not in (None, ""):
            return f"{key}:{info[key]}"
    return None


def mirror(url: str) -> Path:
    """A local copy of the log files under `url` (made once per process; within
    `kept_copies`, the kept copy brought up to date once per `kept_copies`)."""
    url = url.rstrip("/")  # `s3://b/runs/` and `s3://b/runs` (a Path drops the slash) are one copy
    have = _MIRRORS.get((url, _KEEP is not None))
    if have is not None:
        return have
    fs, root = filesystem(url)
    root = root.rstrip("/")
    try:
        files = listing(fs, root)
    except InputError as exc:
        raise InputError(safe_url(url), exc.problem) from exc
    except Exception as exc:  # noqa: BLE001 - any backend's failure (OSError, botocore's NoCredentialsError, ...)
        raise InputError(safe_url(url), f"cannot list ({type(exc).__name__}: {_first_line(exc)})") from exc
    if not files:
        raise InputError(safe_url(url), "no such file or folder (nothing listed under this URL)")
    name = PurePosixPath(root).name or "bucket"
    single = len(files) == 1 and next(iter(files)) == root
    marker = safe_url(url) + ("\n" if not single else "\nfile\n")
    rels = {path: PurePosixPath(path).name if single else f"{name}/{PurePosixPath(path).relative_to(root).as_posix()}"
            for path in files}
    if _KEEP is None:
        folder = Path(tempfile.mkdtemp(prefix=MIRROR_PREFIX))
        atexit.register(shutil.rmtree, folder, True)
        (folder / MARKER).write_text(marker, encoding="utf-8")
        targets = {path: folder / rel for path, rel in rels.items()}
        for target in targets.values():
            target.parent.mkdir(parents=True, exist_ok=True)
        copy_ranges(fs, {path: size for path, (size, _) in files.items()}, targets)
    else:
        folder = _kept(url, fs, files, rels, marker)
    _MIRRORS[(url, _KEEP is not None)] = folder / (rels[root] if single else name)
    return _MIRRORS[(url, _KEEP is not None)]


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
    except Exception as exc:  # noqa: BLE001 - any backend's failure, as in mirror's listing
        raise InputError(None, f"cannot read from object storage ({type(exc).__name__}: {_first_line(exc)})") from exc
    for (path, start, _end), blob in zip(batch, blobs):
        with open(targets[path], "r+b") as fh:
            fh.seek(start)
            fh.write(blob)


# ------------------------------------------------------------------ kept copies

def cache_dir() -> Path:
    """The user's cache folder for spikelens (never inside the logs)."""
    return _cache_dir(os.environ.get(CACHE_ENV), os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))


@lru_cache(maxsize=8)
def _cache_dir(given: str | None, xdg: str | None, home: str | None) -> Path:
    """`cache_dir` for these environment values (`display` asks it for every source)."""
    if given:
        return Path(os.path.abspath(os.path.expanduser(given)))
    base = xdg or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.path.abspath(base)) / "spikelens"


def objects_dir() -> Path:
    """Where kept copies of object storage live, one folder per URL."""
    return cache_dir() / "objects"


@contextmanager
def kept_copies() -> Iterator[None]:
    """Within, object storage is copied into the cache folder and kept, so the next sweep
    fetches only what changed; the copies are locked against other processes until the end."""
    global _KEEP
    if _KEEP is not None:  # nested: the outer one keeps
        yield
        return
    _KEEP = ExitStack()
    try:
        with _KEEP:
            yield
    finally:
        _KEEP = None
        for key in [k for k in _MIRRORS if k[1]]:  # the next sweep lists again
            del _MIRRORS[key]
        _RECORDED.clear()


def recorded(path: str | os.PathLike) -> tuple[int, str] | None:
    """(size, version) listed for a file of a kept copy, or None (not one, or no version)."""
    return _RECORDED.get(os.fspath(path))


def _kept(url: str, fs: Any, files: dict[str, tuple[int, str | None]], rels: dict[str, str], marker: str) -> Path:
    """The kept copy of `url` (locked until `kept_copies` ends), brought up to date."""
    assert _KEEP is not None
    folder = objects_dir() / hashlib.sha1(url.encode()).hexdigest()[:16]
    try:
        (folder / PARTIAL).mkdir(parents=True, exist_ok=True)
        _lock(folder, _KEEP)
        if _read_text(folder / MARKER) != marker:
            _write_atomic(folder / MARKER, marker)
        _update(folder, fs, files, rels, marker)
    except OSError as exc:
        raise InputError(None, f"cannot write the object-storage cache in {cache_dir()} ({exc.strerror or exc}); "
                               f"set {CACHE_ENV} to a writable folder") from exc
    return folder


def _update(folder: Path, fs: Any, files: dict[str, tuple[int, str | None]], rels: dict[str, str],
            marker: str) -> None:
    """Fetch only the objects whose size and version differ from the manifest's (to a
    partial name, then renamed: a killed process leaves no half file), delete the files no
    longer listed, and record each file's (size, version) for the incremental sweep."""
    listed = {rels[path]: [size, token] for path, (size, token) in files.items()}
    before = _manifest(folder, marker)
    kept = {rel: rec for rel, rec in before.items()
            if rec[1] is not None and listed.get(rel) == rec and _has_size(folder / rel, rec[0])}
    if kept != before:  # the manifest never claims a file a killed fetch may have left stale
        _write_manifest(folder, marker, kept)
    todo = {path: size for path, (size, _) in files.items() if rels[path] not in kept}
    partial = {path: folder / PARTIAL / str(i) for i, path in enumerate(todo)}
    copy_ranges(fs, todo, partial)
    for path, tmp in partial.items():
        target = folder / rels[path]
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, target)
    _write_manifest(folder, marker, listed)
    _prune(folder, set(listed))
    for rel, (size, token) in listed.items():
        if token is not None:
            _RECORDED[os.fspath(folder / rel)] = (size, token)


def _lock(folder: Path, stack: ExitStack) -> None:
    """One process at a time updates and reads a kept copy (nightly sweeps may overlap)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return
    fh = stack.enter_context(open(folder / LOCK, "a"))
    fcntl.flock(fh, fcntl.LOCK_EX)


def _manifest(folder: Path, marker: str) -> dict[str, list]:
    """The objects a kept copy holds complete: {relative path: [size, version]}."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("source") != marker or not isinstance(data.get("objects"), dict):
        return {}
    return data["objects"]


def _write_manifest(folder: Path, marker: str, objects: dict[str, list]) -> None:
    _write_atomic(folder / MANIFEST, json.dumps({"source": marker, "objects": objects}, sort_keys=True))


def _write_atomic(path: Path, text: str) -> None:
    """Write then rename: a killed process leaves the old file or the new one, never half."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _has_size(path: Path, size: int) -> bool:
    try:
        return path.stat().st_size == size
    except OSError:
        return False


def _prune(folder: Path, keep: set[str]) -> None:
    """Delete what the copy holds beyond the listed files (objects deleted from the
    bucket, leftovers of a killed process) and the folders left empty."""
    own = {MARKER, MANIFEST, LOCK}
    for dirpath, dirnames, filenames in os.walk(folder, topdown=False):
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), folder).replace(os.sep, "/")
            if rel not in keep and rel not in own:
                os.unlink(os.path.join(dirpath, name))
        if dirpath != os.fspath(folder) and not os.listdir(dirpath):
            os.rmdir(dirpath)


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
    copy = _copy_of(text)
    found = _marker(copy[0]) if copy else None
    if copy is None or found is None:
        return text
    url, single = found
    if single:
        return url
    parts = copy[1].split("/", 1)  # the copy's root folder is the prefix's last component
    return url if len(parts) == 1 else f"{url}/{parts[1]}"


def _copy_of(text: str) -> tuple[str, str] | None:
    """(copy folder, path inside it) for a path in a temporary or kept copy of object storage."""
    temp = tempfile.gettempdir().rstrip("/") + "/"
    kept = os.fspath(objects_dir()) + "/"
    for base, prefix in ((kept, ""), (temp, MIRROR_PREFIX)):  # the cache may lie in the temp folder
        if text.startswith(base + prefix):
            folder, _, rest = text[len(base):].partition("/")
            return base + folder, rest
    return None


def display_text(line: str) -> str:
    """A message with every remote-copy path in it replaced by its URL."""
    temp = tempfile.gettempdir().rstrip("/") + "/"
    kept = os.fspath(objects_dir()) + "/"
    if temp + MIRROR_PREFIX not in line and kept not in line and POINTER_SUFFIX not in line:
        return line
    copies = f"(?:{re.escape(kept)}[0-9a-f]{{16}}|{re.escape(temp)}spikelens-(?:remote|uri)-)"
    return re.sub(copies + r"[^\s:,;)'\"]*", lambda m: display(m.group(0)), line)


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
