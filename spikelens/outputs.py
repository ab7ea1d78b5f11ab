"""Outputs are transactions: every file spikelens writes is written beside its place
under a temporary name, flushed to disk, then renamed over it, so a killed or failing
writer leaves the previous good file (or nothing), never half a file; and an output
path that is an input, holds one or lies inside one is refused before anything is
written (the user's logs are never replaced, deleted or added to).

One overwrite policy for every output (`claim`, `write_output`): an output that is
already there is refused with one line naming it, and `--force` replaces it (in one
rename, as always). Without `--force` a file is published with a hard link, which fails
when something took the name meanwhile: what was checked is what is written. Outputs made
to be updated (a findings dataset, `--summary`'s append, `--update-baseline`) say so.

Temporary names start with `TMP_PREFIX` and end in `TMP_SUFFIX`, so a reader globbing
`*.parquet` or `*.csv` never picks one up; they carry the writer's process id, so a later
writer into the same folder removes what a killed one (kill -9) left, and only that.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .errors import OutputExists, OutputOverlap

TMP_PREFIX = ".spikelens-tmp-"
TMP_SUFFIX = ".partial"


def is_temp_name(name: str) -> bool:
    """A name only `atomic_write` / `atomic_folder` give (a leftover of a killed writer)."""
    return name.startswith(TMP_PREFIX) and name.endswith(TMP_SUFFIX)


def _prefix() -> str:
    return f"{TMP_PREFIX}{os.getpid()}-"


_swept: set[Path] = set()
SWEPT_HELD = 1024
"""Folders remembered as swept; past this the memory starts again (a findings dataset writes a
folder a run: 10^5 remembered paths were ~60 MB; a folder swept twice is listed twice, no more)."""


def remove_dead_temps(folder: Path) -> None:
    """Remove the temporary files and folders of writers that are no longer running (once
    per folder and process): names this module gives, whose process id is gone."""
    folder = Path(folder)
    if folder in _swept:
        return
    if len(_swept) >= SWEPT_HELD:
        _swept.clear()
    _swept.add(folder)
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for p in entries:
        if not is_temp_name(p.name):
            continue
        pid = p.name[len(TMP_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def atomic_write(path: str | os.PathLike, writer: Callable[[Path], object], *, replace: bool = True) -> Path:
    """`writer(tmp)` writes the whole file at `tmp` (beside `path`); it then replaces
    `path` in one rename. On any exception or interrupt the temporary file is removed
    and `path` is as it was. A symbolic link is followed (the file it names is replaced);
    a path that is not a regular file (/dev/stdout, a FIFO) is written directly. With
    `replace=False` a file found at `path` when the new one is ready is kept and
    OutputExists raised."""
    path = Path(path)
    if path.is_symlink() or path.exists():
        path = path.resolve()  # a link is followed: the file it names is replaced, the link kept
        if path.exists() and not stat.S_ISREG(path.stat().st_mode):
            writer(path)  # a stream (/dev/stdout, a pipe): nothing to replace, written as it comes
            return path
    remove_dead_temps(path.parent)
    fd, name = tempfile.mkstemp(prefix=_prefix(), suffix=TMP_SUFFIX, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        writer(tmp)
        _fsync_file(tmp)
        os.chmod(tmp, _mode_for(path))
        if replace:
            os.replace(tmp, path)
        else:
            _publish_new(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _publish_new(tmp: Path, path: Path) -> None:
    """`tmp` takes the name `path` only if nothing holds it: a hard link is created or
    fails as one step (a file system without hard links: checked, then renamed)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise OutputExists(_exists_message(path, "output")) from None
    except OSError:
        if occupied(path):
            raise OutputExists(_exists_message(path, "output")) from None
        os.replace(tmp, path)
        return
    tmp.unlink()


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, replace: bool = True) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data), replace=replace)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8", *, replace: bool = True) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding=encoding), replace=replace)


# ---------------------------------------------------------------- the overwrite policy

def occupied(path: str | os.PathLike) -> bool:
    """What an output would replace: a regular file (a link followed) or a folder holding
    anything. A stream (/dev/stdout, a FIFO), an empty folder or nothing is not."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if stat.S_ISREG(mode):
        return True
    if stat.S_ISDIR(mode):
        try:
            with os.scandir(path) as entries:
                return any(True for _ in entries)
        except OSError:
            return True
    return False


def _exists_message(path: str | os.PathLike, what: str) -> str:
    return f"{what} {os.fspath(path)}: already exists; --force replaces it"


def claim(path: str | os.PathLike, what: str, *, force: bool) -> None:
    """The overwrite policy of every output, checked before any work: an existing output
    (`occupied`) is refused with one line naming it (OutputExists, exit 2) unless `force`.
    Inputs are another matter: `refuse_overlap` refuses them even with `--force`."""
    if not force and occupied(path):
        raise OutputExists(_exists_message(path, what))


def write_output(path: str | os.PathLike, writer: Callable[[Path], object], what: str, *, force: bool) -> Path:
    """Write one output file under the policy: refused when it exists (unless `force`),
    written whole in one rename, and never over a file that appeared meanwhile."""
    claim(path, what, force=force)
    try:
        return atomic_write(path, writer, replace=force)
    except OutputExists:
        raise OutputExists(_exists_message(path, what)) from None


@contextmanager
def atomic_folder(path: str | os.PathLike, *, replace: bool = False) -> Iterator[Path]:
    """A temporary folder beside `path` to write a whole folder output into; renamed to
    `path` when the block ends without error, removed otherwise. `path` must not exist
    or be empty; with `replace`, a folder there is first renamed aside, then removed once
    the new one is in its place (put back if that rename fails)."""
    path = Path(path)
    remove_dead_temps(path.parent)
    tmp = Path(tempfile.mkdtemp(prefix=_prefix(), suffix=TMP_SUFFIX, dir=path.parent))
    aside = None
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        if replace and occupied(path) and path.is_dir() and not path.is_symlink():
            aside = Path(tempfile.mkdtemp(prefix=_prefix(), suffix=TMP_SUFFIX, dir=path.parent))
            os.replace(path, aside)  # onto the empty folder just made: the name is ours
        try:
            os.replace(tmp, path)
        except BaseException:
            if aside is not None:
                os.replace(aside, path)
                aside = None
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
    _fsync_dir(path.parent)


def refuse_overlap(output: str | os.PathLike, inputs: Iterable[str | os.PathLike], what: str, *,
                   near_files: bool = False) -> None:
    """Raise OutputOverlap when `output` is an input, lies inside an input folder or holds
    an input. With `near_files`, the folder of an input file counts as a log folder too
    (a data output written there would be read back as a run by the next sweep).
    URLs (object storage, servers) are not local paths and never overlap."""
    from .storage import protocol, unmangle

    out = Path(output).resolve()
    for raw in inputs:
        text = unmangle(os.fspath(raw))
        if protocol(text) is not None:
            continue
        inp = Path(text).resolve()
        shown = os.fspath(raw)
        if out == inp:
            raise OutputOverlap(f"{what} {output}: is {shown}, which is being read; "
                                "spikelens never writes over its inputs (choose another path)")
        folders = [inp] if inp.is_dir() else ([inp.parent] if near_files else [])
        for folder in folders:
            if folder in out.parents:
                raise OutputOverlap(f"{what} {output}: inside the logs being read ({folder}); "
                                    "choose a path outside them")
        if out in inp.parents:
            raise OutputOverlap(f"{what} {output}: holds {shown}, which is being read; "
                                "choose a path that holds no input")


def _mode_for(path: Path) -> int:
    """Keep the mode of the file replaced; a new file gets the usual one (umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every file system allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
