"""A run folder read into typed records: environments, atomic-task libraries, composed tasks,
traces (with the attempts a retry discarded), training curves and evolution rounds.

Reading is defensive: a stage that did not run, a file that is missing or damaged, costs only what
depends on it, and the reason is kept in `RunData.problems` so the report can say it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from weft.report.formats import (
    CURVES_PATH,
    ROUNDS_PATH,
    EvolutionRounds,
    TrainingCurves,
    read_format,
)
from weft.summary import PipelineSummary
from weft_core.exceptions import ArtifactError
from weft_core.models import TaskGraph, Trace

# What the answer-key harnesses report as their model (weft_tasks.harness: the reference-chain
# teacher, and ReAct driven by the reference policy). Their pass rates measure nothing.
REFERENCE_MODELS = frozenset({"reference-chain", "reference-policy"})
UNKNOWN_DOMAIN = "(unknown)"


def is_reference(model: str) -> bool:
    return model in REFERENCE_MODELS


class ToolCert(BaseModel):
    name: str
    certified: bool
    reason: str | None = None


class EnvRecord(BaseModel):
    """One spec's environment synthesis result."""

    name: str
    domain: str = UNKNOWN_DOMAIN
    status: str
    tools_total: int = 0
    tools_certified: int = 0
    reason: str | None = None
    tools: list[ToolCert] = Field(default_factory=list)


class LibraryRecord(BaseModel):
    """One MCP's certified atomic-task library (or why it has none)."""

    mcp: str
    domain: str = UNKNOWN_DOMAIN
    tasks: int = 0
    coverage: float = 0.0
    tools: int = 0
    error: str | None = None


class DiscardedAttempt(BaseModel):
    """An earlier line of a rollout in the traces JSONL that a rerun replaced."""

    error: str | None = None
    infrastructure_retries: int = 0
    messages: int = 0


