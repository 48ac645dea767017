"""The atomic-task library on disk: one folder per MCP with tasks, E2E tests and validation report.

    LIB/<mcp>/library.json      LibraryManifest: bundle, coverage, rounds, retained task ids
    LIB/<mcp>/tasks/<id>.json   AtomicTask (retained, with their validation evidence)
    LIB/<mcp>/tests/test_<id>.py   the task's E2E test (runs against a MegaMCP host)
    LIB/<mcp>/validation.json   ValidationReport: every candidate of every round, failures F, redundancy

An MCP folder is written under a temporary name and renamed into place, so a reader never sees a
half-written library.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import Field, field_validator

from weft_core.exceptions import ArtifactError
from weft_core.models import Artifact, AtomicTask, WeftModel, artifact_time
from weft_core.refs import check_ref, corpus_ref, find_corpus_root, resolve_ref
from weft_tasks.atomic.bundle import BundleView, load_bundle
from weft_tasks.atomic.orthogonality import Redundancy
from weft_tasks.atomic.synthesis import Failure, RoundReport, SynthesisState
from weft_tasks.exceptions import BundleError, LibraryError


class LibraryManifest(Artifact):
    """`library.json` of one MCP's atomic-task library."""

    mcp: str
    domain: str = "general"
    description: str = ""
    bundle_path: str = Field(
        description=(
            "The EnvBundle the tasks run on: a URI relative to the corpus root (see "
            "`library_root`), never an absolute path."
        )
    )
    bundle_hash: str | None = Field(
        default=None, description="content_hash of the bundle manifest (checked on load)."
    )
    tools: list[str] = Field(default_factory=list, description="Every tool of the MCP.")
    certified_tools: list[str] = Field(default_factory=list)
    coverage: float = 0.0
    target_coverage: float = 1.0
    round_budget: int = 1
    rounds: list[RoundReport] = Field(default_factory=list)
    stop_reason: str | None = None
    strategy: str = "programmatic"
    tasks: list[str] = Field(default_factory=list, description="Ids of the retained tasks.")
    created_at: datetime = Field(default_factory=artifact_time)

    @field_validator("bundle_path")
    @classmethod
    def _relocatable(cls, value: str) -> str:
        return check_ref(value, field="LibraryManifest.bundle_path")


def library_root(lib_root: Path) -> Path:
    """What a library's bundle reference is relative to: the corpus root holding the library
    folder (nearest `weft-corpus.json`), else the folder of MCP libraries itself."""
    return find_corpus_root(lib_root) or lib_root.resolve()


class CandidateRecord(WeftModel):
    task_id: str
    round: int
    tool_chain: list[str]
    intent: str
    passed: bool
    retained: bool
    diagnostic: str = ""


class ValidationReport(Artifact):
    """`validation.json`: what every round generated, what passed, what failed and why."""

    mcp: str
    candidates: list[CandidateRecord] = Field(default_factory=list)
    failures: list[Failure] = Field(default_factory=list)
    redundant: list[Redundancy] = Field(default_factory=list)
    coverage: float = 0.0
    uncovered: list[str] = Field(default_factory=list)


@dataclass
class MCPLibrary:
    """One MCP's certified atomic tasks with the bundle they run on."""

    manifest: LibraryManifest
    tasks: list[AtomicTask]
    bundle: BundleView

    @property
    def mcp(self) -> str:
        return self.manifest.mcp

    @property
    def domain(self) -> str:
        return self.manifest.domain


def e2e_test_source(task: AtomicTask) -> str:
    """A pytest module that re-runs the task's E2E validation against a MegaMCP host."""
    fn = "test_" + "".join(ch if ch.isalnum() else "_" for ch in task.id)
    return f'''"""E2E test of atomic task {task.id}: {task.intent.replace('"', "'")}

Chain: {" -> ".join(task.tool_chain)}. Runs from a fresh session on the bundle's seed state and checks
returns and persistent state. Set WEFT_MEGAMCP_URL (and WEFT_MEGAMCP_ADMIN_TOKEN) to use a running
host; otherwise an embedded host is started.
"""

from pathlib import Path

import pytest

from weft_tasks.atomic.validation import run_library_task

LIBRARY = Path(__file__).resolve().parents[1]


@pytest.mark.integration
async def {fn}() -> None:
    evidence = await run_library_task(LIBRARY, {task.id!r})
    assert evidence.passed, evidence.error or evidence.evaluation
'''


