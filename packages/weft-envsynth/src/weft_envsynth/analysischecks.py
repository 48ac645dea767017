"""Deterministic checks of an `Analysis` a chat model wrote (analyze's LLM strategy), kept apart
from the programmatic analysis they guard."""

from __future__ import annotations

from weft_core.models import MCPSpec, StateKind
from weft_envsynth._internal import words as W
from weft_envsynth.plans import Analysis

WRITE_OPS = {"create", "update", "delete", "action"}


def check_analysis(spec: MCPSpec, analysis: Analysis) -> list[str]:
    """Deterministic checks of an Analysis (used on LLM output): every problem found, as text."""
    problems: list[str] = []
    names = {t.name for t in spec.tools}
    seen = {e.tool for e in analysis.tools}
    for missing in sorted(names - seen):
        problems.append(f"tool {missing!r} has no effect")
    for extra in sorted(seen - names):
        problems.append(f"effect for unknown tool {extra!r}")
    ents = {e.name: e for e in analysis.entities}
    for e in analysis.entities:
        if W.identifier(e.name) != e.name:
            problems.append(f"entity name {e.name!r} is not a snake_case identifier")
        keys = [f for f in e.fields if f.primary_key]
        if len(keys) != 1 or keys[0].name != e.key:
            problems.append(
                f"entity {e.name!r} must have exactly one primary key field named {e.key!r}"
            )
        seen_f: set[str] = set()
        for f in e.fields:
            if W.identifier(f.name) != f.name:
                problems.append(f"field {e.name}.{f.name} is not a snake_case identifier")
            if f.name in seen_f:
                problems.append(f"field {e.name}.{f.name} is duplicated")
            seen_f.add(f.name)
            if f.foreign_key:
                tgt, _, tf = f.foreign_key.partition(".")
                if tgt not in ents or tf != ents[tgt].key:
                    problems.append(
                        f"field {e.name}.{f.name} references unknown key {f.foreign_key!r}"
                    )
    for eff in analysis.tools:
        if eff.state_kind != StateKind.WORKSPACE and (eff.entity is None or eff.entity not in ents):
            problems.append(f"tool {eff.tool!r} refers to unknown entity {eff.entity!r}")
        if eff.operation.startswith("file_") != (eff.state_kind == StateKind.WORKSPACE):
            problems.append(f"tool {eff.tool!r}: file operations and workspace state go together")
        if eff.state_kind == StateKind.WORKSPACE:
            continue
        if eff.entity in ents:
            ent = ents[eff.entity]
            if eff.operation in WRITE_OPS and ent.reference_data:
                problems.append(f"tool {eff.tool!r} writes reference-data entity {ent.name!r}")
            for tr in eff.transitions:
                try:
                    f = ent.field(tr.field)
                except KeyError:
                    problems.append(
                        f"tool {eff.tool!r}: transition field {tr.entity}.{tr.field} does not exist"
                    )
                    continue
                if f.enum and tr.to_value not in f.enum:
                    problems.append(
                        f"tool {eff.tool!r}: {tr.to_value!r} is not a value of {tr.entity}.{tr.field}"
                    )
                unknown = [v for v in tr.from_values if f.enum and v not in f.enum]
                if unknown:
                    problems.append(
                        f"tool {eff.tool!r}: {unknown[0]!r} (a state it leaves) is not a value "
                        f"of {tr.entity}.{tr.field}"
                    )
                if tr.to_value is not None and tr.to_value in tr.from_values:
                    problems.append(f"tool {eff.tool!r}: leaves {tr.to_value!r} for itself")
    return problems
