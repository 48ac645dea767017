"""Compute tools: the operation a stateless tool performs, when the definition makes it clear.

`add(a, b)`, `standard_deviation(numbers)`, `si_unit_conversion(value, unit_in, unit_out)` are
not lookups: their result is a function of the arguments. The operation is read from the tool's
name words and description, and accepted only when the parameters fit it (two numbers for a
binary operation, a list for a statistic, a value and two units for a conversion). The bundle
runtime's `compute()` then computes it. A tool that matches no operation stays a lookup over
reference data, and the reason is recorded (`lookup_reason`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from weft_core.models import ToolSpec, WeftModel
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import schema_type
from weft_envsynth.datemoney import date_money_semantics

ComputeOp = Literal[
    "add",
    "subtract",
    "multiply",
    "divide",
    "power",
    "sqrt",
    "abs",
    "round",
    "percentage",
    "mean",
    "min",
    "max",
    "sum",
    "stdev",
    "log",
    "convert",
    "date_add",
    "date_diff",
    "weekday",
    "currency",
]
# op -> (name words, description patterns, parameter shape)
_RULES: dict[str, tuple[set[str], str, str]] = {
    "add": ({"add", "plus"}, r"\badd(s)? two numbers\b|\bsum of two\b", "binary"),
    "subtract": (
        {"subtract", "minus"},
        r"\bsubtract(s)? (one number|two numbers|\w+ from)",
        "binary",
    ),
    "multiply": (
        {"multiply", "times"},
        r"\bmultipl(y|ies) two numbers\b|\bproduct of two\b",
        "binary",
    ),
    "divide": ({"divide"}, r"\bdivide(s)? one number by another\b|\bquotient\b", "binary"),
    "power": ({"power", "pow", "exponent"}, r"\braise(s)? a number to a power\b", "binary"),
    "sqrt": ({"sqrt", "square_root"}, r"\bsquare root\b", "unary"),
    "abs": ({"abs", "absolute"}, r"\babsolute value\b", "unary"),
    "round": ({"round"}, r"\bround(s)? a number\b", "unary"),
    "percentage": ({"percentage", "percent"}, r"\bpercentage of a part\b", "binary"),
    "mean": ({"mean", "average", "avg"}, r"\b(mean|average) of a list\b", "list"),
    "min": ({"min", "minimum"}, r"\bminimum value in a list\b", "list"),
    "max": ({"max", "maximum"}, r"\bmaximum value in a list\b", "list"),
    "sum": ({"sum", "total"}, r"\bsum of a list\b", "list"),
    "stdev": ({"deviation", "stdev", "std"}, r"\bstandard deviation\b", "list"),
    "log": ({"log", "logarithm"}, r"\blogarithm\b", "unary"),
    "convert": (
        {"conversion", "convert"},
        r"\bconvert(s)? a value (between|from)\b.*\bunits?\b",
        "convert",
    ),
}
_NUM = {"integer", "number"}
_PRECISION = {"precision", "decimal_places", "decimals", "digits", "places", "ndigits"}


class ComputeSemantics(WeftModel):
    """The operation of a compute tool and which argument plays which operand."""

    op: ComputeOp
    operands: list[str] = Field(description="Arguments in operand order (x, y / numbers / value).")
    precision: str | None = Field(default=None, description="Argument giving decimal places.")
    base: str | None = Field(default=None, description="Logarithm base argument.")
    unit_in: str | None = None
    unit_out: str | None = None
    response_fields: list[str] = Field(default_factory=list)
    roles: dict[str, str] = Field(
        default_factory=dict,
        description="argument -> operand name, for operations whose roles are named by the "
        "definition (dates and money: `datemoney`).",
    )
    constants: dict[str, Any] = Field(
        default_factory=dict,
        description="Operands the definition fixes (a shift's sign, a documented rate table).",
    )


def _desc(tool: ToolSpec) -> str:
    d = tool.description
    if "tool description:" in d.lower():
        d = d[d.lower().rindex("tool description:") + len("tool description:") :]
    return " ".join(d.split()).lower()


def compute_semantics(tool: ToolSpec) -> ComputeSemantics | None:
    """The operation when the name or description names one and the parameters fit it."""
    dm, why = date_money_semantics(tool)
    if dm is not None:
        out = tool.output_schema or {}
        props_out = out.get("properties") if isinstance(out, dict) else None
        fields = [str(k) for k in props_out] if isinstance(props_out, dict) else []
        return ComputeSemantics(
            op=dm["op"],
            operands=list(dm["roles"]),
            roles=dm["roles"],
            constants=dm["constants"],
            response_fields=fields,
        )
    if why is not None:
        return None
    names = set(W.split_words(tool.name)) | {W.identifier(tool.name)}
    text = _desc(tool)
    hits = [
        op
        for op, (words, pattern, _shape) in _RULES.items()
        if names & words or re.search(pattern, text)
    ]
    if len(hits) > 1:
        # A name word and the description agreeing beats either alone.
        both = [op for op in hits if names & _RULES[op][0] and re.search(_RULES[op][1], text)]
        hits = both if len(both) == 1 else []
    if len(hits) != 1:
        return None
    op = hits[0]
    sem = _fit(tool, op)
    if sem is None:
        return None
    if not re.search(_RULES[op][1], text) and _contradicts(tool, sem):
        return None
    out = tool.output_schema or {}
    props_out = out.get("properties") if isinstance(out, dict) else None
    sem["response_fields"] = [str(k) for k in props_out] if isinstance(props_out, dict) else []
    return ComputeSemantics.model_validate(sem)


def _fit(tool: ToolSpec, op: str) -> dict[str, Any] | None:
    """The operand roles of `op` when the parameters fit its shape, else None."""
    shape = _RULES[op][2]
    props = tool.properties
    nums = [a for a, s in props.items() if schema_type(s) in _NUM]
    precision = next((a for a in nums if W.identifier(a) in _PRECISION), None)
    base = next((a for a in nums if W.identifier(a) == "base"), None) if op == "log" else None
    operands = [a for a in nums if a not in {precision, base}]
    lists = [a for a, s in props.items() if schema_type(s) == "array"]
    strings = [a for a, s in props.items() if schema_type(s) in {None, "string"}]
    sem: dict[str, Any] = {"op": op, "precision": precision, "base": base}
    if (shape == "binary" and len(operands) == 2) or (shape == "unary" and len(operands) == 1):
        sem["operands"] = operands
    elif shape == "list" and len(lists) == 1 and _numeric_items(props[lists[0]]):
        sem["operands"] = lists
    elif shape == "convert" and len(operands) == 1 and len(strings) == 2:
        sem |= {"operands": operands, "unit_in": strings[0], "unit_out": strings[1]}
    else:
        return None
    return sem


# Name words of arguments that shape a listing (how many, from where) rather than feed a formula.
# (Not "number" or "max": `abs(number)` and `max(numbers)` are operands.)
_OPTION_WORDS = {"count", "limit", "page", "offset", "skip", "cursor"}


def _contradicts(tool: ToolSpec, sem: dict[str, Any]) -> str | None:
    """Why the rest of the definition says a tool whose *name* alone names an operation is not
    that computation (None when nothing contradicts it).

    `git_log(repo_path, max_count)` has "log" in its name and one number, yet it is no
    logarithm: its number is an option (a count of entries), and it needs a repository path that
    no operand of a formula is. A pure function of numbers uses every required argument as an
    operand, precision, base or unit, and its operands are not listing options."""
    named = ("precision", "base", "unit_in", "unit_out")
    roles = {*sem.get("operands", []), *(sem.get(k) for k in named if sem.get(k))}
    extra = [a for a in tool.required if a not in roles]
    if extra:
        return f"required argument {extra[0]!r} is no operand of the operation"
    for a in sem.get("operands", []):
        if set(W.split_words(a)) & _OPTION_WORDS:
            return f"argument {a!r} is a listing option, not an operand"
    return None


def _numeric_items(schema: Any) -> bool:
    items = schema.get("items") if isinstance(schema, dict) else None
    return not isinstance(items, dict) or schema_type(items) in _NUM | {None}


def operand_roles(sem: ComputeSemantics) -> dict[str, str]:
    """argument -> the name the runtime's `compute()` reads it under."""
    if sem.roles:
        return dict(sem.roles)
    roles: dict[str, str] = {}
    if sem.op in {"mean", "min", "max", "sum", "stdev"}:
        roles[sem.operands[0]] = "numbers"
    else:
        roles.update(zip(sem.operands, ["x", "y"], strict=False))
    for arg, role in (
        (sem.precision, "precision"),
        (sem.base, "base"),
        (sem.unit_in, "unit_in"),
        (sem.unit_out, "unit_out"),
    ):
        if arg:
            roles[arg] = role
    return roles


def lookup_reason(tool: ToolSpec) -> str:
    """Why a stateless tool is served as a lookup over reference data, not computed."""
    _dm, why = date_money_semantics(tool)
    if why is not None:
        return why
    names = set(W.split_words(tool.name))
    text = _desc(tool)
    near = [
        op
        for op, (words, pattern, _s) in _RULES.items()
        if names & words or re.search(pattern, text)
    ]
    if len(near) > 1:
        return f"the definition matches several operations ({', '.join(near)}); served as a lookup"
    if near:
        fit = _fit(tool, near[0])
        why = _contradicts(tool, fit) if fit is not None else None
        if why:
            return (
                f"the name names the operation {near[0]!r} but the definition says otherwise "
                f"({why}); served as a lookup"
            )
        return (
            f"the definition names the operation {near[0]!r} but its parameters do not fit it; "
            "served as a lookup"
        )
    return "no computable operation is recognisable in the name or description; served as a lookup"
