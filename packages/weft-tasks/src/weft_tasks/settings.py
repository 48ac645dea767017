"""Settings of weft-tasks (environment prefix `WEFT_TASKS_`)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class TasksSettings(BaseSettings):
    """Knobs of atomic-task certification and composition; CLI options override them."""

    model_config = SettingsConfigDict(env_prefix="WEFT_TASKS_", extra="ignore")

    model: str | None = Field(
        default=None,
        description="Chat model for the LLM strategies ('openai:MODEL'); unset = programmatic strategies.",
    )
    megamcp_url: str | None = Field(
        default=None, description="URL of a running MegaMCP host; unset = start an embedded one."
    )
    megamcp_admin_token: str | None = Field(
        default=None, description="Admin token of the MegaMCP host named by megamcp_url."
    )
    host_workers: int | None = Field(
        default=None,
        ge=0,
        description="Worker processes of the embedded MegaMCP host: unset = one per core, up to "
        "4, on a machine with 2 or more cores (a prefork host in its own process), else 0; 0 or "
        "1 serve from this process; N > 1 start a prefork host with N workers in its own process "
        "(on 2 cores, 2 workers composed 1,000 tasks at 1,022 tasks/min against 499 for one "
        "process). Ignored with megamcp_url.",
    )
    host_groups_tmpfs: bool = Field(
        default=True,
        description="Keep the embedded MegaMCP host's live groups in a folder of /dev/shm (RAM) "
        "when it has at least 1 GiB free, removed at exit: construction-time groups live for one "
        "request, and on a journaling disk their folders, copies and deletes cost the host "
        "workers about half their system CPU. Ignored with megamcp_url.",
    )
    round_budget: int = Field(
        default=4,
        ge=1,
        description="Algorithm 1 budget R: synthesis rounds, the first validation round included.",
    )
    target_coverage: float = Field(
        default=1.0, gt=0.0, le=1.0, description="Algorithm 1 target tool coverage eta."
    )
    max_chain_length: int = Field(
        default=4, ge=1, description="Longest ordered tool chain an atomic task may have."
    )
    surplus: float = Field(
        default=0.5,
        ge=0.0,
        description="Capacity surplus rho: candidate atomic tasks drawn per needed node, as a fraction.",
    )
    coherence_attempts: int = Field(
        default=6,
        ge=1,
        description="Combinations tried per sample before resampling the profile's domains.",
    )
    max_attempts_factor: int = Field(
        default=20,
        ge=1,
        description="Give up on a profile after quota x this many rejected samples.",
    )
    distractors_per_table: int = Field(
        default=3, ge=0, description="Distractor rows added per table in grounding round (iii)."
    )
    concurrency: int = Field(
        default=8, ge=1, description="Validations / replays run at the same time against MegaMCP."
    )
    compose_wave: int = Field(
        default=16,
        ge=1,
        description=(
            "Samples drawn before their replays run (concurrently); fixed, so the composed "
            "corpus depends on the seed and never on concurrency or timing."
        ),
    )
    seed: int = Field(default=0, description="Random seed of sampling and synthesis.")
    evidence: Path | None = Field(
        default=None,
        description=(
            "Execution evidence file (weft_core ExecutionEvidence JSON, e.g. written by "
            "`weft-toolspace evidence`): tool-to-tool edges witnessed in real traces."
        ),
    )
    witnessed_ranking: bool = Field(
        default=False,
        description=(
            "Rank MCP combinations and atomic tool chains that the execution evidence witnessed "
            "higher when composing; off = the evidence-free ranking exactly. Needs `evidence`."
        ),
    )


def host_workers(settings: TasksSettings) -> int:
    """The embedded host's worker count `settings` asks for, with unset resolved per machine:
    composition keeps one core busy sampling and grounding while the host workers replay, so
    a single-process host leaves half of a 2-core machine idle."""
    if settings.host_workers is not None:
        return settings.host_workers
    cores = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )
    return min(cores, 4) if cores >= 2 else 0