def save_library(
    root: str | os.PathLike[str],
    bundle: BundleView,
    state: SynthesisState,
    *,
    strategy: str = "programmatic",
) -> Path:
    """Write one MCP's library folder atomically and return its path."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / bundle.mcp
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{bundle.mcp}.", suffix=".tmp"))
    try:
        retained_ids = {t.id for t in state.retained}
        for task in state.retained:
            task = task.model_copy(update={"e2e_test": e2e_test_source(task)})
            task.save(tmp / "tasks" / f"{task.id}.json")
            (tmp / "tests").mkdir(exist_ok=True)
            (tmp / "tests" / f"test_{task.id.replace('.', '_')}.py").write_text(
                task.e2e_test or "", encoding="utf-8"
            )
        failed = {f.task_id: f for f in state.failures}
        records = [
            CandidateRecord(
                task_id=t.id,
                round=0,
                tool_chain=t.tool_chain,
                intent=t.intent,
                passed=True,
                retained=t.id in retained_ids,
            )
            for t in state.validated
        ] + [
            CandidateRecord(
                task_id=f.task_id,
                round=f.round,
                tool_chain=f.tool_chain,
                intent=f.intent,
                passed=False,
                retained=False,
                diagnostic=f.diagnostic,
            )
            for f in failed.values()
        ]
        ValidationReport(
            mcp=bundle.mcp,
            candidates=records,
            failures=state.failures,
            redundant=state.redundant,
            coverage=state.coverage,
            uncovered=state.uncovered,
        ).save(tmp / "validation.json")
        LibraryManifest(
            mcp=bundle.mcp,
            domain=bundle.domain,
            description=bundle.spec.description,
            bundle_path=corpus_ref(bundle.path, library_root(root)),
            bundle_hash=bundle.manifest.content_hash if bundle.manifest else None,
            tools=bundle.tools,
            certified_tools=bundle.certified_tools,
            coverage=state.coverage,
            target_coverage=state.target,
            round_budget=state.budget,
            rounds=state.rounds,
            stop_reason=state.stop_reason,
            strategy=strategy,
            tasks=[t.id for t in state.retained],
        ).save(tmp / "library.json")
        if final.exists():
            old = final.with_name(f".{bundle.mcp}.old")
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
            tmp.rename(final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def load_mcp_library(folder: str | os.PathLike[str]) -> MCPLibrary:
    folder = Path(folder)
    manifest_path = folder / "library.json"
    if not manifest_path.exists():
        raise LibraryError(f"{folder}: not an atomic-task library (no library.json)")
    try:
        manifest = LibraryManifest.load(manifest_path)
        tasks = [AtomicTask.load(folder / "tasks" / f"{tid}.json") for tid in manifest.tasks]
    except ArtifactError as exc:
        raise LibraryError(str(exc)) from None
    try:
        bundle = load_bundle(resolve_ref(manifest.bundle_path, library_root(folder.parent)))
    except BundleError as exc:
        raise LibraryError(f"{folder}: its bundle is unusable: {exc}") from None
    found = bundle.manifest.content_hash if bundle.manifest else None
    if manifest.bundle_hash and found != manifest.bundle_hash:
        raise LibraryError(
            f"{folder}: bundle {manifest.bundle_path} is not the one the library was certified "
            f"on (manifest hash {found}, expected {manifest.bundle_hash})"
        )
    return MCPLibrary(manifest=manifest, tasks=tasks, bundle=bundle)


def load_library(root: str | os.PathLike[str]) -> list[MCPLibrary]:
    """Every MCP library under `root` (a folder of `<mcp>/library.json`), or `root` itself."""
    root = Path(root)
    if (root / "library.json").exists():
        return [load_mcp_library(root)]
    if not root.is_dir():
        raise LibraryError(f"{root}: no such library folder")
    libs = [load_mcp_library(p) for p in sorted(root.iterdir()) if (p / "library.json").exists()]
    if not libs:
        raise LibraryError(
            f"{root}: holds no MCP library (no */library.json); run `weft-tasks atomic` first"
        )
    return libs
