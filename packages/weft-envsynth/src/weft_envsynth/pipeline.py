"""Running the graph on specs: one spec, or a batch over a process pool, each ending in a SynthResult."""

from __future__ import annotations

import functools
import os
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer
from pydantic import BaseModel, Field

from weft_core.llm import model_display_name
from weft_core.models import MCPSpec
from weft_envsynth.errors import EnvSynthUserError
from weft_envsynth.graph import build_envsynth_graph
from weft_envsynth.settings import EnvSynthSettings
from weft_envsynth.state import EnvSynthContext, EnvSynthState

Status = Literal["certified", "partial", "rejected", "failed"]


class SynthResult(BaseModel):
    """The outcome of synthesizing one spec (one row of the CLI report)."""

    source: str = Field(description="Spec file (or the spec name).")
    name: str | None = None
    slug: str | None = None
    status: Status
    bundle: str | None = Field(default=None, description="Path of the written bundle.")
    tools_total: int = 0
    tools_certified: int = 0
    rounds_used: int = 0
    reason: str | None = Field(default=None, description="Why the spec was rejected or failed.")
    uncertified: dict[str, str] = Field(
        default_factory=dict, description="Tool -> why it is not certified."
    )
    rejected_tools: dict[str, str] = Field(
        default_factory=dict, description="Tools the loader dropped."
    )
    warnings: list[str] = Field(
        default_factory=list, description="Loader repairs, e.g. a renamed clashing tool."
    )
    seconds: float = 0.0

    @property
    def mcp(self) -> str:
        """The MCP's name everywhere downstream: the bundle's slug, else the spec file's stem."""
        return self.slug or Path(self.source).stem


@functools.lru_cache(maxsize=4)
def _compiled(
    checkpointer: Checkpointer,
) -> CompiledStateGraph[EnvSynthState, EnvSynthContext, EnvSynthState, EnvSynthState]:
    """One compiled graph per checkpointer (the model varies per run, through the context)."""
    return build_envsynth_graph(checkpointer=checkpointer)