class RunData(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    root: Path
    summary: PipelineSummary | None = None
    envs: list[EnvRecord] = Field(default_factory=list)
    libraries: list[LibraryRecord] = Field(default_factory=list)
    tasks: list[TaskGraph] = Field(default_factory=list)
    traces: list[Trace] = Field(default_factory=list)
    discarded: dict[str, list[DiscardedAttempt]] = Field(
        default_factory=dict, description="Rollout id -> attempts its final line replaced."
    )
    curves: TrainingCurves | None = None
    rounds: EvolutionRounds | None = None
    problems: list[str] = Field(default_factory=list, description="What could not be read.")

    def domain_of(self) -> dict[str, str]:
        """MCP -> domain, from environments and libraries."""
        out = {e.name: e.domain for e in self.envs}
        for lib in self.libraries:
            if lib.domain != UNKNOWN_DOMAIN or lib.mcp not in out:
                out[lib.mcp] = lib.domain
        return out


def _read_json(path: Path, problems: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable ({type(exc).__name__})")
        return None


def _relocate(recorded: str | None, root: Path, recorded_root: str | None) -> Path | None:
    """A path written into a done.json when the run lived elsewhere, moved under `root`."""
    if not recorded:
        return None
    path = Path(recorded)
    if path.exists():
        return path
    if recorded_root and recorded.startswith(recorded_root.rstrip("/") + "/"):
        moved = root / recorded[len(recorded_root.rstrip("/")) + 1 :]
        if moved.exists():
            return moved
    return None


def _done_records(stage_dir: Path, problems: list[str]) -> list[tuple[Path, dict[str, Any]]]:
    """(folder, done.json record) for each finished key of a stage, oldest first, so a later
    record of the same MCP replaces an earlier one."""
    if not stage_dir.is_dir():
        return []
    found = []
    for marker in stage_dir.glob("*/done.json"):
        rec = _read_json(marker, problems)
        if isinstance(rec, dict):
            found.append((marker.stat().st_mtime, marker.parent, rec))
    return [(folder, rec) for _, folder, rec in sorted(found, key=lambda x: x[0])]


def _load_envs(run: RunData, recorded_root: str | None) -> None:
    by_name: dict[str, EnvRecord] = {}
    for folder, rec in _done_records(run.root / "stages" / "envs", run.problems):
        name = rec.get("slug") or rec.get("name") or Path(str(rec.get("source", "?"))).stem
        bundle = _relocate(rec.get("bundle"), run.root, recorded_root)
        if bundle is None and (folder / name).is_dir():
            bundle = folder / name
        domain, tools = UNKNOWN_DOMAIN, []
        manifest = _read_json(bundle / "manifest.json", run.problems) if bundle else None
        if isinstance(manifest, dict):
            domain = str(manifest.get("domain") or UNKNOWN_DOMAIN)
            tools = [
                ToolCert(
                    name=str(t.get("name")),
                    certified=bool(t.get("certified")),
                    reason=t.get("reason"),
                )
                for t in manifest.get("tools", [])
                if isinstance(t, dict)
            ]
        by_name[name] = EnvRecord(
            name=name,
            domain=domain,
            status=str(rec.get("status", "unknown")),
            tools_total=int(rec.get("tools_total") or 0),
            tools_certified=int(rec.get("tools_certified") or 0),
            reason=rec.get("reason"),
            tools=tools,
        )
    if run.summary is not None and run.summary.mcps:
        # Keep what this run's summary names; stage folders may hold other configs' results.
        wanted = {m.name for m in run.summary.mcps}
        for m in run.summary.mcps:
            by_name.setdefault(
                m.name,
                EnvRecord(
                    name=m.name,
                    status=m.status,
                    tools_total=m.tools_total,
                    tools_certified=m.tools_certified,
                    reason=m.reason,
                ),
            )
        by_name = {k: v for k, v in by_name.items() if k in wanted}
    run.envs = sorted(by_name.values(), key=lambda e: e.name)


def _load_libraries(run: RunData, recorded_root: str | None) -> None:
    by_mcp: dict[str, LibraryRecord] = {}
    env_domain = {e.name: e.domain for e in run.envs}
    for folder, rec in _done_records(run.root / "stages" / "atomic", run.problems):
        mcp = str(rec.get("mcp", folder.name))
        lib = LibraryRecord(
            mcp=mcp,
            domain=env_domain.get(mcp, UNKNOWN_DOMAIN),
            tasks=int(rec.get("tasks") or 0),
            coverage=float(rec.get("coverage") or 0.0),
            error=rec.get("error"),
        )
        path = _relocate(rec.get("library"), run.root, recorded_root)
        if path is None and (folder / mcp / "library.json").exists():
            path = folder / mcp
        manifest = _read_json(path / "library.json", run.problems) if path else None
        if isinstance(manifest, dict):
            lib.domain = str(manifest.get("domain") or lib.domain)
            lib.tools = len(manifest.get("tools") or [])
        by_mcp[mcp] = lib
    if run.envs:
        names = {e.name for e in run.envs}
        by_mcp = {k: v for k, v in by_mcp.items() if k in names}
    run.libraries = sorted(by_mcp.values(), key=lambda x: x.mcp)


def _load_tasks(run: RunData, wanted: set[str]) -> None:
    """The composed task set: the compose key whose tasks the traces ran, else the newest."""
    candidates = _done_records(run.root / "stages" / "compose", run.problems)
    if not candidates:
        return
    chosen = candidates[-1]
    if wanted:
        best = max(candidates, key=lambda c: len(wanted & set(c[1].get("tasks", []))))
        if wanted & set(best[1].get("tasks", [])):
            chosen = best
    folder, rec = chosen
    for task_id in rec.get("tasks", []):
        path = folder / "tasks" / f"{task_id}.json"
        try:
            run.tasks.append(TaskGraph.load(path))
        except (OSError, ValidationError, ArtifactError, ValueError) as exc:
            run.problems.append(f"{path}: task not loaded ({type(exc).__name__})")


def _traces_file(run: RunData, recorded_root: str | None) -> Path | None:
    if run.summary is not None:
        path = _relocate(run.summary.traces_path, run.root, recorded_root)
        if path is not None:
            return path
    found = sorted(
        (run.root / "stages" / "rollouts").glob("*/traces.jsonl"),
        key=lambda p: p.stat().st_mtime,
    )
    return found[-1] if found else None


def _load_traces(run: RunData, path: Path) -> None:
    """Every trace of the JSONL; a rollout written more than once (a rerun after an
    infrastructure failure) keeps its last line and records the earlier ones as discarded."""
    latest: dict[str, Trace] = {}
    discarded: dict[str, list[DiscardedAttempt]] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                trace = Trace.model_validate_json(line)
                trace.verify_hash()
            except ArtifactError:
                run.problems.append(f"{path}:{lineno}: trace content does not match its hash")
                continue
            except ValidationError as exc:
                run.problems.append(f"{path}:{lineno}: not a trace ({exc.error_count()} error(s))")
                continue
            earlier = latest.pop(trace.id, None)
            if earlier is not None:
                discarded.setdefault(trace.id, []).append(
                    DiscardedAttempt(
                        error=earlier.error,
                        infrastructure_retries=earlier.infrastructure_retries,
                        messages=len(earlier.messages),
                    )
                )
            latest[trace.id] = trace
    run.traces = list(latest.values())
    run.discarded = discarded


def load_run(root: Path) -> RunData:
    """Read a `weft run` / `weft demo` output folder. Raises FileNotFoundError only when `root`
    is not a folder; anything missing inside is recorded in `problems`."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a folder")
    run = RunData(root=root.resolve())
    raw = _read_json(root / "summary.json", run.problems)
    recorded_root: str | None = None
    if isinstance(raw, dict):
        try:
            run.summary = PipelineSummary.model_validate(raw)
            recorded_root = run.summary.out_dir
        except ValidationError as exc:
            run.problems.append(f"{root / 'summary.json'}: not a summary ({exc.error_count()})")
    _load_envs(run, recorded_root)
    _load_libraries(run, recorded_root)
    traces = _traces_file(run, recorded_root)
    if traces is not None:
        _load_traces(run, traces)
    _load_tasks(run, {t.task_id for t in run.traces})
    run.curves, why = read_format(root / CURVES_PATH, TrainingCurves)
    run.problems += [why] if why else []
    run.rounds, why = read_format(root / ROUNDS_PATH, EvolutionRounds)
    run.problems += [why] if why else []
    return run


def task_domains(graph: TaskGraph, domain_of: dict[str, str]) -> list[str]:
    return sorted({domain_of.get(m, UNKNOWN_DOMAIN) for m in graph.mcps})


def policy_calls(traces: Iterable[Trace]) -> Iterable[tuple[Trace, Any]]:
    """(trace, ledger entry) for every call the policy made; infrastructure failures are not
    the policy's and rollouts that failed for infrastructure reasons are left out."""
    for t in traces:
        if t.failed_on_infrastructure:
            continue
        for e in t.ledger:
            if not (e.error_kind and e.error_kind.is_infrastructure):
                yield t, e
