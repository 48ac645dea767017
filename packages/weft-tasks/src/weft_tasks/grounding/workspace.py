"""Initial workspaces of file MCPs, grounded in the same three rounds as the DBs (paper §3.1.2).

A file MCP has no tables, so its state is files. For the MCPs of a graph whose contracts read or
write files (operations `file_*`):

(i) entities: the files the graph's nodes act on, as they stood before the task: a previous
version at each path a node writes content to, so the write really replaces something and a
read-back that skipped the write reads the wrong text;
(ii) relations: a record file for each business object the graph binds (the customer, the
order...), holding the bound values, under `records/<entity>/`: the workspace side of the object
the other MCPs hold as rows;
(iii) context: a near-duplicate beside each target file (`report-1.txt` beside `report_1.txt`),
which a careless agent picks when it lists and guesses.

Every file is checked against the graph's checks first: a check that can see files (a
`WorkspaceFile`, or a `ReturnContains` on this MCP's tools) must not pass because of a grounded
file, so no added path is one a presence-only check or a listing check names, and no content or
name holds a text such a check looks for. A file that would is dropped, with its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from weft_core.models import ReturnContains, TaskGraph, WorkspaceFile
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.exceptions import TasksUserError

Files = dict[str, str]
"""Workspace-relative path -> text content."""

_TEMPLATE = re.compile(r"^\{\{\s*(\w+)\s*\}\}$")
_SLUG = re.compile(r"[^a-z0-9]+")


class WorkspaceGrounding(BaseModel):
    rounds: list[dict[str, Files]] = Field(
        default_factory=list, description="Files each round added, per MCP: rounds[i][mcp][path]."
    )
    dropped: list[str] = Field(
        default_factory=list, description="Files left out because a check could see them."
    )

    def files(self, upto: int | None = None) -> dict[str, Files]:
        """Files per MCP after round `upto` (all rounds by default)."""
        out: dict[str, Files] = {}
        for added in self.rounds[: upto if upto is not None else len(self.rounds)]:
            for mcp, files in added.items():
                out.setdefault(mcp, {}).update(files)
        return out


def is_file_mcp(bundle: BundleView) -> bool:
    return any(c.operation.startswith("file_") for c in bundle.contracts.contracts)


def _norm(path: str) -> str:
    return PurePosixPath("/" + path.strip()).as_posix().lstrip("/")


@dataclass
class _Guard:
    """What the checks of one MCP's nodes can observe in its workspace."""

    texts: set[str]
    presence_paths: set[str]
    listed: set[str]

    def why_not(self, path: str, content: str) -> str | None:
        if path in self.presence_paths:
            return f"{path}: a check only asks that it exists"
        for t in self.listed:
            if t in path:
                return f"{path}: a listing check looks for {t!r}"
        for t in self.texts:
            if t in content or t in path:
                return f"{path}: holds {t!r}, which a check looks for"
        return None


def _guard(graph: TaskGraph, mcp: str, bundle: BundleView) -> _Guard:
    tools = {c.tool for c in bundle.contracts.contracts}
    texts: set[str] = set()
    presence: set[str] = set()
    listed: set[str] = set()
    for n in graph.nodes:
        if n.task.mcp != mcp:
            continue
        for c in n.checks:
            if isinstance(c, WorkspaceFile):
                for t in (c.contains, c.equals):
                    if t:
                        texts.add(t)
                if c.exists and c.contains is None and c.equals is None:
                    presence.add(_norm(c.path))
            elif isinstance(c, ReturnContains) and c.tool in tools and isinstance(c.value, str):
                contract = bundle.contract(c.tool)
                (listed if contract and contract.operation == "file_list" else texts).add(c.value)
    return _Guard(texts={t for t in texts if len(t) >= 2}, presence_paths=presence, listed=listed)


def _written_paths(graph: TaskGraph, mcp: str, bundle: BundleView) -> list[str]:
    """Paths the nodes write content to (a call whose contract maps both a path and content)."""
    out: list[str] = []
    for n in graph.nodes:
        if n.task.mcp != mcp:
            continue
        values: dict[str, Any] = {i.name: i.value for i in n.inputs}
        for call in n.task.reference_calls:
            contract = bundle.contract(call.tool)
            if contract is None or contract.operation != "file_write":
                continue
            roles = {m.role: m.argument for m in contract.mappings}
            if "path" not in roles or "content" not in roles:
                continue
            raw = call.arguments.get(roles["path"])
            m = _TEMPLATE.match(raw) if isinstance(raw, str) else None
            value = values.get(m.group(1)) if m else raw
            if not isinstance(value, str) or not value.strip() or ".." in value.split("/"):
                continue  # no path, or one that climbs out (the server refuses it anyway)
            if _norm(value) not in out:
                out.append(_norm(value))
    return out


def _near_name(path: str) -> str:
    p = PurePosixPath(path)
    stem = p.stem.replace("_", "-", 1) if "_" in p.stem else f"{p.stem}-old"
    return (p.parent / f"{stem}{p.suffix}").as_posix()


def _label(value: dict[str, Any]) -> str | None:
    """What a person would name the object's file by: its name, title or subject, else an id."""
    for hint in ("name", "title", "subject", "email"):
        for k, v in sorted(value.items()):
            if hint in k and isinstance(v, str) and v:
                return v
    return next((str(v) for k, v in sorted(value.items()) if k.endswith("id") and v), None)


def _slug(value: Any) -> str:
    return _SLUG.sub("-", str(value).lower()).strip("-")[:60] or "record"


def ground_workspaces(graph: TaskGraph, bundles: dict[str, BundleView]) -> WorkspaceGrounding:
    """The three rounds of files for every file MCP of `graph` (see the module docstring)."""
    out = WorkspaceGrounding(rounds=[{}, {}, {}])
    for mcp in graph.mcps:
        bundle = bundles.get(mcp)
        if bundle is None or not is_file_mcp(bundle):
            continue
        guard = _guard(graph, mcp, bundle)
        targets = _written_paths(graph, mcp, bundle)
        candidates: list[tuple[int, str, str]] = []
        for path in targets:
            name = PurePosixPath(path).name
            candidates.append((0, path, f"{name}: previous version, superseded by this task.\n"))
        for b in graph.bindings:
            lines = [f"{k}: {v}" for k, v in sorted(b.value.items()) if v not in (None, "")]
            if lines:
                path = f"records/{_slug(b.entity)}/{_slug(_label(b.value) or b.name)}.txt"
                candidates.append((1, path, f"{b.entity} record\n" + "\n".join(lines) + "\n"))
        for path in targets:
            twin = _near_name(path)
            if twin != path and twin not in targets:
                candidates.append((2, twin, "Draft kept for reference; not the current file.\n"))
        for round_no, path, content in candidates:
            why = guard.why_not(path, content)
            if why:
                out.dropped.append(f"{mcp}: {why}")
                continue
            out.rounds[round_no].setdefault(mcp, {})[path] = content
    return out


def write_workspace_tree(seed: Path | None, files: Files, dest: Path) -> None:
    """The initial workspace in folder `dest`: the bundle's seed workspace, then `files`."""
    import shutil

    if dest.exists():
        shutil.rmtree(dest)
    if seed is not None and seed.is_dir():
        shutil.copytree(seed, dest, symlinks=False)
    dest.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        target = dest / _norm(rel)
        if dest.resolve() not in target.resolve().parents:
            raise TasksUserError(f"grounded file {rel!r} lands outside the workspace {dest}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
