"""What to roll out: task x view (mode, disclosure) x harness x sample, each with a stable id."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from weft_core._hashing import content_hash
from weft_core.models import Disclosure, TaskGraph, ViewMode


class RolloutPlan(BaseModel):
    """One rollout to run. `rollout_id` is a content hash, so a rerun recognises finished work."""

    rollout_id: str
    task: TaskGraph
    mode: ViewMode = ViewMode.AGENTIC
    disclosure: Disclosure = Disclosure.FULL
    harness: str = "teacher"
    sample: int = Field(default=0, ge=0, description="Index among repeated rollouts of one cell.")

    @property
    def view_label(self) -> str:
        return f"{self.mode.value}/{self.disclosure.value}"


def rollout_id(
    task: TaskGraph, mode: ViewMode, disclosure: Disclosure, harness: str, model: str, sample: int
) -> str:
    digest = content_hash(
        {
            "task": task.content_hash or task.compute_hash(),
            "mode": mode.value,
            "disclosure": disclosure.value,
            "harness": harness,
            "model": model,
            "sample": sample,
        }
    )
    return f"r-{digest.removeprefix('sha256:')[:16]}"


def plan_rollouts(
    tasks: Iterable[TaskGraph],
    views: Sequence[tuple[ViewMode | str, Disclosure | str]],
    harnesses: Sequence[str],
    *,
    samples: int = 1,
    models: dict[str, str] | None = None,
    harness_modes: dict[str, frozenset[ViewMode]] | None = None,
) -> list[RolloutPlan]:
    """Every task in every view with every harness that supports the view's mode, `samples`
    times. `models` names the model behind each harness (part of the id); `harness_modes` drops
    combinations a harness does not support (e.g. agentic-only external harnesses)."""
    plans: list[RolloutPlan] = []
    for task in tasks:
        for raw_mode, raw_disclosure in views:
            mode, disclosure = ViewMode(raw_mode), Disclosure(raw_disclosure)
            for harness in harnesses:
                if harness_modes and mode not in harness_modes.get(harness, frozenset(ViewMode)):
                    continue
                model = (models or {}).get(harness, harness)
                for sample in range(samples):
                    plans.append(
                        RolloutPlan(
                            rollout_id=rollout_id(task, mode, disclosure, harness, model, sample),
                            task=task,
                            mode=mode,
                            disclosure=disclosure,
                            harness=harness,
                            sample=sample,
                        )
                    )
    return plans
