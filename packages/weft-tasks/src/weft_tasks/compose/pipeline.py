"""Compose a corpus: quotas -> sampling -> coherence -> composition -> objective -> grounding -> replay.

Every rejection is counted with its reason and the sample is redrawn within its profile; no
rejected task is ever written. Accepted task graphs are written to `OUT/tasks/<id>.json` with
their initial snapshots stored in MegaMCP (and a copy under `OUT/snapshots/<sha256>.sqlite`).
Sampling, composition and grounding run in order (usage must be updated before the next
draw); the MegaMCP replays of a wave of samples run concurrently while the next wave is drawn,
and their results are taken in draw order, so a seed gives the same corpus at any concurrency.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from weft_core.exceptions import WeftRuntimeError
from weft_core.models import (
    Check,
    Disclosure,
    ExecutionEvidence,
    TaskGraph,
    ViewMode,
    atomic_write_text,
)
from weft_megamcp.service import GroupService
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.atomic.library import MCPLibrary
from weft_tasks.atomic.megamcp import Registrar
from weft_tasks.compose.coherence import check_coherence
from weft_tasks.compose.composer import CompositionState, compose_graph
from weft_tasks.compose.created import probe_prefix, settle, unsettled
from weft_tasks.compose.objective import llm_objective, objective_problems, write_objective
from weft_tasks.compose.profiles import DEFAULT_PROFILES, Profile, ProfileSet, largest_remainder
from weft_tasks.compose.sampler import CoverageSampler
from weft_tasks.compose.stats import CorpusStats, corpus_stats
from weft_tasks.exceptions import ExecutionError, TasksUserError
from weft_tasks.grounding.agent import GroundingState, ground
from weft_tasks.grounding.reachability import (
    replay,
    snapshot_refs,
    write_snapshots,
    write_workspaces,
)
from weft_tasks.grounding.workspace import WorkspaceGrounding, ground_workspaces
from weft_tasks.settings import TasksSettings

ROUND_NAMES = ("i", "ii", "iii")
INFRA_STREAK_LIMIT = 20


class CorpusReport(BaseModel):
    requested: int
    quotas: dict[str, int]
    produced: dict[str, int]
    rejections: dict[str, int] = Field(default_factory=dict)
    grounding: dict[str, int] = Field(
        default_factory=dict, description="Rounds kept / rows dropped by checks."
    )
    tasks: list[str] = Field(default_factory=list)
    diagnostics: list[str] = Field(
        default_factory=list,
        description=(
            "Why each candidate that reached objective writing or the replay was rejected "
            "('<graph id>: <reason>'), in the order they were rejected."
        ),
    )
    seconds: float = 0.0
    stats: CorpusStats | None = None


class _Job(BaseModel):
    graph: TaskGraph
    grounding: GroundingState
    workspaces: WorkspaceGrounding = Field(default_factory=WorkspaceGrounding)


def _reason(text: str) -> str:
    return text.split(":")[0].strip()


def _with_mcp_ids(graph: TaskGraph, ids: dict[str, str]) -> TaskGraph:
    """Node checks name the MegaMCP mcp id (the group verifier's evidence key)."""
    if all(ids.get(m, m) == m for m in graph.mcps):
        return graph
    nodes = []
    for n in graph.nodes:
        checks: list[Check] = [
            c.model_copy(update={"mcp": ids.get(c.mcp or "", c.mcp)}) for c in n.checks
        ]
        nodes.append(n.model_copy(update={"checks": checks}))
    return graph.model_copy(update={"nodes": nodes})


def witnessed_evidence(settings: TasksSettings) -> ExecutionEvidence | None:
    """The evidence the sampler ranks by: the settings' file when `witnessed_ranking` is on, else
    none (the evidence-free ranking)."""
    if not settings.witnessed_ranking:
        return None
    if settings.evidence is None:
        raise TasksUserError(
            "witnessed_ranking is on but no evidence file is set (--evidence / WEFT_TASKS_EVIDENCE)"
        )
    return ExecutionEvidence.load(settings.evidence)


class Composer:
    """Produces one corpus against one MegaMCP client."""

    def __init__(
        self,
        libraries: Sequence[MCPLibrary],
        client: GroupService,
        out: Path,
        *,
        profiles: ProfileSet = DEFAULT_PROFILES,
        llm: BaseChatModel | None = None,
        settings: TasksSettings | None = None,
        on_task: Callable[[TaskGraph], None] | None = None,
        registrar: Registrar | None = None,
    ) -> None:
        self.settings = settings or TasksSettings()
        self.libs = [lib for lib in libraries if lib.tasks]
        self.client = client
        self.out = out
        self.profiles = profiles
        self.llm = llm
        self.on_task = on_task
        self.registrar = registrar or Registrar(client)
        self.sampler = CoverageSampler(
            self.libs,
            surplus=self.settings.surplus,
            seed=self.settings.seed,
            witnessed=witnessed_evidence(self.settings),
        )
        self.rejections: Counter[str] = Counter()
        self.grounding: Counter[str] = Counter()
        self.accepted: list[TaskGraph] = []
        self.diagnostics: list[str] = []
        self._infra_streak = 0
        self._sem = asyncio.Semaphore(self.settings.concurrency)
        self._serial = 0

    def reject(self, reason: str) -> None:
        self.rejections[reason] += 1

    # ------------------------------------------------------------------ one sample
    def sample(self, profile: Profile) -> _Job | None:
        """Sampling, coherence, composition and grounding of one candidate; None = rejected."""
        libs = self.sampler.libs
        picked = self.sampler.best_shape(profile)
        if picked is None:
            self.reject("profile infeasible for these libraries")
            return None
        shape, candidates = picked
        if not candidates:
            self.reject("no MCP combination fits the profile")
            return None
        for combo in candidates[: self.settings.coherence_attempts]:
            coherence = check_coherence([libs[m].bundle for m in combo.mcps], self.llm)
            if coherence.rejection or coherence.verdict is None:
                self.reject(_reason(coherence.rejection or "incoherent combination"))
                continue
            self.sampler.commit(combo, shape.tasks)  # usage first, then draw tasks
            pool = self.sampler.draw(combo, shape.tasks)
            self._serial += 1
            gid = f"{profile.name.lower()}-{self.settings.seed}-{self._serial:05d}"
            bundles = {m: libs[m].bundle for m in combo.mcps}
            state = compose_graph(
                CompositionState(
                    graph_id=gid,
                    profile=profile.name,
                    objective=coherence.verdict.objective,
                    nodes_wanted=shape.tasks,
                    pool=pool,
                ),
                bundles,
                self.llm,
            )
            if state.graph is None or state.issues:
                kinds: list[str] = sorted({i.kind for i in state.issues}) or ["no graph"]
                self.reject(f"graph check: {kinds[0]}")
                return None
            graph = self._with_objective(state.graph, bundles)
            if graph is None:
                return None
            grounded = ground(
                graph,
                {m: bundles[m] for m in graph.mcps},
                self.llm,
                distractors=self.settings.distractors_per_table,
            )
            if grounded.failed:
                self.reject("ungroundable state")
                return None
            self.grounding["rows dropped by schema checks"] += len(grounded.issues)
            files = ground_workspaces(graph, {m: bundles[m] for m in graph.mcps})
            self.grounding["workspace files dropped by check guards"] += len(files.dropped)
            return _Job(graph=graph, grounding=grounded, workspaces=files)
        return None

    def _with_objective(self, graph: TaskGraph, bundles: dict[str, BundleView]) -> TaskGraph | None:
        """The graph with its objective written from what it does (the coherence verdict's
        objective was written before any node was chosen); None = rejected."""
        if self.llm is None:
            text: str | None = write_objective(graph, bundles)
            problems = objective_problems(text or "", graph, bundles)
        else:
            text, problems = llm_objective(self.llm, graph, bundles)
        if text is None or problems:
            self.reject("objective rejected")
            self.diagnostics.append(f"{graph.id}: objective: {'; '.join(problems)}")
            return None
        return graph.model_copy(update={"objective": text})

    # ------------------------------------------------------------------ snapshots + replay
    async def finish(self, job: _Job) -> TaskGraph | None:
        try:
            graph = await self._finish(job)
        except (WeftRuntimeError, OSError) as exc:
            # the host (or the disk under it) failed, not the task: count it, go on, and stop
            # only if it keeps failing
            self.reject("infrastructure error")
            self.diagnostics.append(f"{job.graph.id}: infrastructure: {exc}")
            self._infra_streak += 1
            if self._infra_streak >= INFRA_STREAK_LIMIT:
                raise ExecutionError(
                    f"MegaMCP failed {self._infra_streak} times in a row; last: {exc}"
                ) from None
            return None
        self._infra_streak = 0
        return graph

    async def _finish(self, job: _Job) -> TaskGraph | None:
        graph = job.graph
        bundle_paths = {m: self.sampler.libs[m].bundle.path for m in graph.mcps}
        async with self._sem:
            ids = {m: await self.registrar.mcp_id(p) for m, p in bundle_paths.items()}
            composed = _with_mcp_ids(graph, ids)
            last_error = ""
            for upto in (3, 2, 1):  # fall back to fewer rounds when history breaks a condition
                # fewer rows may mean other created ids: each state settles its own
                graph = composed
                rows = job.grounding.rows(upto)
                files, issues = await asyncio.to_thread(
                    write_snapshots, rows, bundle_paths, self.out / "snapshots"
                )
                if issues:
                    self.grounding["rows dropped by schema checks"] += len(issues)
                workspaces = await asyncio.to_thread(
                    write_workspaces,
                    job.workspaces.files(upto),
                    bundle_paths,
                    self.out / "snapshots",
                )
                # the replay's first request stores the initial DBs and workspaces (one request,
                # not one per MCP)
                refs = await snapshot_refs(self.registrar, files, bundle_paths, workspaces)
                snaps = {m: r.uri for m, r in refs.items()}
                if unsettled(graph):
                    # ids created upstream exist once their create ran: a probe runs the calls,
                    # the ids it saw replace the placeholders, then the replay verifies that
                    # each downstream row holds exactly the id created upstream
                    probe = await replay(
                        self.client,
                        self.registrar,
                        probe_prefix(graph),
                        snaps,
                        bundle_paths,
                        store=files,
                        workspaces=workspaces,
                        probe=True,
                    )
                    graph = settle(graph, probe.outputs)
                    if unsettled(graph):
                        why = probe.diagnostic or "no id returned"
                        last_error = f"created ids not settled ({why}): {unsettled(graph)}"
                        continue
                report = await replay(
                    self.client,
                    self.registrar,
                    graph,
                    snaps,
                    bundle_paths,
                    store=files,
                    workspaces=workspaces,
                )
                if report.passed:
                    self.grounding[f"kept rounds i-{ROUND_NAMES[upto - 1]}"] += 1
                    keep = set(report.final_passing)
                    final = [c for n in graph.nodes for c in n.checks if c.id in keep]
                    graph = graph.model_copy(
                        update={"initial_snapshots": refs, "final_checks": final}
                    )
                    return graph
                last_error = report.diagnostic
        self.reject("unreachable state")
        self.diagnostics.append(f"{graph.id}: {last_error}")
        return None

    def _save(self, graph: TaskGraph) -> TaskGraph:
        try:
            from weft_tasks.views import build_view

            graph = graph.model_copy(
                update={"views": [build_view(graph, ViewMode.AGENTIC, Disclosure.FULL)]}
            )
        except Exception as exc:
            self.grounding[f"view not built: {type(exc).__name__}"] += 1
        # round-trip through JSON so the sealed hash is that of what a reader will load
        graph = TaskGraph.model_validate_json(
            graph.model_copy(update={"content_hash": None}).model_dump_json()
        )
        graph = graph.sealed()
        graph.save(self.out / "tasks" / f"{graph.id}.json")
        return graph

    # ------------------------------------------------------------------ corpus
    async def run(self, n: int, on_progress: Callable[[], None] | None = None) -> CorpusReport:
        started = time.perf_counter()
        quotas = largest_remainder(n, self.profiles.targets)
        produced: Counter[str] = Counter()
        # Every MCP is registered up front and all at once: a registration imports the module in
        # a sandboxed probe (~2 s of CPU), and the first waves would otherwise wait on them a few
        # at a time. A failure here comes back, counted, from the task that needs that MCP.
        await asyncio.gather(
            *(self.registrar.mcp_id(lib.bundle.path) for lib in self.libs),
            return_exceptions=True,
        )
        for profile in self.profiles.profiles:
            await self._compose_profile(profile, quotas[profile.name], produced, on_progress)
        report = CorpusReport(
            requested=n,
            quotas=quotas,
            produced=dict(produced),
            rejections=dict(self.rejections),
            grounding={k: v for k, v in self.grounding.items() if v},
            tasks=[g.id for g in self.accepted],
            diagnostics=list(self.diagnostics),
            seconds=round(time.perf_counter() - started, 3),
            stats=corpus_stats(self.accepted, self.libs, quotas, self.profiles.targets),
        )
        atomic_write_text(self.out / "corpus.json", report.model_dump_json(indent=2))
        return report

    async def _compose_profile(
        self,
        profile: Profile,
        quota: int,
        produced: Counter[str],
        on_progress: Callable[[], None] | None,
    ) -> None:
        """Waves of samples until `quota` tasks of `profile` are accepted or its attempts run out.

        A wave is drawn in order and its replays run concurrently; results are taken in draw
        order. Up to two waves are in flight: the next wave is drawn (and the last one's tasks
        saved) while the host replays the current one, so the host never idles on the client's
        sampling. Wave j is always drawn right after wave j-2's results were taken, never at a
        time that depends on the host, so the same seed composes the same corpus however many
        replays run at once or how fast they finish.
        """
        limit = max(1, quota) * self.settings.max_attempts_factor
        attempts = 0
        waves: deque[tuple[list[_Job], asyncio.Future[list[TaskGraph | None]]]] = deque()
        try:
            while True:
                while len(waves) < 2:
                    in_flight = sum(len(jobs) for jobs, _ in waves)
                    wave, attempts = await self._draw(
                        profile, quota - produced[profile.name] - in_flight, attempts, limit
                    )
                    if not wave:
                        break
                    waves.append(
                        (wave, asyncio.ensure_future(asyncio.gather(*map(self.finish, wave))))
                    )
                if not waves:
                    break
                jobs, replays = waves.popleft()
                results = await replays
                for job, g in zip(jobs, results, strict=True):
                    if g is None:
                        self.sampler.unrecord([nd.task for nd in job.graph.nodes])
                        continue
                    self.accepted.append(self._save(g))
                    produced[profile.name] += 1
                    if self.on_task:
                        self.on_task(self.accepted[-1])
                    if on_progress:
                        on_progress()
                    await asyncio.sleep(0)  # let the wave in flight read its responses
        finally:
            for _, replays in waves:
                replays.cancel()
            if waves:
                await asyncio.gather(*(r for _, r in waves), return_exceptions=True)
        if produced[profile.name] < quota:
            self.rejections[f"quota unmet ({profile.name})"] += quota - produced[profile.name]

    async def _draw(
        self, profile: Profile, wanted: int, attempts: int, limit: int
    ) -> tuple[list[_Job], int]:
        """Up to one wave of accepted samples (at most `wanted`), and the attempts used so far."""
        wave: list[_Job] = []
        while len(wave) < min(wanted, self.settings.compose_wave) and attempts < limit:
            attempts += 1
            job = self.sample(profile)
            if job is not None:
                self.sampler.record([nd.task for nd in job.graph.nodes])
                wave.append(job)
            await asyncio.sleep(0)  # a sample is ~15 ms of CPU: the wave in flight goes on
        return wave, attempts


async def compose_tasks(
    libraries: Sequence[MCPLibrary],
    client: GroupService,
    out: str | Path,
    n: int,
    *,
    profiles: ProfileSet = DEFAULT_PROFILES,
    llm: BaseChatModel | None = None,
    settings: TasksSettings | None = None,
    registrar: Registrar | None = None,
) -> tuple[list[TaskGraph], CorpusReport]:
    """Compose `n` grounded task graphs from `libraries` (see `Composer`); `registrar`: the MCP
    ids of bundles an earlier stage registered."""
    composer = Composer(
        libraries,
        client,
        Path(out),
        profiles=profiles,
        llm=llm,
        settings=settings,
        registrar=registrar,
    )
    report = await composer.run(n)
    return composer.accepted, report
