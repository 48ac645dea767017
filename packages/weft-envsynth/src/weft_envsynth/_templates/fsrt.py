"""File tools of an EnvBundle whose documented result is one string (weft_envsynth.filesem
`text_result`): the same workspace semantics as the other file routes, answered as the text the
description says (entry prefixes, a JSON tree with the described keys, `key: value` metadata,
a confirmation naming the path). Failed reads of a batch are reported inline when the batch
goes on; the errors are the operating system's own (`ENOENT: No such file or directory`)."""

from __future__ import annotations

import datetime as dt
import difflib
import errno as errno_names
import fnmatch
import json
import shutil
import stat
from pathlib import Path
from typing import Any

from .runtime import ToolFailure, workspace_root, ws_path, ws_rel


def _os_error(exc: OSError) -> str:
    code = errno_names.errorcode.get(exc.errno or 0, "EIO")
    return f"{code}: {exc.strerror or exc}"


def _show(path: Path) -> str:
    """A path as the caller wrote it: workspace-absolute."""
    return ws_rel(path)


def _text_of(path: Path, head: Any = None, tail: Any = None) -> str:
    if path.is_dir():
        raise IsADirectoryError(errno_names.EISDIR, "Is a directory")
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    if isinstance(head, (int, float)) and not isinstance(head, bool) and head > 0:
        return "\n".join(lines[: int(head)])
    if isinstance(tail, (int, float)) and not isinstance(tail, bool) and tail > 0:
        return "\n".join(lines[-int(tail) :])
    return text


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).replace(microsecond=0).isoformat()


def _entries(base: Path) -> list[Path]:
    return sorted(base.iterdir(), key=lambda p: p.name)


def _tree(base: Path, keys: list[str], exclude: list[str]) -> list[dict[str, Any]]:
    name_k, type_k, kids_k = (keys + ["name", "type", "children"][len(keys) :])[:3]
    out: list[dict[str, Any]] = []
    for p in _entries(base):
        if any(fnmatch.fnmatch(p.name, x) for x in exclude):
            continue
        entry: dict[str, Any] = {name_k: p.name, type_k: "directory" if p.is_dir() else "file"}
        if p.is_dir():
            entry[kids_k] = _tree(p, keys, exclude)
        out.append(entry)
    return out


def _dir(a: dict[str, Any]) -> Path:
    path = ws_path(a.get("path") or "/")
    if not path.is_dir():
        raise ToolFailure("not_found", f"no such directory: {a.get('path')}", 404)
    return path


def file_text(op: str, a: dict[str, Any], style: dict[str, Any]) -> dict[str, Any]:
    """Run one file tool with a text result; `a` maps roles (path, paths, content, ...) to
    values; `style` is the tool's filesem.TextResult."""
    return {style["field"]: _run(op, a, style)}


