"""Which business objects MCPs share, and which task inputs and outputs are about them.

Fields are linked by their link key (`weft_tasks.grounding.identity.link_key`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

from weft_core.models import AtomicTask
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.atomic.execution import template_names
from weft_tasks.grounding.identity import link_key


@dataclass(frozen=True)
class FieldRef:
    mcp: str
    entity: str
    field: str
    key: str


def link_fields(bundle: BundleView) -> list[FieldRef]:
    if "link_fields" not in bundle.memo:
        bundle.memo["link_fields"] = _link_fields(bundle)
    return list(bundle.memo["link_fields"])


def _link_fields(bundle: BundleView) -> list[FieldRef]:
    out = []
    for e in bundle.entities.entities:
        for f in e.fields:
            k = link_key(e, f.name)
            if k:
                out.append(FieldRef(bundle.mcp, e.name, f.name, k))
    return out


def shared_keys(a: BundleView, b: BundleView) -> set[str]:
    return {f.key for f in link_fields(a)} & {f.key for f in link_fields(b)}


def linked(bundles: list[BundleView]) -> bool:
    """Whether the MCPs form one connected component over shared link keys."""
    if len(bundles) <= 1:
        return True
    seen = {0}
    frontier = [0]
    while frontier:
        i = frontier.pop()
        for j in range(len(bundles)):
            if j not in seen and shared_keys(bundles[i], bundles[j]):
                seen.add(j)
                frontier.append(j)
    return len(seen) == len(bundles)


def shared_entity_score(bundles: list[BundleView]) -> float:
    """Fraction of MCP pairs that share a business object. MCPs without tables (a notes
    workspace) serve any objective and are left out of the pairs."""
    pairs = list(combinations([b for b in bundles if b.entities.entities], 2))
    if not pairs:
        return 1.0
    return sum(1 for a, b in pairs if shared_keys(a, b)) / len(pairs)


def _ops(bundle: BundleView) -> frozenset[tuple[str, str]]:
    # per MCP, not per combination: the sampler scores thousands of combinations per task
    if "ops" not in bundle.memo:
        certified = set(bundle.certified_tools)
        bundle.memo["ops"] = frozenset(
            (c.entity or "-", c.operation)
            for c in bundle.contracts.contracts
            if c.tool in certified
        )
    ops: frozenset[tuple[str, str]] = bundle.memo["ops"]
    return ops


def complementary_score(bundles: list[BundleView]) -> float:
    """How many kinds of operation (read / create / change / remove / files) the MCPs bring together,
    counting a kind only once however many MCPs offer it."""
    kinds = {
        "read": {"read", "search", "list"},
        "create": {"create"},
        "change": {"update", "action"},
        "remove": {"delete"},
        "files": {"file_read", "file_write", "file_list", "file_delete"},
    }
    have = {op for b in bundles for _, op in _ops(b)}
    return sum(1 for ops in kinds.values() if have & ops) / len(kinds)


def redundancy_score(bundles: list[BundleView]) -> float:
    """Mean overlap (Jaccard) of what the MCPs do: two CRMs in one task do the same job twice."""
    pairs = list(combinations(bundles, 2))
    if not pairs:
        return 0.0
    total = 0.0
    for a, b in pairs:
        oa = {(e.split(".")[0], o) for e, o in _ops(a)}
        ob = {(e.split(".")[0], o) for e, o in _ops(b)}
        total += len(oa & ob) / len(oa | ob) if oa | ob else 0.0
    return total / len(pairs)


def input_fields(task: AtomicTask, bundle: BundleView) -> dict[str, tuple[str, str, str]]:
    """`{input name: (entity, field, role)}` for inputs that reach an argument mapped onto state."""
    out: dict[str, tuple[str, str, str]] = {}
    # a template a call fills from an earlier call's result (the id a create returned, read
    # back) is no input of the task: nobody gives it and no upstream node can feed it
    inputs = {i.name for i in task.inputs}
    for call in task.reference_calls:
        contract = bundle.contract(call.tool)
        if contract is None:
            continue
        for m in contract.mappings:
            value: Any = call.arguments.get(m.argument)
            if value is None:
                continue
            entity = m.entity or contract.entity
            if not entity or not m.field:
                continue
            entity, field = _referenced(bundle, entity, m.field, m.role)
            for name in template_names(value) & inputs:
                out.setdefault(name, (entity, field, m.role))
    return out


def _referenced(bundle: BundleView, entity: str, field: str, role: str) -> tuple[str, str]:
    """A reference or filter on a foreign key names the referenced object: deal.customer_id ->
    customer.customer_id."""
    if role not in ("reference", "filter", "key"):
        return entity, field
    try:
        fk = bundle.entities.entity(entity).field(field).foreign_key
    except KeyError:
        return entity, field
    if not fk:
        return entity, field
    parent, _, pfield = fk.partition(".")
    try:
        pfield = pfield or bundle.entities.entity(parent).key
    except KeyError:
        return entity, field
    return parent, pfield


def output_fields(task: AtomicTask, bundle: BundleView) -> dict[str, tuple[str, str]]:
    """`{output name: (entity, field)}`: outputs bound from a call whose contract names the entity."""
    out: dict[str, tuple[str, str]] = {}
    for call in task.reference_calls:
        contract = bundle.contract(call.tool)
        if contract is None or not contract.entity:
            continue
        try:
            entity = bundle.entities.entity(contract.entity)
        except KeyError:
            continue
        names = {f.name for f in entity.fields}
        for name, path in call.bind.items():
            fname = path.split(".")[-1]
            if name in task.outputs and fname in names:
                out[name] = (entity.name, fname)
    return out
