"""Environment revision (§3.2.2): weft-envsynth's revision path for the affected tools only.

The bundle's own spec, entities and contracts are the definition; the attributed tools' routes
are regenerated from them (with the attribution evidence as feedback when a model is set) and
spliced into server.py, so every other route stays byte-identical. The revised bundle is then
revalidated with weft-envsynth's construction checks; only if every revised tool passes is it
certified as the bundle's next version (the old one moves to .history) and registered again in
MegaMCP, which gives it a new registry version. Schema changes are not made here, so snapshots
carry forward unchanged; a revision that did migrate would go through
`weft_envsynth.migrations.upgrade_snapshot`.
"""

from __future__ import annotations

import ast
import shutil
import tempfile
from pathlib import Path
from typing import Any

from weft_core.models import ContractSet, EntityModel, EnvBundleManifest, MCPSpec
from weft_evolve.models import Component, Fix, Revision


def _route_span(tree: ast.Module, tool: str) -> tuple[int, int] | None:
    """Lines (0-based start, end exclusive) of the route function of `tool`, decorators included."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == f"tool_{tool}":
            start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
            assert node.end_lineno is not None
            return start, node.end_lineno
    return None


def route_sources(source: str) -> dict[str, str]:
    """tool -> source of its route function (how 'only the selected routes changed' is checked)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("tool_"):
            span = _route_span(tree, node.name.removeprefix("tool_"))
            if span:
                out[node.name.removeprefix("tool_")] = "\n".join(lines[span[0] : span[1]])
    return out


def splice_routes(current: str, regenerated: str, tools: list[str]) -> tuple[str, list[str]]:
    """`current` with the route functions of `tools` taken from `regenerated`."""
    cur_lines = current.splitlines()
    new_tree, new_lines = ast.parse(regenerated), regenerated.splitlines()
    changed: list[str] = []
    for tool in tools:
        cur_span = _route_span(ast.parse("\n".join(cur_lines)), tool)
        new_span = _route_span(new_tree, tool)
        if cur_span is None or new_span is None:
            continue
        replacement = new_lines[new_span[0] : new_span[1]]
        if cur_lines[cur_span[0] : cur_span[1]] != replacement:
            cur_lines[cur_span[0] : cur_span[1]] = replacement
            changed.append(tool)
    return "\n".join(cur_lines) + "\n", changed


def regenerate_server(
    bundle: Path, tools: list[str], llm: Any = None, feedback: list[str] | None = None
) -> str:
    from weft_envsynth._internal.assemble import format_sources
    from weft_envsynth.backend import backend, render_server
    from weft_envsynth.bindings import load_bindings

    spec = MCPSpec.load(bundle / "spec.json")
    entities = EntityModel.load(bundle / "entities.json")
    contracts = ContractSet.load(bundle / "contracts.json")
    # The tools a model bound to SQL, a repository or a record graph stay bound (bindings.json).
    plan, _notes = backend(
        spec,
        entities,
        contracts,
        llm,
        only=set(tools),
        feedback=feedback,
        bindings=load_bindings(bundle),
    )
    text = render_server(spec, entities, plan)
    with tempfile.TemporaryDirectory(prefix="weft-evolve-") as tmp:
        p = Path(tmp) / "server.py"
        p.write_text(text, encoding="utf-8")
        format_sources([p])
        return p.read_text(encoding="utf-8")


def revise_environment(
    bundle: Path,
    tools: list[str],
    *,
    evidence: list[str] | None = None,
    llm: Any = None,
    task_ids: list[str] | None = None,
) -> tuple[Revision, Path | None]:
    """Revise the routes of `tools` in `bundle`; returns the revision record and the certified
    bundle path (None when revalidation failed and nothing was replaced)."""
    from weft_envsynth.certify import certify_state
    from weft_envsynth.state import EnvSynthState
    from weft_envsynth.validate import validate

    manifest = EnvBundleManifest.load(bundle / "manifest.json")
    rev = Revision(
        component=Component.ENVIRONMENT,
        target_key=f"env:{bundle.name}:{','.join(sorted(tools))}",
        task_ids=task_ids or [],
        fix=Fix.REVISE_ROUTE,
        from_version=f"{bundle.name}@v{manifest.version}",
    )
    current = (bundle / "server.py").read_text(encoding="utf-8")
    try:
        regenerated = regenerate_server(bundle, tools, llm, evidence)
        text, changed = splice_routes(current, regenerated, tools)
    except Exception as exc:
        rev.error = f"regeneration failed: {type(exc).__name__}: {exc}"[:300]
        return rev, None
    rev.changed = [f"route {t}" for t in changed]
    if not changed:
        rev.error = "the regenerated routes equal the current ones"
        rev.revalidation.append("no change to revalidate")
        return rev, None
    before = route_sources(current)
    after = route_sources(text)
    untouched = sorted(t for t in before if t not in tools and before[t] != after.get(t))
    if untouched:
        rev.error = f"routes outside the selection changed: {untouched}"
        return rev, None
    work = bundle.parent / f".work-evolve-{bundle.name}"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(bundle, work, ignore=shutil.ignore_patterns("__pycache__", "manifest.json"))
    (work / "server.py").write_text(text, encoding="utf-8")
    spec = MCPSpec.load(work / "spec.json")
    entities = EntityModel.load(work / "entities.json")
    contracts = ContractSet.load(work / "contracts.json")
    try:
        report = validate(work, spec, entities, contracts, round=1)
    except Exception as exc:
        shutil.rmtree(work, ignore_errors=True)
        rev.error = f"revalidation crashed: {type(exc).__name__}: {exc}"[:300]
        return rev, None
    failing = report.failing_tools()
    for t in tools:
        recs = [c for c in report.checks if c.tool == t]
        ok = not failing.get(t)
        rev.revalidation.append(
            f"{t}: {sum(c.passed for c in recs)}/{len(recs)} construction checks pass"
        )
        if not ok:
            rev.revalidation.append(
                f"{t}: " + "; ".join(f"{c.name}: {c.detail}" for c in failing[t])[:300]
            )
    previously = {t.name for t in manifest.tools if t.certified}
    # Only the revised routes changed (the splice keeps every other one byte-identical), so an
    # unchanged route failing now failed before: a defect found on the way, not a regression.
    rev.failing_elsewhere = sorted(t for t in failing if t not in tools)
    if rev.failing_elsewhere:
        rev.revalidation.append(
            f"unchanged routes failing their construction checks: {rev.failing_elsewhere}"
        )
    regressed = sorted(t for t in failing if t in previously and t in tools)
    if regressed:
        shutil.rmtree(work, ignore_errors=True)
        rev.error = f"revalidation failed for {regressed}"
        return rev, None
    state = EnvSynthState(
        spec=spec,
        out_dir=str(bundle.parent),
        work_dir=str(work),
        bundle_name=bundle.name,
        contracts=contracts,
        entities=entities,
        report=report,
        round=1,
        strategy="evolve",
        schema_revision=manifest.schema_revision,
        notes=[f"evolve: revised routes {changed}", *(evidence or [])[:10]],
    )
    result = certify_state(state)
    if result.get("error") or not result.get("bundle_path"):
        shutil.rmtree(work, ignore_errors=True)
        rev.error = f"certification failed: {result.get('error')}"
        return rev, None
    new_manifest = result["manifest"]
    rev.to_version = f"{bundle.name}@v{new_manifest.version}"
    rev.revalidated = True
    return rev, Path(result["bundle_path"])
