"""End to end on a real MegaMCP host (127.0.0.1) and a bundle weft-envsynth synthesizes: the
reference replay reads state through the verifier channel, a backend that ignores an argument is
attributed to the environment from that evidence, and the envsynth revision path repairs only
that route, revalidates it and registers a new version."""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_core.models import (
    AtomicTask,
    ContractSet,
    FieldEquals,
    ReferenceCall,
    TaskGraph,
    TaskInput,
    TaskNode,
)
from weft_evolve.attribution.rules import diagnose_node
from weft_evolve.evidence import StateProbe, replay_reference
from weft_evolve.models import Component, Fix
from weft_evolve.revision import revise_environment, route_sources

REPO = Path(__file__).resolve().parents[4]
pytestmark = pytest.mark.slow


def _graph() -> TaskGraph:
    inputs = [
        TaskInput(
            name="customer_id",
            description="customer.customer_id of customer Alice",
            value="CUS-0001",
        ),
        TaskInput(name="phone", description="new customer.phone", value="+1-555-9999"),
    ]
    task = AtomicTask(
        id="crm.update_phone",
        mcp="crm",
        intent="Change Alice's phone number to +1-555-9999",
        inputs=inputs,
        tool_chain=["update_customer"],
        reference_calls=[
            ReferenceCall(
                tool="update_customer",
                arguments={"customer_id": "{{customer_id}}", "phone": "{{phone}}"},
            )
        ],
        writes=True,
    )
    check = FieldEquals(
        id="n1.c1",
        mcp="crm",
        table="customer",
        where={"customer_id": "CUS-0001"},
        field="phone",
        value="+1-555-9999",
    )
    node = TaskNode(id="n1", task=task, intent=task.intent, inputs=inputs, checks=[check])
    return TaskGraph(id="t-crm", objective="update", nodes=[node], order=["n1"]).sealed()


def _raising(source: str, tool: str) -> str:
    import ast

    fn = next(
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.FunctionDef) and n.name == f"tool_{tool}"
    )
    lines = source.splitlines()
    first = lines[fn.body[0].lineno - 1]
    indent = first[: len(first) - len(first.lstrip())]
    lines.insert(fn.body[0].lineno - 1, f'{indent}raise RuntimeError("cache backend unavailable")')
    return "\n".join(lines) + "\n"


async def test_replay_attribution_and_environment_revision(tmp_path):
    from weft_envsynth.pipeline import synthesize_file
    from weft_megamcp import MegaMCPClient, MegaMCPHost, MegaMCPSettings

    res = synthesize_file(str(REPO / "examples" / "mcps" / "crm.json"), tmp_path / "envs", rounds=1)
    bundle = Path(res.bundle or "")
    clean = (bundle / "server.py").read_text(encoding="utf-8")
    graph = _graph()
    async with (
        MegaMCPHost.running(MegaMCPSettings(data_dir=tmp_path / "mm")) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        await client.register(bundle)
        probe = StateProbe(client)
        contracts = {"crm": ContractSet.load(bundle / "contracts.json")}
        ok = await replay_reference(client, graph, probe)
        assert ok.nodes["n1"].outcome is not None and ok.nodes["n1"].outcome.passed
        assert diagnose_node(graph, ok, "n1", contracts).valid

        broken = clean.replace("row.phone = body.phone", "pass  # phone dropped", 1)
        # and a route the task never calls raises (a defect off the reference path)
        off_path = sorted(t for t in route_sources(clean) if t != "update_customer")[0]
        broken = _raising(broken, off_path)
        assert broken != clean
        (bundle / "server.py").write_text(broken, encoding="utf-8")
        await client.register(bundle)
        bad = await replay_reference(client, graph, probe)
        d = diagnose_node(graph, bad, "n1", contracts)
        assert d.component is Component.ENVIRONMENT and d.rule == "write_mismatch"
        assert (d.target.tool, d.target.fix) == ("update_customer", Fix.REVISE_ROUTE)

        rev, path = revise_environment(bundle, ["update_customer"], evidence=[d.evidence[0].detail])
        assert rev.revalidated and path is not None, rev.error
        # revalidation of the bundle names the off-path route as failing, not as a regression
        assert rev.failing_elsewhere == [off_path]
        fixed = route_sources((path / "server.py").read_text(encoding="utf-8"))
        assert fixed["update_customer"] == route_sources(clean)["update_customer"]
        assert all(fixed[t] == route_sources(broken)[t] for t in fixed if t != "update_customer")
        assert (path.parent / ".history").is_dir()
        await client.register(path)
        again = await replay_reference(client, graph, probe)
        assert again.nodes["n1"].outcome is not None and again.nodes["n1"].outcome.passed

        # A model revising the route gets it wrong (the phone written into the email field): the
        # plan is well formed, so it is spliced in, but revalidation catches it and nothing is
        # replaced (the bundle keeps its version; the revision is recorded as failed).
        from weft_core.testing import ScriptedChatModel

        wrong_plan = {
            "routes": [
                {
                    "tool": "update_customer",
                    "operation": "update",
                    "entity": "customer",
                    "key_argument": "customer_id",
                    "assignments": {"email": "phone"},
                }
            ]
        }
        (path / "server.py").write_text(broken, encoding="utf-8")
        rev2, path2 = revise_environment(
            path,
            ["update_customer"],
            evidence=[d.evidence[0].detail],
            llm=ScriptedChatModel([wrong_plan]),
        )
        assert path2 is None and not rev2.revalidated
        assert rev2.error == "revalidation failed for ['update_customer']"
        # the failing construction checks are named, with what the DB held
        assert any("DB has" in line for line in rev2.revalidation), rev2.revalidation
        assert (path / "server.py").read_text(encoding="utf-8") == broken
