"""The two JSON files other packages write into a run folder so the report can draw them.

`RUN_DIR/train/curves.json` (weft-train) — one or more training runs, each a list of points:

    {"format": "weft.train.curves/1",
     "runs": [{"name": "grpo-qwen3-8b", "model": "Qwen/Qwen3-8B", "reference": false,
               "points": [{"step": 0, "reward": 0.21, "entropy": 1.9}, ...]}]}

Every numeric key of a point other than `step` is a metric; each metric gets its own panel with
one line per run.

`RUN_DIR/evolve/rounds.json` (weft-evolve) — one entry per evolution round, round 0 being the
initial construction:

    {"format": "weft.evolve.rounds/1",
     "rounds": [{"round": 0, "tool_error_rate": 0.0176, "reference": false,
                 "scores": {"checkpoint_pass_rate": 0.61, "task_success_rate": 0.40},
                 "revisions": {"environment": 3, "task": 5, "verifier": 1}}, ...]}

`reference: true` marks figures from answer-key policies (the reference-chain teacher, ReAct on the
reference policy); the report draws them apart and labels them, never as results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CURVES_PATH = Path("train") / "curves.json"
ROUNDS_PATH = Path("evolve") / "rounds.json"


class _Format(BaseModel):
    # Writers may add fields the report does not draw yet; they must not break it.
    model_config = ConfigDict(extra="ignore")


class CurvePoint(BaseModel):
    model_config = ConfigDict(extra="allow")

    step: int = Field(description="Optimizer step (or any increasing x value).")

    def metrics(self) -> dict[str, float]:
        """The numeric values of the point other than `step`."""
        extra = self.model_extra or {}
        return {
            k: float(v)
            for k, v in extra.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }


class CurveRun(_Format):
    name: str = Field(description="Name of the training run (a legend entry).")
    model: str = Field(default="", description="Policy model trained.")
    reference: bool = Field(
        default=False, description="True when the run trains on or is an answer-key policy."
    )
    points: list[CurvePoint] = Field(default_factory=list)


class TrainingCurves(_Format):
    format: Literal["weft.train.curves/1"] = "weft.train.curves/1"
    runs: list[CurveRun] = Field(default_factory=list)

    def metric_names(self) -> list[str]:
        names: dict[str, None] = {}
        for run in self.runs:
            for p in run.points:
                names.update(dict.fromkeys(p.metrics()))
        return list(names)


class EvolutionRound(_Format):
    round: int = Field(description="0 = initial construction, then one per evolution round.")
    tool_error_rate: float | None = Field(
        default=None, description="Tool-error rate of the round's selected trajectories."
    )
    scores: dict[str, float] = Field(
        default_factory=dict, description="Score name -> value (a pass rate or benchmark score)."
    )
    revisions: dict[str, int] = Field(
        default_factory=dict, description="Component revised -> how many revisions this round."
    )
    reference: bool = Field(default=False, description="True when measured on answer-key runs.")


class EvolutionRounds(_Format):
    format: Literal["weft.evolve.rounds/1"] = "weft.evolve.rounds/1"
    rounds: list[EvolutionRound] = Field(default_factory=list)


M = TypeVar("M", bound=BaseModel)


def read_format(path: Path, model: type[M]) -> tuple[M | None, str | None]:
    """(the parsed file, None); (None, None) when the file is absent; (None, why) when it is
    unreadable — a bad file costs its figure, never the report."""
    if not path.exists():
        return None, None
    try:
        return model.model_validate_json(path.read_bytes()), None
    except (OSError, ValidationError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, f"{path}: not a {model.__name__} file ({first})"
