"""Round trips of every artifact format: JSON form, content hash, version, schema version, files."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from weft_core.exceptions import ArtifactError, UserError
from weft_core.models import (
    AllowedChange,
    ArgMapping,
    Artifact,
    AtomicTask,
    CallMade,
    ChatMessage,
    Check,
    CheckOutcome,
    CheckSet,
    ContractSet,
    DiffContains,
    Disclosure,
    EdgeKind,
    Entity,
    EntityBinding,
    EntityField,
    EntityModel,
    EnvBundleManifest,
    ErrorCase,
    ErrorKind,
    EvaluationResult,
    FieldEquals,
    LedgerEntry,
    MCPSpec,
    NoOtherChanges,
    ReferenceCall,
    Relation,
    ReturnContains,
    RLTaskRow,
    RowAbsent,
    RowCount,
    RowExists,
    SFTRow,
    SnapshotRef,
    StateKind,
    StateTransition,
    TaskEdge,
    TaskGraph,
    TaskInput,
    TaskNode,
    TaskView,
    ToolCall,
    ToolCallFunction,
    ToolCertification,
    ToolContract,
    ToolSpec,
    Trace,
    TurnSegment,
    ValidationEvidence,
    ViewMode,
    WorkspaceFile,
)

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


# -- realistic samples of every format -------------------------------------------------------


def sample_spec() -> MCPSpec:
    return MCPSpec(
        name="Acme Helpdesk",
        domain="Customer Support",
        description="Tickets and customers of a support desk.",
        tools=[
            ToolSpec(
                name="create_ticket",
                description="Open a ticket for a customer.",
                input_schema={
                    "type": "object",
                    "properties": {
                        "customer_id": {"type": "string"},
                        "subject": {"type": "string", "minLength": 1},
                        "priority": {"type": "string", "enum": ["low", "normal", "high"]},
                    },
                    "required": ["customer_id", "subject"],
                },
                output_schema={"type": "object", "properties": {"ticket_id": {"type": "string"}}},
                annotations={"destructiveHint": False},
            ),
            ToolSpec(
                name="search_tickets",
                description="Find tickets by text.",
                input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
                original_name="search-tickets",
            ),
        ],
        requirements=["A closed ticket cannot be reassigned."],
        source="specs/helpdesk.json",
    )


def all_checks() -> list[Any]:
    return [
        RowExists(id="c1", table="ticket", where={"subject": {"$binding": "ticket.subject"}}),
        RowAbsent(id="c2", table="ticket", where={"status": "deleted"}, db="initial"),
        FieldEquals(
            id="c3", table="ticket", where={"id": "T-1"}, field="priority", value="high", op="eq"
        ),
        RowCount(id="c4", table="ticket", where={"customer_id": "C-1"}, op="ge", value=2),
        DiffContains(
            id="c5", table="ticket", change="update", where={"id": "T-1"}, fields=["status"]
        ),
        NoOtherChanges(
            id="c6",
            allowed=[AllowedChange(table="ticket", change="update")],
            ignore_fields=["updated_at"],
        ),
        ReturnContains(id="c7", tool="search_tickets", value={"id": "T-1"}),
        CallMade(id="c8", tool="create_ticket", arguments={"customer_id": "C-1"}, max_count=1),
        WorkspaceFile(id="c9", path="reports/weekly.md", contains="T-1", mcp="files"),
    ]


def sample_evaluation() -> EvaluationResult:
    return EvaluationResult(
        outcomes=[
            CheckOutcome(check_id="c1", kind="row_exists", passed=True, reason="1 row matched"),
            CheckOutcome(
                check_id="c3", kind="field_equals", passed=False, reason="priority is 'low'"
            ),
        ]
    )


def sample_manifest() -> EnvBundleManifest:
    return EnvBundleManifest(
        name="acme_helpdesk",
        domain="Customer Support",
        spec_hash="sha256:" + "a" * 64,
        schema_revision="0001_initial",
        tools=[
            ToolCertification(
                name="create_ticket",
                state_kind=StateKind.DATABASE,
                certified=True,
                checks_run=4,
                checks_passed=4,
            ),
            ToolCertification(
                name="search_tickets",
                state_kind=StateKind.DATABASE,
                certified=False,
                reason="returns closed tickets",
                checks_run=3,
                checks_passed=2,
            ),
        ],
        files={"server.py": "b" * 64, "seed.sqlite": "c" * 64},
        rounds_used=2,
        created_at=T0,
    )


def sample_entities() -> EntityModel:
    return EntityModel(
        mcp="acme_helpdesk",
        entities=[
            Entity(
                name="customer",
                key="id",
                fields=[
                    EntityField(name="id", primary_key=True),
                    EntityField(name="email", unique=True),
                ],
            ),
            Entity(
                name="ticket",
                key="id",
                fields=[
                    EntityField(name="id", primary_key=True),
                    EntityField(name="customer_id", foreign_key="customer.id"),
                    EntityField(name="status", enum=["open", "closed"]),
                    EntityField(name="opened", type="datetime"),
                ],
            ),
        ],
        relations=[Relation(source="ticket.customer_id", target="customer.id")],
    )


def sample_contracts() -> ContractSet:
    return ContractSet(
        mcp="acme_helpdesk",
        contracts=[
            ToolContract(
                tool="create_ticket",
                state_kind=StateKind.DATABASE,
                operation="create",
                entity="ticket",
                mappings=[
                    ArgMapping(
                        argument="customer_id", entity="customer", field="id", role="reference"
                    )
                ],
                reads=["customer"],
                writes=["ticket"],
                returns={"type": "object"},
                preconditions=["customer exists"],
                errors=[ErrorCase(condition="customer_id not found", message="Customer not found")],
                transitions=[StateTransition(entity="ticket", field="status", to_value="open")],
            )
        ],
    )


def sample_atomic() -> AtomicTask:
    return AtomicTask(
        id="acme_helpdesk.escalate",
        mcp="acme_helpdesk",
        intent="Escalate the customer's open ticket to high priority.",
        inputs=[
            TaskInput(name="customer_email", schema={"type": "string"}, value="ana@example.com")
        ],
        tool_chain=["search_tickets", "create_ticket"],
        reference_calls=[
            ReferenceCall(
                tool="search_tickets",
                arguments={"q": "{{customer_email}}"},
                bind={"ticket_id": "0.id"},
            ),
            ReferenceCall(tool="create_ticket", arguments={"customer_id": "C-1", "subject": "x"}),
        ],
        checks=all_checks()[:3],
        outputs={"ticket_id": "The escalated ticket."},
        entities=["ticket"],
        writes=True,
        seed_rows={"ticket": [{"id": "T-1", "status": "open"}]},
        e2e_test="def test(): ...",
        evidence=ValidationEvidence(
            passed=True,
            evaluation=sample_evaluation(),
            initial_state_hash="sha256:0",
            ledger_size=2,
        ),
    )


def sample_graph() -> TaskGraph:
    atomic = sample_atomic()
    return TaskGraph(
        id="g-1",
        objective="Resolve a VIP complaint across helpdesk and CRM.",
        profile="Moderate",
        nodes=[
            TaskNode(
                id="n1",
                task=atomic,
                intent=atomic.intent,
                outcomes={"ticket_id": "id"},
                checks=all_checks()[:1],
            ),
            TaskNode(
                id="n2",
                task=atomic,
                intent="Note it in the CRM.",
                inputs=[
                    TaskInput(
                        name="ticket_id", source="upstream", from_node="n1", from_output="ticket_id"
                    )
                ],
            ),
        ],
        edges=[TaskEdge(source="n1", target="n2", kind=EdgeKind.INFORMATION, fields=["ticket_id"])],
        bindings=[
            EntityBinding(
                name="customer",
                entity="customer",
                value={"email": "ana@example.com"},
                refs={"acme_helpdesk": "customer"},
            )
        ],
        order=["n1", "n2"],
        initial_snapshots={
            "acme_helpdesk": SnapshotRef(
                mcp="acme_helpdesk", uri="sha256:" + "d" * 64, sha256="d" * 64
            )
        },
        final_checks=all_checks()[5:],
        views=[
            TaskView(mode=ViewMode.AGENTIC, brief="Escalate and note."),
            TaskView(
                mode=ViewMode.SIMUSER,
                disclosure=Disclosure.VAGUE,
                persona="busy manager",
                requests=["fix it"],
            ),
        ],
    )


def sample_ledger_entry(seq: int = 0) -> LedgerEntry:
    return LedgerEntry(
        seq=seq,
        session_id="s-1",
        group_id="g-1",
        mcp="acme_helpdesk",
        mcp_version=3,
        tool="create_ticket",
        arguments={"customer_id": "C-1", "subject": "Broken"},
        result={"ticket_id": "T-9"},
        started_at=T0,
        duration_ms=12.5,
        mutated=True,
        state_version=4,
        call_id="call_1",
    )


def sample_messages() -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content="You are a support agent."),
        ChatMessage(role="user", content="Escalate Ana's ticket."),
        ChatMessage(
            role="assistant",
            tool_calls=[
                ToolCall(
                    id="call_1",
                    function=ToolCallFunction(
                        name="create_ticket", arguments='{"customer_id": "C-1"}'
                    ),
                )
            ],
            token_ids=[1, 2, 3],
            logprobs=[-0.1, -0.2, -0.05],
        ),
        ChatMessage(
            role="tool", tool_call_id="call_1", name="create_ticket", content='{"ticket_id": "T-9"}'
        ),
        ChatMessage(role="assistant", content="Done: T-9."),
    ]


def sample_trace() -> Trace:
    return Trace(
        id="t-1",
        task_id="g-1",
        view="agentic",
        harness="react",
        model="openai:qwen3-8b",
        tools=[
            {
                "type": "function",
                "function": {"name": "create_ticket", "parameters": {"type": "object"}},
            }
        ],
        messages=sample_messages(),
        ledger=[
            sample_ledger_entry(0),
            sample_ledger_entry(1).model_copy(
                update={"is_error": True, "error_kind": ErrorKind.TIMEOUT}
            ),
        ],
        segments=[
            TurnSegment(
                node_id="n1",
                start=1,
                end=5,
                ledger_seqs={"acme_helpdesk": [0, 1]},
                outcome=sample_evaluation(),
                attempts=2,
            )
        ],
        final=sample_evaluation(),
        infrastructure_retries=1,
    )


def sample_checkset() -> CheckSet:
    return CheckSet(name="verifier:g-1", checks=all_checks(), bindings={"ticket.subject": "Broken"})


# (factory, a change to its content that must change the hash)
ARTIFACTS: dict[str, tuple[Callable[[], Artifact], Callable[[Any], dict[str, Any]]]] = {
    "MCPSpec": (sample_spec, lambda a: {"tools": [*a.tools[:1]]}),
    "EnvBundleManifest": (sample_manifest, lambda a: {"schema_revision": "0002_add_sla"}),
    "EntityModel": (sample_entities, lambda a: {"relations": []}),
    "ContractSet": (sample_contracts, lambda a: {"mcp": "other"}),
    "AtomicTask": (sample_atomic, lambda a: {"intent": "Close the ticket."}),
    "TaskGraph": (sample_graph, lambda a: {"order": ["n2", "n1"]}),
    "CheckSet": (sample_checkset, lambda a: {"bindings": {"ticket.subject": "Other"}}),
    "Trace": (sample_trace, lambda a: {"messages": a.messages[:-1]}),
}
NAMES = sorted(ARTIFACTS)


@pytest.fixture(params=NAMES)
def artifact(request: pytest.FixtureRequest) -> Artifact:
    return ARTIFACTS[request.param][0]()


# -- JSON form ------------------------------------------------------------------------------


def test_json_round_trip(artifact: Artifact) -> None:
    text = artifact.to_json()
    back = type(artifact).from_json(text)
    assert back == artifact.sealed()
    assert back.to_json() == text  # serialization is stable, byte for byte
    assert json.loads(text)["content_hash"] == artifact.compute_hash()


def test_compact_and_python_round_trip(artifact: Artifact) -> None:
    compact = artifact.to_json(indent=None)
    assert "\n" not in compact
    assert type(artifact).from_json(compact.encode()) == artifact.sealed()
    assert type(artifact).model_validate(artifact.model_dump()) == artifact


def test_unknown_fields_are_errors_not_dropped(artifact: Artifact) -> None:
    data = json.loads(artifact.to_json())
    data["surprise"] = 1
    data["content_hash"] = None
    with pytest.raises(ArtifactError, match="surprise"):
        type(artifact).from_json(json.dumps(data))


# -- content hash and version ---------------------------------------------------------------


def test_hash_is_stable(artifact: Artifact) -> None:
    factory = ARTIFACTS[type(artifact).__name__][0]
    assert artifact.compute_hash() == factory().compute_hash()
    assert artifact.compute_hash().startswith("sha256:") and len(artifact.compute_hash()) == 71
    # key order of the input does not matter
    data = json.loads(artifact.to_json())
    shuffled = dict(reversed(list(data.items())))
    assert type(artifact).model_validate(shuffled).compute_hash() == artifact.compute_hash()


def test_hash_is_sensitive_to_content(artifact: Artifact) -> None:
    change = ARTIFACTS[type(artifact).__name__][1](artifact)
    changed = artifact.model_copy(update=change)
    assert changed.compute_hash() != artifact.compute_hash()


def test_hash_ignores_version_and_hash_fields(artifact: Artifact) -> None:
    base = artifact.compute_hash()
    assert artifact.model_copy(update={"version": 7}).compute_hash() == base
    assert artifact.sealed().compute_hash() == base
    assert artifact.model_copy(update={"content_hash": "sha256:x"}).compute_hash() == base


def test_manifest_hash_ignores_created_at() -> None:
    m = sample_manifest()
    assert (
        m.model_copy(update={"created_at": datetime(2030, 1, 1, tzinfo=UTC)}).compute_hash()
        == m.compute_hash()
    )


def test_revised_bumps_version_and_rehashes(artifact: Artifact) -> None:
    sealed = artifact.sealed()
    change = ARTIFACTS[type(artifact).__name__][1](artifact)
    rev = sealed.revised(
        **{
            k: (
                v
                if not isinstance(v, list)
                else [x.model_dump() if hasattr(x, "model_dump") else x for x in v]
            )
            for k, v in change.items()
        }
    )
    assert rev.version == sealed.version + 1
    assert rev.content_hash == rev.compute_hash() != sealed.content_hash
    assert (
        sealed.version == 1 and sealed.content_hash == artifact.compute_hash()
    )  # original untouched
    again = rev.revised()
    assert (
        again.version == 3 and again.content_hash == rev.content_hash
    )  # same content, new revision


def test_revision_does_not_overwrite_earlier_file(tmp_path: Path) -> None:
    spec = sample_spec().sealed()
    v1 = spec.save(tmp_path / f"spec.v{spec.version}.json")
    rev = spec.revised(description="Changed.")
    v2 = rev.save(tmp_path / f"spec.v{rev.version}.json")
    assert MCPSpec.load(v1) == spec and MCPSpec.load(v2) == rev


# -- files ----------------------------------------------------------------------------------


def test_save_load_round_trip(artifact: Artifact, tmp_path: Path) -> None:
    path = artifact.save(tmp_path / "nested" / "a.json")
    assert type(artifact).load(path) == artifact.sealed()
    assert sorted(p.name for p in path.parent.iterdir()) == ["a.json"]  # no temp files left


def test_save_overwrites_atomically(tmp_path: Path) -> None:
    path = sample_spec().save(tmp_path / "spec.json")
    rev = sample_spec().revised(domain="CRM")
    rev.save(path)
    assert MCPSpec.load(path) == rev


def test_failed_write_keeps_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sample_spec().save(tmp_path / "spec.json")
    before = path.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        sample_spec().revised(domain="CRM").save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["spec.json"]


def test_unsealed_file_loads(tmp_path: Path) -> None:
    data = sample_spec().model_dump(mode="json")
    assert data["content_hash"] is None
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(data))
    assert MCPSpec.load(path).tools[1].original_name == "search-tickets"


def test_tampered_file_is_detected(artifact: Artifact, tmp_path: Path) -> None:
    path = artifact.save(tmp_path / "a.json")
    data = json.loads(path.read_text())
    data["version"] = 9  # not content: still fine
    path.write_text(json.dumps(data))
    type(artifact).load(path)
    change = ARTIFACTS[type(artifact).__name__][1](artifact)
    edited = artifact.model_copy(update=change).model_dump(mode="json")
    edited["content_hash"] = data["content_hash"]
    path.write_text(json.dumps(edited))
    with pytest.raises(ArtifactError, match="does not match its content_hash") as info:
        type(artifact).load(path)
    assert str(path) in str(info.value)


def test_truncated_file_is_detected(tmp_path: Path) -> None:
    path = sample_trace().save(tmp_path / "trace.json")
    path.write_text(path.read_text()[: len(path.read_text()) // 2])
    with pytest.raises(ArtifactError) as info:
        Trace.load(path)
    assert str(path) in str(info.value) and "not a valid Trace" in str(info.value)


def test_newer_schema_version_is_refused_clearly(artifact: Artifact, tmp_path: Path) -> None:
    cls = type(artifact)
    data = json.loads(artifact.to_json())
    data["schema_version"] = cls.SCHEMA_VERSION + 1
    path = tmp_path / "future.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ArtifactError) as info:
        cls.load(path)
    msg = str(info.value)
    assert str(path) in msg
    assert f"schema_version {cls.SCHEMA_VERSION + 1} is newer" in msg
    assert "upgrade weft-core" in msg
    # the current version is accepted
    data["schema_version"] = cls.SCHEMA_VERSION
    path.write_text(json.dumps(data))
    cls.load(path)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["tools"][1].update(name="bad name!"), "tools.1"),
        (lambda d: d["tools"][0].update(input_schema={"type": "string"}), "tools.0"),
        (lambda d: d.update(tools="create_ticket"), "tools"),
        (lambda d: d.pop("name"), "name"),
        (lambda d: d.update(version=0), "version"),
    ],
)
def test_malformed_spec_names_file_and_field(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], Any], field: str
) -> None:
    data = sample_spec().model_dump(mode="json")
    mutate(data)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ArtifactError) as info:
        MCPSpec.load(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: not a valid MCPSpec: {field}")
    assert isinstance(info.value, UserError)


def test_malformed_nested_check_names_field(tmp_path: Path) -> None:
    data = json.loads(sample_graph().to_json())
    data["content_hash"] = None
    data["final_checks"][0]["kind"] = "row_teleported"
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ArtifactError, match=r"final_checks\.0") as info:
        TaskGraph.load(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '{"name": 1}'])
def test_broken_json_is_an_artifact_error(text: str) -> None:
    with pytest.raises(ArtifactError, match=r"^task\.json: not a valid AtomicTask"):
        AtomicTask.from_json(text, source="task.json")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="cannot read"):
        MCPSpec.load(tmp_path / "nope.json")


# -- model-specific invariants ------------------------------------------------------------


def test_spec_invariants() -> None:
    with pytest.raises(ValidationError, match="duplicate tool name"):
        MCPSpec(name="s", tools=[ToolSpec(name="a"), ToolSpec(name="a")])
    spec = sample_spec()
    assert spec.slug == "acme_helpdesk"
    assert spec.tool("create_ticket").required == ["customer_id", "subject"]
    with pytest.raises(KeyError):
        spec.tool("nope")


def test_atomic_task_chain_must_match_calls() -> None:
    data = sample_atomic().model_dump()
    data["tool_chain"] = ["create_ticket"]
    with pytest.raises(ValidationError, match="tool_chain does not match"):
        AtomicTask.model_validate(data)


def test_task_input_schema_alias_round_trips() -> None:
    task = sample_atomic()
    assert task.inputs[0].schema_ == {"type": "string"}
    assert AtomicTask.from_json(task.to_json()).inputs[0].schema_ == {"type": "string"}
    by_alias = TaskInput.model_validate({"name": "x", "schema": {"type": "integer"}})
    assert by_alias.schema_ == {"type": "integer"}


def test_graph_helpers_survive_round_trip() -> None:
    g = TaskGraph.from_json(sample_graph().to_json())
    assert g.mcps == ["acme_helpdesk"]
    assert g.binding_values() == {"customer.email": "ana@example.com"}
    assert g.node("n2").inputs[0].from_node == "n1"


def test_trace_reward_after_round_trip() -> None:
    t = Trace.from_json(sample_trace().to_json())
    assert t.reward == 0.0 and t.final is not None and not t.final.passed
    assert t.messages[2].tool_calls is not None and t.messages[2].logprobs == [-0.1, -0.2, -0.05]
    assert t.ledger[1].error_kind is ErrorKind.TIMEOUT and t.ledger[1].error_kind.is_infrastructure


def test_manifest_certification_after_round_trip() -> None:
    m = EnvBundleManifest.from_json(sample_manifest().to_json())
    assert not m.certified and m.certified_tools == ["create_ticket"]
    assert m.created_at == T0


# -- checks (discriminated union) ------------------------------------------------------------

CHECK_ADAPTER: TypeAdapter[Any] = TypeAdapter(Check)


@pytest.mark.parametrize("check", all_checks(), ids=lambda c: c.kind)
def test_each_check_kind_round_trips(check: Any) -> None:
    text = CHECK_ADAPTER.dump_json(check)
    back = CHECK_ADAPTER.validate_json(text)
    assert type(back) is type(check) and back == check


def test_unknown_check_kind_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError, match="row_teleported"):
        CHECK_ADAPTER.validate_python({"kind": "row_teleported", "table": "t"})
    with pytest.raises(ValidationError, match="table"):
        CHECK_ADAPTER.validate_python({"kind": "row_exists"})


# -- records: ledger and dataset rows ------------------------------------------------------


def test_ledger_entry_round_trip() -> None:
    entry = sample_ledger_entry()
    back = LedgerEntry.model_validate_json(entry.model_dump_json())
    assert back == entry and back.started_at == T0
    with pytest.raises(ValidationError, match="error_kind"):
        LedgerEntry.model_validate({**entry.model_dump(), "error_kind": "cosmic_ray"})


def test_sft_row_jsonl_round_trip(tmp_path: Path) -> None:
    rows = [
        SFTRow(
            messages=sample_messages(), tools=sample_trace().tools, task_id="g-1", trace_id="t-1"
        ),
        SFTRow(messages=sample_messages()[:2]),
    ]
    path = tmp_path / "sft.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in rows))
    back = [SFTRow.model_validate_json(line) for line in path.read_text().splitlines()]
    assert back == rows
    # what OpenRLHF's SFT loader reads: plain OpenAI messages and tools
    first = json.loads(path.read_text().splitlines()[0])
    assert first["messages"][2]["tool_calls"][0]["function"]["name"] == "create_ticket"
    assert first["tools"][0]["type"] == "function"


def test_rl_task_row_round_trip() -> None:
    row = RLTaskRow(
        task_id="g-1",
        prompt=sample_messages()[:2],
        tools=sample_trace().tools,
        task_uri="tasks/g-1.json",
        view="simuser",
        metadata={"profile": "Moderate"},
    )
    assert RLTaskRow.model_validate_json(row.model_dump_json()) == row
    with pytest.raises(ValidationError, match="task_uri"):
        RLTaskRow.model_validate({"task_id": "x", "prompt": []})


@pytest.mark.parametrize("row_cls", [SFTRow, RLTaskRow])
def test_dataset_rows_hash_and_refuse_newer_schema(row_cls: type[SFTRow] | type[RLTaskRow]) -> None:
    if row_cls is SFTRow:
        row: Any = SFTRow(messages=sample_messages(), task_id="g-1")
        change: dict[str, Any] = {"task_id": "g-2"}
    else:
        row = RLTaskRow(task_id="g-1", prompt=sample_messages()[:2], task_uri="s3://bucket/t.json")
        change = {"view": "simuser"}
    sealed = row.sealed()
    assert sealed.content_hash == row.compute_hash()
    back = row_cls.model_validate_json(sealed.model_dump_json())
    back.verify_hash()
    assert back == sealed
    assert sealed.model_copy(update=change).compute_hash() != sealed.content_hash
    with pytest.raises(ArtifactError, match="does not match its content_hash"):
        sealed.model_copy(update=change).verify_hash()
    data = json.loads(sealed.model_dump_json())
    data["schema_version"] = 2
    with pytest.raises(ValidationError, match=r"schema_version 2 is newer .* upgrade weft-core"):
        row_cls.model_validate(data)


def test_trace_hash_covers_content_not_the_clock():
    entry = LedgerEntry(seq=0, session_id="r-1/crm", mcp="crm", tool="get", duration_ms=3.0)
    trace = Trace(id="r-1", task_id="t", view="agentic/full", harness="teacher", ledger=[entry])
    later = entry.model_copy(
        update={"started_at": datetime(2020, 1, 1, tzinfo=UTC), "duration_ms": 90.0}
    )
    other = entry.model_copy(update={"arguments": {"id": 2}})
    assert trace.model_copy(update={"ledger": [later]}).compute_hash() == trace.compute_hash()
    assert trace.model_copy(update={"ledger": [other]}).compute_hash() != trace.compute_hash()


def test_graph_verifier_has_a_checkpoint_per_node_and_final() -> None:
    from weft_core.exceptions import CheckError
    from weft_core.models import FINAL_CHECKPOINT, Verifier

    g = sample_graph()
    v = g.verifier()
    assert set(v.checkpoints) == {n.id for n in g.nodes} | {FINAL_CHECKPOINT}
    assert v.checks_at(FINAL_CHECKPOINT) == g.final_checks
    assert v.checks_at("n1") == g.node("n1").checks
    assert v.bindings == {"customer": {"email": "ana@example.com"}}
    # Before grounding keeps final checks, `final` is every node's checks.
    every = [c for n in g.nodes for c in n.checks]
    assert g.model_copy(update={"final_checks": []}).verifier().checks_at("final") == every
    with pytest.raises(CheckError, match="no checkpoint 'n9'"):
        v.checks_at("n9")
    # Its JSON form is what MegaMCP stores; checks come back typed.
    back = Verifier.model_validate_json(v.model_dump_json())
    assert back == v
    pinned = v.pinned({"files": "files@2"})
    mcps = {c.mcp for cs in v.checkpoints.values() for c in cs if c.mcp}
    renamed = {c.mcp for cs in pinned.checkpoints.values() for c in cs if c.mcp}
    assert "files" in mcps and renamed == (mcps - {"files"}) | {"files@2"}


def test_schema_2_trace_without_state_diff_loads_with_its_hash() -> None:
    from weft_core.state import CheckpointDiff, SessionChanges, StateDiff, TableDiff

    old = sample_trace().model_copy(update={"schema_version": 2}).sealed()
    data = json.loads(old.model_dump_json())
    for seg in data["segments"]:
        del seg["state_diff"]  # as weft-core wrote schema-2 traces
    text = json.dumps(data)
    back = Trace.from_json(text)
    assert back.schema_version == 2 and back.segments[0].state_diff is None
    assert back.content_hash == old.content_hash == back.compute_hash()
    # A turn's diff is content: it round-trips and enters the hash.
    diff = CheckpointDiff(
        since="initial",
        mcps={
            "crm": SessionChanges(db=StateDiff(tables={"t": TableDiff(inserts={"1": {"id": 1}})}))
        },
        max_rows=100,
    )
    seg = back.segments[0].model_copy(update={"state_diff": diff})
    new = back.model_copy(update={"segments": [seg], "schema_version": 3}).sealed()
    again = Trace.from_json(new.to_json())
    assert again.segments[0].state_diff == diff
    assert new.content_hash != old.content_hash


def test_a_graph_names_the_state_its_groups_start_from() -> None:
    """What every group of a task is created from: a DB address per MCP (None: the seed) and,
    only for MCPs whose workspace was grounded, the workspace address."""
    graph = sample_graph()
    mcp = graph.mcps[0]
    assert graph.initial_dbs() == {mcp: "sha256:" + "d" * 64}
    assert graph.initial_workspaces() == {}
    ws = SnapshotRef(
        mcp=mcp, uri="sha256:" + "d" * 64, sha256="d" * 64, workspace_uri="sha256:" + "e" * 64
    )
    other = SnapshotRef(mcp="gone", uri="sha256:" + "f" * 64, sha256="f" * 64)
    graph = graph.model_copy(update={"initial_snapshots": {mcp: ws, "gone": other}})
    assert graph.initial_workspaces() == {mcp: "sha256:" + "e" * 64}  # only MCPs it uses
    assert graph.model_copy(update={"initial_snapshots": {}}).initial_dbs() == {mcp: None}


def test_entity_field_examples_keep_old_entity_files_and_hashes() -> None:
    from weft_core._hashing import content_hash

    # An entities.json written before `EntityField.examples` existed: no such key anywhere, and
    # sealed by the code of then (the hash of everything but the hash, version and time).
    raw = json.loads(sample_entities().model_dump_json())
    for e in raw["entities"]:
        for f in e["fields"]:
            f.pop("examples")
    raw.pop("content_hash")
    legacy = content_hash({k: v for k, v in raw.items() if k != "version"})
    text = json.dumps(raw | {"content_hash": legacy})
    # The hash holds as is, not only through the older-rule fallback of from_json.
    EntityModel.model_validate_json(text).verify_hash()
    assert EntityModel.from_json(text).content_hash == legacy
    # Examples are content: a model with them hashes differently and round-trips them typed.
    ent = sample_entities()
    ent.entities[1].fields[0].examples = ["TIC-0001", 7, 2.5, True]
    again = EntityModel.from_json(ent.to_json())
    assert again.entities[1].fields[0].examples == ["TIC-0001", 7, 2.5, True]
    assert again.content_hash != legacy
