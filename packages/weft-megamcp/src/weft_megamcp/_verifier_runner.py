"""Child-process entry of a Python verifier: `python -m weft_megamcp._verifier_runner DIR`.

DIR holds `verifier.py` (defining `verify(evidence, checkpoint, bindings)`) and `input.json`.
`evidence` maps MCP id -> weft_core.checks.Evidence. `verify` returns an EvaluationResult, a list
of CheckOutcome-like dicts, or {"outcomes": [...], "reward": float}. Prints one JSON line.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from weft_core.checks import evidence_from_paths
from weft_core.models import CheckOutcome, EvaluationResult


def main(folder: str) -> int:
    d = Path(folder)
    data = json.loads((d / "input.json").read_text())
    spec = importlib.util.spec_from_file_location("weft_verifier", d / "verifier.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    evidence = {
        m: evidence_from_paths(
            initial_db=p["initial_db"],
            final_db=p["final_db"],
            ledger=p["ledger"] if p["ledger"] and Path(p["ledger"]).exists() else [],
            workspace_after=p["workspace"],
            mcp=m,
            frozen=data["frozen"],
        )
        for m, p in data["paths"].items()
    }
    result = module.verify(evidence, data["checkpoint"], data["bindings"])
    reward: float | None = None
    outcomes: list[CheckOutcome]
    if isinstance(result, EvaluationResult):
        outcomes, reward = result.outcomes, result.reward
    elif isinstance(result, dict):
        outcomes, reward = (
            [CheckOutcome.model_validate(o) for o in result["outcomes"]],
            result.get("reward"),
        )
    else:
        outcomes = [CheckOutcome.model_validate(o) for o in result]
    payload: dict[str, object] = {"outcomes": [o.model_dump() for o in outcomes]}
    if reward is not None:
        payload["reward"] = float(reward)
    print(json.dumps(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