def _run(op: str, a: dict[str, Any], style: dict[str, Any]) -> str:
    markers = style.get("markers") or {}
    if op == "read_many":
        parts = []
        for name in a.get("paths") or []:
            try:
                path = ws_path(name)
                parts.append(f"{_show(path)}:\n{_text_of(path)}\n")
            except OSError as exc:
                parts.append(f"{name}: Error - {_os_error(exc)}")
            except ToolFailure as exc:  # outside the workspace: this file fails, the batch goes on
                parts.append(f"{name}: Error - {exc.message}")
        return "\n---\n".join(parts)
    if op == "roots":
        heading = style.get("message") or ""
        return "\n".join(x for x in (heading, _show(workspace_root().resolve())) if x)
    if op in {"read", "info"}:
        path = ws_path(a.get("path") or "")
        if not path.exists():
            raise ToolFailure(
                "not_found", f"ENOENT: no such file or directory: {a.get('path')}", 404
            )
        if op == "read":
            try:
                return _text_of(path, a.get("head"), a.get("tail"))
            except OSError as exc:
                raise ToolFailure("invalid_path", _os_error(exc)) from exc
        st = path.stat()
        values = {
            "size": st.st_size,
            "created": _when(st.st_ctime),
            "modified": _when(st.st_mtime),
            "accessed": _when(st.st_atime),
            "permissions": f"{stat.S_IMODE(st.st_mode):o}",
            "type": "directory" if path.is_dir() else "file",
        }
        keys = style.get("info_keys") or ["size", "type"]
        return "\n".join(f"{k}: {values[k]}" for k in keys if k in values)
    if op == "list":
        base = _dir(a)
        lines = []
        for p in _entries(base):
            mark = markers.get("dir" if p.is_dir() else "file", "")
            size = f" {p.stat().st_size}" if style.get("sizes") and p.is_file() else ""
            lines.append(f"{mark} {p.name}{size}".strip())
        return "\n".join(lines)
    if op == "tree":
        base = _dir(a)
        exclude = [str(x) for x in a.get("exclude") or []]
        return json.dumps(
            _tree(base, style.get("tree_keys") or [], exclude), indent=style.get("indent", 2)
        )
    if op == "search":
        base = _dir(a)
        pattern = str(a.get("pattern") or "")
        exclude = [str(x) for x in a.get("exclude") or []]
        found = [
            _show(p)
            for p in sorted(base.rglob("*"))
            if (
                fnmatch.fnmatch(p.relative_to(base).as_posix(), pattern)
                or fnmatch.fnmatch(p.name, pattern)
            )
            and not any(fnmatch.fnmatch(p.name, x) for x in exclude)
        ]
        return "\n".join(found) if found else "No matches found"
    message = style.get("message") or "Successfully done"
    path = ws_path(a.get("path") or "")
    if op == "mkdir":
        if path.is_file():
            raise ToolFailure("conflict", f"EEXIST: file already exists: {a.get('path')}", 409)
        path.mkdir(parents=True, exist_ok=True)
        return f"{message} {_show(path)}"
    if op == "write":
        if path == workspace_root().resolve() or path.is_dir():
            raise ToolFailure(
                "invalid_path", f"EISDIR: illegal operation on a directory: {a.get('path')}"
            )
        content = a.get("content")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            content if isinstance(content, str) else json.dumps(content), encoding="utf-8"
        )
        return f"{message} to {_show(path)}"
    if op == "move":
        target = ws_path(a.get("target") or "")
        if not path.exists():
            raise ToolFailure(
                "not_found", f"ENOENT: no such file or directory: {a.get('path')}", 404
            )
        if target.exists():
            raise ToolFailure("conflict", f"destination already exists: {a.get('target')}", 409)
        if path == workspace_root().resolve() or path in target.parents:
            raise ToolFailure("invalid_path", "cannot move a directory into itself")
        if not target.parent.is_dir():
            raise ToolFailure("not_found", f"ENOENT: no such directory: {target.parent.name}", 404)
        shutil.move(str(path), str(target))
        return f"{message} {_show(path)} to {_show(target)}"
    if op == "edit":
        if not path.is_file():
            raise ToolFailure("not_found", f"ENOENT: no such file: {a.get('path')}", 404)
        old_k, new_k = style.get("pair") or ("oldText", "newText")
        before = path.read_text(encoding="utf-8")
        text = before
        for e in a.get("edits") or []:
            o, n = (e.get(old_k), e.get(new_k)) if isinstance(e, dict) else (None, None)
            if not isinstance(o, str) or not isinstance(n, str) or o not in text:
                raise ToolFailure("no_match", f"Could not find exact match for edit:\n{o}")
            text = text.replace(o, n, 1)
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                text.splitlines(keepends=True),
                _show(path),
                _show(path),
                "original",
                "modified",
            )
        )
        if not a.get("dry_run"):
            path.write_text(text, encoding="utf-8")
        return f"```diff\n{diff}```"
    if op == "delete":
        if path == workspace_root().resolve():
            raise ToolFailure("invalid_path", "cannot delete the workspace root")
        if path.is_dir():
            shutil.rmtree(path)
        elif path.is_file():
            path.unlink()
        else:
            raise ToolFailure(
                "not_found", f"ENOENT: no such file or directory: {a.get('path')}", 404
            )
        return f"{message} {_show(path)}"
    raise ToolFailure("unsupported", f"file text op {op} is not supported", 501)


def file_media(a: dict[str, Any], style: dict[str, Any]) -> dict[str, Any]:
    """A file as a base64 content block (filesem.MediaResult): an image or audio block when the
    output documents one for the file's MIME type, else an embedded resource."""
    import base64
    import mimetypes

    path = ws_path(a.get("path") or "")
    if not path.is_file():
        raise ToolFailure("not_found", f"ENOENT: no such file or directory: {a.get('path')}", 404)
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    major = mime.split("/")[0]
    kinds = style.get("kinds") or {}
    if major in kinds or not style.get("resource"):
        block: dict[str, Any] = {
            "type": kinds.get(major, next(iter(kinds), major)),
            style.get("data_field") or "data": data,
            "mimeType": mime,
        }
    else:
        block = {
            "type": style["resource"],
            "resource": {"uri": path.resolve().as_uri(), "mimeType": mime, "blob": data},
        }
    return {style["field"]: [block]}
