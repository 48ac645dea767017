"""E2E validation through a real MegaMCP host on 127.0.0.1 (the production path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_core.models import AtomicTask, ReferenceCall, ReturnContains
from weft_tasks.atomic.bundle import load_bundle
from weft_tasks.atomic.megamcp import megamcp_client
from weft_tasks.atomic.synthesis import certify
from weft_tasks.atomic.validation import MegaMCPValidator

pytestmark = pytest.mark.integration


async def test_certify_through_megamcp_sessions(
    bundle_dirs: dict[str, Path], tmp_path: Path
) -> None:
    async with megamcp_client(data_dir=tmp_path / "mm") as client:
        validator = MegaMCPValidator(client, concurrency=4)
        for name in ("crm", "notes"):
            bundle = load_bundle(bundle_dirs[name])
            state = await certify(bundle, validator, budget=2)
            assert state.coverage == pytest.approx(1.0), [f.diagnostic for f in state.failures]
            assert all(
                t.evidence and t.evidence.evaluation and t.evidence.evaluation.passed
                for t in state.retained
            )
        bundle = load_bundle(bundle_dirs["crm"])
        # a wrong completion condition and a wrong argument are caught by real execution
        wrong_check = AtomicTask(
            id="w1",
            mcp="crm",
            intent="x",
            tool_chain=["find_customer"],
            reference_calls=[
                ReferenceCall(tool="find_customer", arguments={"email": "ada@example.com"})
            ],
            checks=[ReturnContains(tool="find_customer", value="Paris")],
        )
        wrong_arg = wrong_check.model_copy(
            update={
                "id": "w2",
                "reference_calls": [
                    ReferenceCall(tool="find_customer", arguments={"email": "nobody@x"})
                ],
            }
        )
        ev1, ev2 = await validator.validate(bundle, [wrong_check, wrong_arg])
        assert not ev1.passed and ev1.evaluation is not None and ev1.evaluation.failures
        assert not ev2.passed and "nobody@x" in (ev2.error or "")
