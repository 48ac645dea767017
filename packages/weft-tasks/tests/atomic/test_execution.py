from __future__ import annotations

import pytest

from weft_core.models import FieldEquals, ReferenceCall
from weft_tasks.atomic.execution import (
    TemplateError,
    ToolReturn,
    extract,
    render,
    render_checks,
    run_calls,
    template_names,
)


def test_render_keeps_types_of_whole_templates_and_substitutes_inside_text() -> None:
    env = {"id": 7, "name": "Ada"}
    assert render({"a": "{{id}}", "b": "hi {{name}} #{{id}}", "c": ["{{ name }}"]}, env) == {
        "a": 7,
        "b": "hi Ada #7",
        "c": ["Ada"],
    }
    with pytest.raises(TemplateError, match="missing"):
        render("{{missing}}", env)
    assert template_names({"x": ["{{a}}", "b {{c}}"]}) == {"a", "c"}


def test_extract_by_path_then_breadth_first() -> None:
    res = {"result": [{"id": 3, "owner": {"id": 9}}, {"id": 4}]}
    assert extract(res, "result.1.id") == 4
    assert extract(res, "id") == 3  # shallowest first, not the nested owner id
    with pytest.raises(KeyError):
        extract(res, "nope")


def test_render_checks_fills_templates() -> None:
    (c,) = render_checks(
        [FieldEquals(table="t", where={"id": "{{k}}"}, field="f", value="{{v}}")],
        {"k": 1, "v": "x"},
    )
    assert c.where == {"id": 1} and c.value == "x"


class _Caller:
    def __init__(self, results: list[ToolReturn]) -> None:
        self.results, self.seen = results, []

    async def call(self, mcp: str, tool: str, arguments: dict) -> ToolReturn:
        self.seen.append((tool, arguments))
        return self.results.pop(0)


async def test_run_calls_binds_between_calls_and_stops_at_errors() -> None:
    calls = [
        ReferenceCall(tool="find", arguments={"email": "{{email}}"}, bind={"cid": "id"}),
        ReferenceCall(tool="update", arguments={"id": "{{cid}}"}),
    ]
    caller = _Caller([ToolReturn(False, {"id": 5}), ToolReturn(False, {"ok": True})])
    rec = await run_calls(caller, "m", calls, {"email": "a@b"})
    assert rec.ok and caller.seen == [("find", {"email": "a@b"}), ("update", {"id": 5})]

    caller = _Caller([ToolReturn(True, None, "no such customer")])
    rec = await run_calls(caller, "m", calls, {"email": "a@b"})
    assert rec.failed_at == 0 and "no such customer" in rec.diagnostic

    caller = _Caller(
        [ToolReturn(False, {"other": 1})]
    )  # the bind finds nothing; the next call cannot render
    rec = await run_calls(caller, "m", calls, {"email": "a@b"})
    assert rec.failed_at == 1 and "cid" in rec.diagnostic
