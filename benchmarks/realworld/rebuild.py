"""Rebuild the real-log cache from the repositories' history and verify every file's sha256.

usage: python benchmarks/realworld/rebuild.py [--mirrors DIR [--offline]] [--check-only]

Each manifest row names repo, path and commit. A file is taken from a local bare mirror
(`DIR/<owner>+<name>/repo`, as the project's fetch tool leaves them) when there is one, else from a
blobless clone of https://github.com/<owner>/<name> into a temporary folder; `--offline` never clones
(a machine without GitHub, or one that brought only a sample of the repositories: the rest is counted
as not here, and the scorer leaves their runs out). A file whose hash differs is reported and not kept.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CACHE, manifest_rows, sha256  # noqa: E402


def git_dir(repo: str, mirrors: Path | None, clones: Path, offline: bool = False) -> Path | None:
    local = mirrors / repo.replace("/", "+") / "repo" if mirrors else None
    if local is not None and local.exists():
        return local / ".git" if (local / ".git").is_dir() else local  # some snapshots are clones with a work tree
    if offline:
        return None
    target = clones / repo.replace("/", "+")
    if not target.exists():
        done = subprocess.run(["git", "clone", "--bare", "--filter=blob:none", "-q",
                               f"https://github.com/{repo}", str(target)], capture_output=True)
        if done.returncode:
            return None
    return target


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirrors", type=Path, default=None,
                    help="a folder of bare mirrors (<owner>+<name>/repo) to read before cloning from GitHub")
    ap.add_argument("--offline", action="store_true", help="take files from the mirrors only, never clone")
    ap.add_argument("--check-only", action="store_true", help="verify the cache, fetch nothing")
    a = ap.parse_args()
    ok = missing = bad = absent = 0
    with tempfile.TemporaryDirectory() as tmp:
        for row in manifest_rows():
            dest = CACHE / row["file"]
            if dest.exists() and sha256(dest) == row["sha256"]:
                ok += 1
                continue
            if a.check_only:
                missing += 1
                print(f"missing or changed: {row['file']}")
                continue
            gd = git_dir(row["repo"], a.mirrors, Path(tmp), a.offline)
            if gd is None and a.offline:
                absent += 1
                continue
            blob = subprocess.run(["git", "--git-dir", str(gd), "show", f"{row['commit']}:{row['path']}"],
                                  capture_output=True) if gd else None
            if blob is None or blob.returncode:
                missing += 1
                print(f"cannot get {row['repo']}@{row['commit'][:10]}:{row['path']}")
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            part = dest.with_name(dest.name + ".part")
            part.write_bytes(blob.stdout)
            if sha256(part) != row["sha256"]:
                part.unlink()
                bad += 1
                print(f"sha256 differs: {row['file']}")
                continue
            part.replace(dest)
            ok += 1
    print(f"{ok} files verified in {CACHE}; {missing} missing; {bad} with another hash"
          + (f"; {absent} files of repositories not on this machine" if absent else ""))
    return 0 if not (missing or bad) else 1


if __name__ == "__main__":
    raise SystemExit(main())
