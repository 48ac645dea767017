"""Node 7, certify: write the EnvBundle (validation.json, manifest.json last) and move it into place.

A tool is certified when every check run on it in the final validation passed. The folder is
built under OUT/.work-*, the manifest is written last, and the folder is renamed to OUT/<slug>; an
earlier version is moved to OUT/.history/<slug>-v<N>, never overwritten. A spec whose tools all fail
gets no bundle (its report says why), so nothing half-built ever looks certified.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from weft_core.models import EnvBundleManifest, StateKind, ToolCertification
from weft_envsynth._internal.assemble import dump_json, file_hashes
from weft_envsynth._internal.behaviourchecks import is_behaviour_check
from weft_envsynth.computesem import lookup_reason
from weft_envsynth.plans import ADVISORY_CHECKS
from weft_envsynth.state import EnvSynthState
from weft_envsynth.validate import SEED_FILES


def tool_certifications(state: EnvSynthState) -> list[ToolCertification]:
    report = state.report
    kinds = {c.tool: c.state_kind for c in (state.contracts.contracts if state.contracts else [])}
    if state.analysis:
        for eff in state.analysis.tools:
            kinds.setdefault(eff.tool, eff.state_kind)
    out = []
    for tool in state.spec.tools:
        checks = [c for c in (report.checks if report else []) if c.tool == tool.name]
        failed = [c for c in checks if not c.passed and c.name not in ADVISORY_CHECKS]
        reason = state.uncertified.get(tool.name)
        if reason is None and failed:
            f = failed[0]
            reason = f"{f.category} error in {f.name}: {f.detail}"
        if reason is None and not any(c.kind != "structural" for c in checks):
            reason = "no execution check could run"
        out.append(
            ToolCertification(
                name=tool.name,
                state_kind=kinds.get(tool.name, StateKind.DATABASE),
                certified=reason is None,
                reason=reason,
                checks_run=len(checks),
                checks_passed=len(checks) - len(failed),
            )
        )
    return out


def tool_semantics(state: EnvSynthState) -> dict[str, dict[str, str]]:
    """Per tool: how the backend serves it (workspace verb, computed, database, or a lookup over
    reference data) and why; a lookup says what kept it from being computed."""
    out: dict[str, dict[str, str]] = {}
    routes = {r.tool: r for r in (state.backend.routes if state.backend else [])}
    stateless = {
        e.name for e in (state.entities.entities if state.entities else []) if e.reference_data
    }
    for t in state.spec.tools:
        r = routes.get(t.name)
        if r is None:
            continue
        if r.file_verb:
            out[t.name] = {
                "kind": "workspace",
                "why": f"file verb {r.file_verb!r} from its definition",
            }
        elif r.reads_all:
            out[t.name] = {
                "kind": "database",
                "why": f"reads the whole store: {', '.join(r.reads_all)}",
            }
        elif r.graph_verb:
            out[t.name] = {
                "kind": "graph",
                "why": f"record-graph {r.graph_verb!r} on the session's records",
            }
        elif r.vcs_verb:
            out[t.name] = {
                "kind": "vcs",
                "why": f"version-control {r.vcs_verb!r} on the session repository",
            }
        elif r.sql_verb:
            out[t.name] = {
                "kind": "sql",
                "why": f"SQL {r.sql_verb!r} on the session's own tables",
            }
        elif r.compute_op:
            out[t.name] = {
                "kind": "compute",
                "why": f"computes {r.compute_op!r} from its arguments",
            }
        elif r.operation.startswith("file_"):
            out[t.name] = {"kind": "workspace", "why": f"{r.operation} on a path argument"}
        elif r.entity in stateless:
            out[t.name] = {"kind": "lookup", "why": lookup_reason(t)}
        else:
            out[t.name] = {"kind": "database", "why": f"{r.operation} on {r.entity}"}
    return out


def certification_summary(state: EnvSynthState) -> dict[str, Any]:
    """The final validation split in two: self-consistency (each tool against its own contract
    and the DB) and behaviour (promises across tools from the definitions: created records found,
    updates visible, deletes gone, documented fields, unknown ids and transitions refused)."""
    checks = state.report.checks if state.report else []
    out: dict[str, Any] = {}
    for part, mine in (
        ("self_consistency", [c for c in checks if not is_behaviour_check(c.name, c.kind)]),
        ("behaviour", [c for c in checks if is_behaviour_check(c.name, c.kind)]),
    ):
        failed = [c for c in mine if not c.passed]
        out[part] = {
            "checks": len(mine),
            "passed": len(mine) - len(failed),
            "tools_checked": len({c.tool for c in mine}),
            "tools_failing": sorted({c.tool for c in failed}),
            "failures": [f"{c.tool}: {c.name}: {c.detail}" for c in failed[:20]],
            "advisory": sorted({c.name for c in failed if c.name in ADVISORY_CHECKS}),
        }
    return out


def certify_state(state: EnvSynthState) -> dict[str, Any]:
    work = Path(state.work_dir) if state.work_dir else None
    if state.error is not None:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
        return {"work_dir": None}
    assert work is not None
    tools = tool_certifications(state)
    if not any(t.certified for t in tools):
        shutil.rmtree(work, ignore_errors=True)
        first = next((t.reason for t in tools if t.reason), "no tool passed validation")
        return {"error": f"no tool could be certified (e.g. {first})", "work_dir": None}
    out = Path(state.out_dir)
    name = state.bundle_name or state.spec.slug
    final = out / name
    version = 1
    if (final / "manifest.json").exists():
        try:
            version = EnvBundleManifest.load(final / "manifest.json").version + 1
        except Exception:
            version = 2
    validation = {
        "mcp": state.spec.slug,
        "rounds_used": state.round,
        "strategy": state.strategy,
        "notes": state.notes,
        "tools": [t.model_dump(mode="json") for t in tools],
        "tool_semantics": tool_semantics(state),
        "route_code": state.route_code,
        "certification": certification_summary(state),
        "rounds": [
            r.model_dump(mode="json")
            for r in [*state.history, *([state.report] if state.report else [])]
        ],
    }
    dump_json(work / "validation.json", validation)
    if any(t.state_kind == StateKind.WORKSPACE for t in tools):
        # The files validation ran against become the initial workspace of every session.
        for rel, text in SEED_FILES.items():
            p = work / "seed_workspace" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
    (work / ".seed.sqlite.tmp").unlink(missing_ok=True)
    for cache in work.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    manifest = EnvBundleManifest(
        name=name,
        domain=state.spec.domain,
        description=state.spec.description,
        spec_hash=state.spec.sealed().content_hash or "",
        schema_revision=state.schema_revision or "base",
        tools=tools,
        files=file_hashes(work),
        strategy=state.strategy,
        rounds_used=state.round,
        version=version,
    )
    manifest.save(work / "manifest.json")
    if final.exists():
        history = out / ".history"
        history.mkdir(parents=True, exist_ok=True)
        old_version = version - 1
        dest = history / f"{name}-v{old_version}"
        n = 1
        while dest.exists():
            n += 1
            dest = history / f"{name}-v{old_version}.{n}"
        final.rename(dest)
    work.rename(final)
    return {"manifest": manifest.sealed(), "bundle_path": str(final), "work_dir": None}


def read_validation(bundle: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((bundle / "validation.json").read_text(encoding="utf-8"))
    return data
