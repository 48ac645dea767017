"""Node 6, revise: route validation failures to the stage that owns them.

Structural errors go to schema, mapping errors to contracts, runtime and state-access errors to
backend; the earliest stage with work wins (later stages re-run after it). Only failing tools are
regenerated, so what already passed is kept. Programmatic repairs: a faulty model product is
replaced by the programmatic one; schema constraints that reject valid data are relaxed.
"""

from __future__ import annotations

import re
from typing import Any

from weft_core.models import EntityModel
from weft_envsynth.plans import CheckRecord
from weft_envsynth.state import EnvSynthState, Stage

_STAGE_OF = {"structural": "schema", "mapping": "contracts", "runtime": "backend"}
_ORDER: list[Stage] = ["schema", "contracts", "backend"]


def plan_revision(state: EnvSynthState) -> dict[str, Any]:
    """Decide the target stage, the tools to redo and the feedback for it."""
    assert state.report is not None
    failing = state.report.failing_tools()
    by_stage: dict[str, list[tuple[str, CheckRecord]]] = {}
    for tool, recs in failing.items():
        for r in recs:
            by_stage.setdefault(_STAGE_OF[r.category or "runtime"], []).append((tool, r))
    target: Stage | None = next((s for s in _ORDER if s in by_stage), None)
    if target is None:
        return {"revise_target": None, "redo": [], "feedback": []}
    # Every failing tool is regenerated from the target stage on (later stages follow).
    redo = sorted(failing)
    feedback = [f"{tool}: {r.name}: {r.detail}" for tool, r in by_stage[target]][:40]
    return {"revise_target": target, "redo": redo, "feedback": feedback}


_UNIQUE = re.compile(r"UNIQUE constraint failed: (\w+)\.(\w+)")
_CHECK = re.compile(r"CHECK constraint failed: ck_(\w+)")
_NOTNULL = re.compile(r"NOT NULL constraint failed: (\w+)\.(\w+)")


def relax_schema(model: EntityModel, feedback: list[str]) -> tuple[EntityModel, list[str]]:
    """Relax constraints that rejected valid calls (from the SQLite error texts in `feedback`)."""
    notes: list[str] = []
    ents = {e.name: e for e in model.entities}
    changed = False
    for line in feedback:
        for rx, kind in ((_UNIQUE, "unique"), (_NOTNULL, "nullable")):
            m = rx.search(line)
            if m and m.group(1) in ents:
                e = ents[m.group(1)]
                fields = []
                for f in e.fields:
                    if f.name == m.group(2) and not f.primary_key:
                        f = f.model_copy(
                            update={"unique": False} if kind == "unique" else {"nullable": True}
                        )
                        notes.append(f"schema: relaxed {kind} on {e.name}.{f.name}")
                        changed = True
                    fields.append(f)
                ents[e.name] = e.model_copy(update={"fields": fields})
        m = _CHECK.search(line)
        if m:
            for e in list(ents.values()):
                fields = []
                for f in e.fields:
                    if f.enum and m.group(1) == f"{e.name}_{f.name}":
                        f = f.model_copy(update={"enum": None})
                        notes.append(f"schema: dropped enum check on {e.name}.{f.name}")
                        changed = True
                    fields.append(f)
                ents[e.name] = e.model_copy(update={"fields": fields})
    if not changed:
        return model, notes
    return model.model_copy(update={"entities": [ents[e.name] for e in model.entities]}), notes
