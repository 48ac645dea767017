"""References between artifacts, so a corpus stays valid wherever it is copied or synced.

An artifact never holds an absolute local path. It names another artifact in one of three ways:

- a **content address** `sha256:<64 hex>`: immutable bytes (an initial DB snapshot, a blob),
  resolved in an object store (MegaMCP's, or a corpus' `snapshots/` copies);
- a **corpus-relative URI**: a relative POSIX path (`stages/envs/1f3a/crm`) resolved against
  the **corpus root**, the nearest folder at or above the referring file that holds
  `weft-corpus.json` (like git finds `.git`); moving or copying the whole folder keeps it valid;
- an **object-store URL** with an explicit scheme (`s3://bucket/corpus/...`, `gs://...`), read
  through fsspec.

A reference that leaves the corpus root (`../envs/crm`) keeps working only when its target moves
with the corpus; `weft verify` reports such references.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

from weft_core._files import atomic_write_text
from weft_core.exceptions import UserError

CORPUS_MARKER = "weft-corpus.json"
CORPUS_FORMAT = {"format": "weft-corpus", "schema_version": 1}

_ADDRESS = re.compile(r"^sha256:([0-9a-f]{64})$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


class RefError(UserError, ValueError):
    """A reference is malformed, absolute, or cannot be resolved (a ValueError too, so a model
    validator that refuses one reports it as a validation error of that field)."""


def content_address(sha256_hex: str) -> str:
    """`sha256:<hex>` of a digest (a bare hex digest or one already prefixed)."""
    digest = sha256_hex.removeprefix("sha256:")
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise RefError(f"not a sha256 digest: {sha256_hex!r}")
    return f"sha256:{digest}"


def address_digest(ref: str) -> str | None:
    """The hex digest of a content address, or None when `ref` is not one."""
    m = _ADDRESS.match(ref)
    return m.group(1) if m else None


def is_url(ref: str) -> bool:
    """An explicit URL (`s3://...`). `file://` counts as a local absolute path, not a URL."""
    return bool(_URL.match(ref)) and not ref.lower().startswith("file://")


def is_absolute_path(ref: str) -> bool:
    """A local absolute path in any spelling: POSIX, Windows drive or UNC, or `file://`."""
    if ref.lower().startswith("file://"):
        return True
    return PurePosixPath(ref).is_absolute() or PureWindowsPath(ref).is_absolute()


def check_ref(ref: str, *, field: str = "reference") -> str:
    """`ref` if it is a content address, a URL or a relative path; RefError otherwise."""
    if not ref:
        raise RefError(f"{field}: empty reference")
    if address_digest(ref) is not None or is_url(ref):
        return ref
    if is_absolute_path(ref):
        raise RefError(
            f"{field}: {ref!r} is an absolute local path; artifacts refer to others by content "
            "address, corpus-relative path or object-store URL"
        )
    return ref


def corpus_ref(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """The corpus-relative URI of local `path` (POSIX separators, no `./`)."""
    rel = os.path.relpath(Path(path).resolve(), Path(root).resolve())
    return PurePosixPath(*Path(rel).parts).as_posix()


def resolve_ref(ref: str, root: str | os.PathLike[str]) -> Path:
    """The local path of a corpus-relative URI. Content addresses and URLs need a store, so they
    raise RefError here (see `weft_megamcp` for the object-store resolver)."""
    check_ref(ref)
    if address_digest(ref) is not None or is_url(ref):
        raise RefError(f"{ref!r} is not a corpus-relative path; resolve it in its object store")
    return Path(root) / Path(*PurePosixPath(ref).parts)


def escapes_root(ref: str) -> bool:
    """Whether a corpus-relative URI points outside its corpus root (`..` past the top)."""
    depth = 0
    for part in PurePosixPath(ref).parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            return True
    return False


def find_corpus_root(start: str | os.PathLike[str]) -> Path | None:
    """The nearest folder at or above `start` holding `weft-corpus.json`, or None."""
    here = Path(start).resolve()
    if here.is_file() or not here.exists():
        here = here.parent
    for folder in (here, *here.parents):
        if (folder / CORPUS_MARKER).is_file():
            return folder
    return None


def mark_corpus_root(root: str | os.PathLike[str]) -> Path:
    """Make `root` a corpus root (idempotent; the marker's bytes never vary)."""
    marker = Path(root) / CORPUS_MARKER
    text = json.dumps(CORPUS_FORMAT, indent=2, sort_keys=True) + "\n"
    if not marker.is_file() or marker.read_text(encoding="utf-8") != text:
        atomic_write_text(marker, text)
    return Path(root)


def corpus_root_for(path: str | os.PathLike[str]) -> Path:
    """The corpus root of an artifact at `path`: the marked folder above it, else its folder."""
    p = Path(path)
    return find_corpus_root(p) or (p.parent if p.suffix else p).resolve()
