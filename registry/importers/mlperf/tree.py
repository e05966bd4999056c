"""Walking a submission tree safely: links to folders are not followed, links out of the tree and names that are
not UTF-8 are not read, and what is left out is listed (`passed_over`) rather than lost.
"""

from __future__ import annotations

import os
from pathlib import Path

from .plan import FileReport


def real_dir(path: Path) -> bool:
    """A folder, not a link to one, with a UTF-8 name: what the importer walks into."""
    return path.is_dir() and not path.is_symlink() and is_utf8(path.name)


def subfolders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if real_dir(p))


def is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.fsdecode keeps bytes that are not UTF-8 as lone surrogates
        return False
    return True


def shown(rel: str) -> str:
    """A path as reports print it: bytes that are not UTF-8 escaped (\\xe9), never a lone surrogate."""
    return rel if is_utf8(rel) else os.fsencode(rel).decode("utf-8", "backslashreplace")


def inside(path: Path, tree: Path) -> bool:
    """True when `path`, every link on it resolved, stays inside `tree` (False for a dangling or looping link)."""
    try:
        return path.resolve(strict=True).is_relative_to(tree.resolve())
    except (OSError, RuntimeError):
        return False


def all_files(root: Path) -> list[Path]:
    """Every file under `root`, sorted: one walk of the tree. Links to folders are not followed (a link to '.'
    would loop, one to '/' would leave the tree); a link to a file counts when it stays inside `root`. Names that
    are not UTF-8 are left out: `passed_over` lists what was left out, and why."""
    return sorted(p for p in _walk(root) if is_utf8(str(p)) and p.is_file() and inside(p, root))


def _walk(root: Path) -> list[Path]:
    return [Path(folder) / name for folder, _dirs, names in os.walk(root) for name in names]


def passed_over(root: Path) -> list[FileReport]:
    """What `all_files` and the folder walk leave out: links to folders or out of the tree, and names that are
    not UTF-8 (printed with their bytes escaped)."""
    out = []
    for folder, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            path = Path(folder) / name
            rel = shown(path.relative_to(root).as_posix())
            if not is_utf8(name):
                out.append(FileReport(rel, None, "skipped", "the name is not UTF-8: not read"))
            elif path.is_symlink() and (path.is_dir() or not inside(path, root)):
                out.append(FileReport(rel, None, "skipped", "a link to a folder or out of the tree: not followed"))
    return sorted(out, key=lambda f: f.path)
