"""`weft verify` of a corpus: every reference resolves and every hash is re-checked, wherever
the corpus lies now (copied, moved, synced back from object storage).

The corpus root is the folder holding `weft-corpus.json` (a run's OUT). Checked:

- EnvBundles (`stages/envs/*/*/manifest.json`): manifest, spec, entities and contracts load with
  their content hashes, and every file the manifest lists has the sha256 it recorded;
- atomic-task libraries (`stages/atomic/*/*/library.json`): manifest and task hashes, the
  bundle reference resolves inside the corpus to the bundle the library was certified on;
- task graphs (`stages/compose/*/tasks/*.json`, and ToolSpace's `stages/toolspace/*/tasks/*.json`):
  hashes, and each initial snapshot's content address is held by the corpus (its stage's
  `snapshots/` copy or the MegaMCP object store) with exactly those bytes;
- traces: each names (by content hash) a task graph of the corpus;
- stage records (`done.json`) and `summary.json`: every reference is relative and resolves.

Trace hashes and ledger agreement are checked by `weft.cli.verify_traces`.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from weft_core.exceptions import WeftError
from weft_core.models import (
    AtomicTask,
    ContractSet,
    EntityModel,
    EnvBundleManifest,
    MCPSpec,
    TaskGraph,
)
from weft_core.refs import (
    address_digest,
    check_ref,
    escapes_root,
    find_corpus_root,
    resolve_ref,
)

# Stages whose folders hold task graphs (tasks/) and their initial state (snapshots/).
_TASK_STAGES: tuple[str, ...] = ("compose", "toolspace")
# Keys that hold references to files of the corpus: in stage records, and in the summary.
_RECORD_REFS: tuple[str, ...] = ("bundle", "library", "traces")
_SUMMARY_REFS: tuple[str, ...] = ("traces_path",)


@dataclass
class CorpusCheck:
    root: Path
    checked: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def fail(self, where: Path | str, reason: str) -> None:
        rel = where.relative_to(self.root) if isinstance(where, Path) else where
        self.problems.append(f"{rel}: {reason}")

    @property
    def ok(self) -> bool:
        return not self.problems


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _resolve(check: CorpusCheck, where: Path, ref: Any, what: str) -> Path | None:
    """The local target of a corpus-relative reference, or None after recording why not."""
    if not isinstance(ref, str):
        check.fail(where, f"{what}: not a reference: {ref!r}")
        return None
    try:
        check_ref(ref, field=what)
    except ValueError as exc:
        check.fail(where, str(exc))
        return None
    if escapes_root(ref):
        check.fail(where, f"{what}: {ref!r} points outside the corpus root")
        return None
    target = resolve_ref(ref, check.root)
    if not target.exists():
        check.fail(where, f"{what}: {ref!r} does not resolve in {check.root}")
        return None
    return target


def _bundles(check: CorpusCheck) -> None:
    for manifest_path in sorted(check.root.glob("stages/envs/*/*/manifest.json")):
        folder = manifest_path.parent
        try:
            manifest = EnvBundleManifest.load(manifest_path)
            spec = MCPSpec.load(folder / "spec.json")
            EntityModel.load(folder / "entities.json")
            ContractSet.load(folder / "contracts.json")
        except WeftError as exc:
            check.fail(folder, str(exc))
            continue
        if manifest.spec_hash and manifest.spec_hash != spec.content_hash:
            check.fail(folder, "spec.json is not the spec the manifest was certified for")
        for rel, sha in sorted(manifest.files.items()):
            f = folder / rel
            if not f.is_file():
                check.fail(folder, f"{rel}: listed in the manifest but missing")
            elif _sha256(f) != sha:
                check.fail(folder, f"{rel}: content does not match the manifest's sha256")
        check.checked["bundles"] += 1


def _libraries(check: CorpusCheck) -> None:
    from weft_tasks.atomic.library import LibraryManifest

    for path in sorted(check.root.glob("stages/atomic/*/*/library.json")):
        try:
            lib = LibraryManifest.load(path)
            for tid in lib.tasks:
                AtomicTask.load(path.parent / "tasks" / f"{tid}.json")
        except WeftError as exc:
            check.fail(path, str(exc))
            continue
        target = _resolve(check, path, lib.bundle_path, "bundle_path")
        if target is not None:
            try:
                found = EnvBundleManifest.load(target / "manifest.json").content_hash
            except WeftError as exc:
                check.fail(path, f"bundle {lib.bundle_path}: {exc}")
            else:
                if lib.bundle_hash and found != lib.bundle_hash:
                    check.fail(path, f"bundle {lib.bundle_path} is not the one certified on")
        check.checked["libraries"] += 1


def _snapshot_copies(root: Path, sha: str, suffix: str = ".sqlite") -> list[Path]:
    return [
        *(
            p
            for s in _TASK_STAGES
            for p in sorted(root.glob(f"stages/{s}/*/snapshots/{sha}{suffix}"))
        ),
        *sorted(root.glob(f"megamcp/objects/blobs/{sha[:2]}/{sha}")),
    ]


def _task_graphs(check: CorpusCheck) -> set[str]:
    """Check every task graph; returns their content hashes (what traces refer to)."""
    hashes: set[str] = set()
    for path in [
        p for s in _TASK_STAGES for p in sorted(check.root.glob(f"stages/{s}/*/tasks/*.json"))
    ]:
        try:
            graph = TaskGraph.load(path)
        except WeftError as exc:
            check.fail(path, str(exc))
            continue
        hashes.add(graph.content_hash or graph.compute_hash())
        for mcp, ref in sorted(graph.initial_snapshots.items()):
            digest = address_digest(ref.uri)
            if digest is None or digest != ref.sha256:
                check.fail(path, f"snapshot of {mcp}: {ref.uri!r} is not the address of its sha256")
                continue
            copies = _snapshot_copies(check.root, digest)
            if not copies:
                check.fail(path, f"snapshot of {mcp}: {ref.uri} is held nowhere in the corpus")
            for copy in copies:
                if _sha256(copy) != digest:
                    check.fail(copy, f"holds other bytes than {ref.uri}")
            check.checked["snapshots"] += 1
            if ref.workspace_uri is not None:
                _check_workspace(check, path, mcp, ref.workspace_uri)
        check.checked["task graphs"] += 1
    return hashes


def _check_workspace(check: CorpusCheck, path: Path, mcp: str, uri: str) -> None:
    """A grounded initial workspace is a content-addressed tarball the corpus holds intact."""
    digest = address_digest(uri)
    if digest is None:
        check.fail(path, f"workspace of {mcp}: {uri!r} is not a content address")
        return
    copies = _snapshot_copies(check.root, digest, ".tar.gz")
    if not copies:
        check.fail(path, f"workspace of {mcp}: {uri} is held nowhere in the corpus")
    for copy in copies:
        if _sha256(copy) != digest:
            check.fail(copy, f"holds other bytes than {uri}")
    check.checked["workspaces"] += 1


def _trace_tasks(check: CorpusCheck, tasks: set[str]) -> None:
    """Every trace names (by content hash) a task graph the corpus holds."""
    from weft_tasks.rollout import TraceSink

    for path in sorted(check.root.glob("stages/rollouts/*/traces.jsonl")):
        traces, _ = TraceSink(path).load()  # unreadable lines are reported by verify_traces
        for t in traces:
            if t.task_hash is not None and t.task_hash not in tasks:
                check.fail(
                    path, f"trace {t.id}: task {t.task_id} ({t.task_hash}) is not in the corpus"
                )
            check.checked["trace references"] += 1


def _records(check: CorpusCheck) -> None:
    paths = [(p, _RECORD_REFS) for p in sorted(check.root.glob("stages/*/*/done.json"))]
    if (check.root / "summary.json").is_file():
        paths.append((check.root / "summary.json", _SUMMARY_REFS))
    for path, keys in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            check.fail(path, f"unreadable: {exc}")
            continue
        for key in keys:
            if isinstance(data, dict) and data.get(key):
                _resolve(check, path, data[key], key)
        check.checked["stage records"] += 1


def verify_corpus(path: Path) -> CorpusCheck:
    """Check the corpus at (or above) `path`; see the module docstring."""
    root = find_corpus_root(path) or Path(path).resolve()
    check = CorpusCheck(root=root)
    _bundles(check)
    _libraries(check)
    _trace_tasks(check, _task_graphs(check))
    _records(check)
    return check


def traces_file(root: Path) -> Path | None:
    """The run's traces JSONL named by `summary.json` (relative to the corpus root)."""
    summary = root / "summary.json"
    if not summary.is_file():
        return None
    ref = json.loads(summary.read_text(encoding="utf-8")).get("traces_path")
    return resolve_ref(ref, root) if ref else None