def synthesize_spec(
    spec: MCPSpec,
    out_dir: str | Path,
    *,
    llm: BaseChatModel | None = None,
    rounds: int = 3,
    bundle_name: str | None = None,
    source: str | None = None,
    checkpointer: Checkpointer = None,
    thread_id: str | None = None,
) -> SynthResult:
    """Run the whole graph on one spec and summarize the outcome."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    previous = out / (bundle_name or spec.slug)
    state = EnvSynthState(
        spec=spec,
        out_dir=str(out),
        rounds=rounds,
        strategy=model_display_name(llm),
        previous_bundle=str(previous) if (previous / "manifest.json").exists() else None,
        bundle_name=bundle_name,
    )
    graph = _compiled(checkpointer)
    config: RunnableConfig = {"recursion_limit": 20 + 6 * rounds}
    if checkpointer is not None:
        config["configurable"] = {"thread_id": thread_id or spec.slug}
    final = EnvSynthState.model_validate(
        graph.invoke(state, config=config, context=EnvSynthContext(llm=llm))
    )
    src = source or spec.source or spec.name
    if final.error is not None or final.manifest is None:
        return SynthResult(
            source=src,
            name=spec.name,
            slug=bundle_name or spec.slug,
            status="rejected",
            reason=final.error,
            tools_total=len(spec.tools),
            rounds_used=final.round,
            seconds=time.perf_counter() - t0,
            uncertified=dict(final.uncertified),
        )
    m = final.manifest
    unc = {t.name: t.reason or "" for t in m.tools if not t.certified}
    return SynthResult(
        source=src,
        name=spec.name,
        slug=bundle_name or spec.slug,
        status="certified" if m.certified else "partial",
        bundle=final.bundle_path,
        tools_total=len(m.tools),
        tools_certified=len(m.certified_tools),
        rounds_used=final.round,
        uncertified=unc,
        seconds=time.perf_counter() - t0,
    )


def load_spec(path: str | Path) -> tuple[MCPSpec, dict[str, str], list[str]]:
    """Load any supported spec file (weft_core.loaders): the spec, the tools it dropped (with
    reasons) and its repair warnings."""
    from weft_core.loaders import load_spec_file

    loaded = load_spec_file(path)
    _check_enums(loaded.spec, EnvSynthSettings().max_enum_values)
    return loaded.spec, {r.name: r.reason for r in loaded.rejected_tools}, list(loaded.warnings)


def _enums(schema: Any, where: str) -> Iterable[tuple[str, int]]:
    """(JSON path, length) of every enum in a JSON schema, nested ones included."""
    if isinstance(schema, dict):
        values = schema.get("enum")
        if isinstance(values, list):
            yield where, len(values)
        for key, sub in schema.items():
            if key != "enum":
                yield from _enums(sub, f"{where}.{key}")
    elif isinstance(schema, list):
        for i, sub in enumerate(schema):
            yield from _enums(sub, f"{where}[{i}]")


def _check_enums(spec: MCPSpec, limit: int) -> None:
    """EnvSynthUserError naming the first enum longer than `limit` (every value becomes
    generated code, seed data and validation cases)."""
    for tool in spec.tools:
        for where, n in _enums(tool.input_schema, "input_schema"):
            if n > limit:
                raise EnvSynthUserError(
                    f"tool {tool.name!r}: {where} has an enum of {n:,} values, over the limit "
                    f"of {limit:,} (WEFT_ENVSYNTH_MAX_ENUM_VALUES)"
                )


def synthesize_file(
    path: str | Path,
    out_dir: str | Path,
    *,
    model: str | None = None,
    rounds: int = 3,
    bundle_name: str | None = None,
    llm: Any = None,
) -> SynthResult:
    """Load and synthesize one spec file; never raises (a failure becomes a result with a reason).
    `llm` (a chat model, e.g. a recording or replaying one) is used instead of building `model`."""
    from weft_core.exceptions import WeftError

    t0 = time.perf_counter()
    src = str(path)
    try:
        spec, dropped, warnings = load_spec(path)
    except WeftError as exc:
        return SynthResult(
            source=src,
            status="rejected",
            reason=f"spec not loadable: {exc}",
            seconds=time.perf_counter() - t0,
        )
    if not spec.tools:
        return SynthResult(
            source=src,
            name=spec.name,
            status="rejected",
            reason="no usable tool in the spec",
            rejected_tools=dropped,
            seconds=time.perf_counter() - t0,
        )
    try:
        llm = llm if llm is not None else _make_llm(model)
        result = synthesize_spec(
            spec, out_dir, llm=llm, rounds=rounds, source=src, bundle_name=bundle_name
        )
    except WeftError as exc:
        return SynthResult(
            source=src,
            name=spec.name,
            status="rejected",
            reason=str(exc),
            rejected_tools=dropped,
            seconds=time.perf_counter() - t0,
        )
    except Exception as exc:  # one spec's crash must not stop the batch; the report keeps the cause
        tb = traceback.extract_tb(exc.__traceback__)
        where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
        return SynthResult(
            source=src,
            name=spec.name,
            status="failed",
            reason=f"{type(exc).__name__}: {exc} ({where})"[:400],
            rejected_tools=dropped,
            seconds=time.perf_counter() - t0,
        )
    result.rejected_tools = dropped
    result.warnings = warnings
    return result


_LLM_CACHE: dict[str, Any] = {}


def _make_llm(model: str | None) -> Any:
    if not model:
        return None
    if model not in _LLM_CACHE:
        from weft_core.llm import make_chat_model

        _LLM_CACHE[model] = make_chat_model(model)
    return _LLM_CACHE[model]


def synthesize_files(
    paths: Iterable[str | Path],
    out_dir: str | Path,
    *,
    model: str | None = None,
    rounds: int = 3,
    jobs: int = 1,
    on_result: Callable[[SynthResult], None] | None = None,
) -> list[SynthResult]:
    """Synthesize many spec files, `jobs` at a time in worker processes; results in input order."""
    files = [str(p) for p in paths]
    names = bundle_names(files)
    results: dict[int, SynthResult] = {}
    if jobs <= 1:
        for i, p in enumerate(files):
            results[i] = synthesize_file(
                p, out_dir, model=model, rounds=rounds, bundle_name=names[i]
            )
            if on_result:
                on_result(results[i])
    else:
        # No max_tasks_per_child: on Python 3.11 replacing a retired worker can hang the pool.
        # Bundles are unloaded after validation, so a long-lived worker does not accumulate them.
        # Largest specs first (size stands for tool count): a 250-tool spec started last would
        # leave the other workers idle at the end.
        order = sorted(range(len(files)), key=lambda i: -_size(files[i]))
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {
                pool.submit(
                    synthesize_file,
                    files[i],
                    out_dir,
                    model=model,
                    rounds=rounds,
                    bundle_name=names[i],
                ): i
                for i in order
            }
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    results[i] = fut.result()
                except Exception as exc:  # a worker died (memory, signal): record it and go on
                    results[i] = SynthResult(
                        source=files[i],
                        status="failed",
                        reason=f"worker died: {type(exc).__name__}: {exc}"[:300],
                    )
                if on_result:
                    on_result(results[i])
    return [results[i] for i in range(len(files))]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def bundle_names(paths: list[str]) -> list[str | None]:
    """Distinct bundle folder names for a batch: two different specs with the same name must not
    be taken for two versions of one MCP, so later ones get `<slug>_2`, `<slug>_3`..."""
    from weft_core.exceptions import WeftError

    seen: dict[str, int] = {}
    out: list[str | None] = []
    for p in paths:
        try:
            slug = load_spec(p)[0].slug
        except WeftError:
            out.append(None)
            continue
        n = seen.get(slug, 0) + 1
        seen[slug] = n
        out.append(slug if n == 1 else f"{slug}_{n}")
    return out


def default_jobs() -> int:
    return max(1, (os.cpu_count() or 2))
