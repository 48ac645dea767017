"""The whole graph: every example certifies with no model; checkpointing works."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from weft_core.models import EnvBundleManifest, MCPSpec
from weft_envsynth.graph import build_envsynth_graph
from weft_envsynth.state import EnvSynthState

EXAMPLE_NAMES = sorted(
    p.stem for p in (Path(__file__).resolve().parents[3] / "examples" / "mcps").glob("*.json")
)


def test_there_are_enough_examples_across_domains(examples_dir: Path) -> None:
    specs = [json.loads(p.read_text()) for p in examples_dir.glob("*.json")]
    assert len(specs) >= 8
    assert len({s["domain"] for s in specs}) >= 5
    for s in specs:
        assert 5 <= len(s["tools"]) <= 10, s["name"]

    # shared business entities: customer_id appears in several MCPs, employee_id too
    def mentions(key: str) -> int:
        return sum(any(key in t["input_schema"]["properties"] for t in s["tools"]) for s in specs)

    assert mentions("customer_id") >= 4 and mentions("employee_id") >= 3


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_example_certifies_without_a_model(name: str, tmp_path: Path, example) -> None:
    spec: MCPSpec = example(name)
    graph = build_envsynth_graph()
    final = EnvSynthState.model_validate(
        graph.invoke(EnvSynthState(spec=spec, out_dir=str(tmp_path)))
    )
    assert final.error is None and final.manifest is not None
    manifest = EnvBundleManifest.load(Path(final.bundle_path or "") / "manifest.json")
    assert manifest.certified, [t.reason for t in manifest.tools if not t.certified]
    bundle = Path(final.bundle_path or "")
    for f in (
        "manifest.json",
        "spec.json",
        "entities.json",
        "models.py",
        "migrations",
        "contracts.json",
        "server.py",
        "seed.sqlite",
        "validation.json",
    ):
        assert (bundle / f).exists(), f
    assert not list(tmp_path.glob(".work-*")), "the working folder must be gone"
    validation = json.loads((bundle / "validation.json").read_text())
    assert all(c["passed"] for c in validation["rounds"][-1]["checks"])
    tables = {
        r[0]
        for r in sqlite3.connect(bundle / "seed.sqlite").execute(
            "SELECT name FROM sqlite_master WHERE type='table'"
        )
    }
    assert "alembic_version" in tables


def test_graph_runs_under_a_checkpointer(tmp_path: Path, helpdesk_spec: MCPSpec) -> None:
    saver = InMemorySaver()
    graph = build_envsynth_graph(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "helpdesk-1"}}
    state = EnvSynthState(spec=helpdesk_spec, out_dir=str(tmp_path), rounds=1)
    out = graph.invoke(state, config=config)
    assert out["manifest"] is not None
    snap = graph.get_state(config)
    assert snap.next == ()
    history = list(graph.get_state_history(config))
    visited = [h.next[0] for h in history if h.next]
    for node in ("analyze", "schema", "contracts", "backend", "validate", "certify"):
        assert node in visited


def test_an_earlier_checkpoint_replays_to_the_same_bundle(
    tmp_path: Path, helpdesk_spec: MCPSpec
) -> None:
    """certify moved the working folder away; replaying from the checkpoint before validate
    rebuilds it from the state and certifies the same tools again (a new bundle version)."""
    saver = InMemorySaver()
    graph = build_envsynth_graph(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "replay-1"}}
    first = EnvSynthState.model_validate(
        graph.invoke(EnvSynthState(spec=helpdesk_spec, out_dir=str(tmp_path), rounds=1), config)
    )
    assert first.manifest is not None
    before_validate = next(h for h in graph.get_state_history(config) if h.next == ("validate",))
    assert not Path(before_validate.values["work_dir"]).exists()
    again = EnvSynthState.model_validate(graph.invoke(None, before_validate.config))
    assert again.manifest is not None and again.manifest.version == first.manifest.version + 1
    assert again.manifest.certified_tools == first.manifest.certified_tools
    assert again.notes == first.notes  # the same deterministic path; reducers append once
    assert not list(tmp_path.glob(".work-*"))


def test_spec_with_no_entity_is_rejected_with_a_reason(tmp_path: Path) -> None:
    from weft_core.models import ToolSpec

    spec = MCPSpec(name="empty", tools=[])
    graph = build_envsynth_graph()
    final = graph.invoke(EnvSynthState(spec=spec, out_dir=str(tmp_path)))
    assert final["error"] and "no tools" in final["error"]
    assert not any(tmp_path.iterdir())
    del ToolSpec
