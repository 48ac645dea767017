from __future__ import annotations

from pathlib import Path

from weft_core.models import CallMade, EntityField, ReturnContains
from weft_tasks.atomic._values import new_value as _new_value
from weft_tasks.atomic._values import schema_value as _schema_value
from weft_tasks.atomic.bundle import load_bundle
from weft_tasks.atomic.templates import draft_for_tool


def test_argument_values_follow_their_schema() -> None:
    assert _schema_value({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "n", 1) == 2
    assert _schema_value({"type": ["string", "null"], "enum": ["a", "b"]}, "x", 1) == "a"
    tags = _schema_value({"type": "array", "items": {"type": "string"}}, "tags", 1)
    assert isinstance(tags, list) and " " not in tags[0]
    assert _new_value(
        EntityField(name="tags", type="json"),
        None,
        1,
        {"type": "array", "items": {"type": "string"}},
    )
    assert _new_value(EntityField(name="tier", enum=["bronze", "gold"]), "gold", 0) == "bronze"
    assert (
        _new_value(EntityField(name="n", type="integer"), 5, 0, {"type": "integer", "maximum": 6})
        == 6
    )


def test_find_then_act_retrieves_the_key(bundle_dirs: dict[str, Path]) -> None:
    crm = load_bundle(bundle_dirs["crm"])
    d = draft_for_tool(crm, "update_customer", 0, compound=True)
    assert d is not None and d.tool_chain == ["find_customer", "update_customer"]
    key = next(i for i in d.inputs if i.name == "customer_id")
    assert key.source == "retrieved" and d.calls[0].bind == {"customer_id": "id"}
    assert d.calls[1].arguments["customer_id"] == "{{customer_id}}"
    single = draft_for_tool(crm, "update_customer", 0, compound=False)
    assert single is not None and single.tool_chain == ["update_customer"]
    assert (
        draft_for_tool(crm, "get_customer", 99, compound=False) is None
    )  # no 100th row: nothing new


def test_create_that_references_finds_the_parent_first(bundle_dirs: dict[str, Path]) -> None:
    helpdesk = load_bundle(bundle_dirs["helpdesk"])
    d = draft_for_tool(helpdesk, "create_ticket", 0, compound=True)
    assert d is not None and d.tool_chain == ["find_requester", "create_ticket"]
    assert d.seed_rows["requester"][0]["email"] == "ada@example.com"
    kinds = [c.kind for c in d.checks]
    assert kinds == ["row_exists", "diff_contains", "no_other_changes"]


def test_workspace_tools_write_their_own_file(bundle_dirs: dict[str, Path]) -> None:
    notes = load_bundle(bundle_dirs["notes"])
    d = draft_for_tool(notes, "delete_note", 0, compound=True)
    assert d is not None and d.tool_chain == ["write_note", "delete_note"]
    assert d.checks[0].kind == "workspace_file" and d.checks[0].exists is False  # type: ignore[union-attr]


async def test_read_then_act_looks_the_object_up_first(bundle_dirs: dict[str, Path]) -> None:
    from weft_tasks.atomic.synthesis import _draft_to_task

    from .conftest import InProcessValidator

    helpdesk = load_bundle(bundle_dirs["helpdesk"])
    d = draft_for_tool(helpdesk, "close_ticket", 0, compound=True)
    assert d is not None and d.tool_chain == ["get_ticket", "close_ticket"]
    assert d.intent.startswith("Look up ticket")
    read, act = d.calls
    assert read.arguments["ticket_id"] == act.arguments["ticket_id"] == "{{ticket_id}}"
    # what the read finds is the task's outcome, named apart from the inputs the act still uses
    assert read.bind and not set(read.bind) & {i.name for i in d.inputs}
    assert set(read.bind) <= set(d.outputs) and "ticket_requester_id" in d.outputs
    made = [c for c in d.checks if isinstance(c, CallMade)]
    assert made and made[0].tool == "get_ticket"
    task = _draft_to_task("helpdesk", "helpdesk.t1", d)
    skipped = task.model_copy(update={"reference_calls": [act], "tool_chain": ["close_ticket"]})
    ok, no_look = await InProcessValidator().validate(helpdesk, [task, skipped])
    assert ok.passed, ok.error
    # closing without looking the ticket up fails the chain's own condition
    assert not no_look.passed and no_look.evaluation is not None
    assert [o.kind for o in no_look.evaluation.failures] == ["call_made"]


async def test_create_then_read_back(bundle_dirs: dict[str, Path]) -> None:
    from weft_tasks.atomic.synthesis import _draft_to_task

    from .conftest import InProcessValidator

    billing = load_bundle(bundle_dirs["billing"])
    d = draft_for_tool(billing, "create_invoice", 0, compound=True)
    assert d is not None and d.tool_chain == ["create_invoice", "get_invoice"]
    assert d.calls[1].arguments == {"invoice_id": "{{id}}"} and d.calls[0].bind == {"id": "id"}
    back = [c for c in d.checks if isinstance(c, ReturnContains)]
    assert back and back[0].tool == "get_invoice" and str(back[0].value).startswith("{{")
    assert d.intent.endswith("then read it back to confirm")
    (ev,) = await InProcessValidator().validate(
        billing, [_draft_to_task("billing", "billing.t1", d)]
    )
    assert ev.passed, ev.error
