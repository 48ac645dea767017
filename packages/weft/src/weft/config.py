"""The pipeline config: one TOML file (or the built-in demo) -> `PipelineConfig`.

Relative paths in the file are relative to the file's folder. Every section is optional.

    [pipeline]
    specs = ["mcps/*.json"]     # spec files or globs (any format weft_core.loaders reads)
    out = "../.weft/run"        # output folder (stages, traces, summary)
    model = ""                  # "" = programmatic strategies; "openai:gpt-4o-mini", "vllm:MODEL@URL"
    seed = 0

    [envsynth]  rounds = 3, jobs = 1
    [tasks]     budget = 3, n_tasks = 6, profiles = ["Simple", "Standard"], profiles_file = "",
                evidence = "", witnessed_ranking = false
                # evidence: an ExecutionEvidence file (`weft-toolspace evidence`); with
                # witnessed_ranking the sampler ranks what real traces witnessed higher
    [rollouts]  views = ["agentic/full", "simuser/partial"], harnesses = ["teacher", "react"],
                samples = 1, concurrency = 4, simulator = "programmatic" | "llm",
                model = ""   # the policy rolled out; "" = [pipeline].model
                # "hermes" and "openclaw" (weft-tasks harness install ...) need an
                # OpenAI-compatible policy model; a capture gateway records its calls
                [[rollouts.external]] name = "openclaw", command = ["openclaw-weft", "--agentic"]
    [megamcp]   url = "" (embedded host), admin_token = ""
    [toolspace] enabled = false, servers = ["filesystem", "memory", "git", "sqlite", "time"],
                traces = "",  # recorded traces to mine instead of recording episodes
                episodes = 16, steps = 20, length = 30, min_length = 5, envs = 2,
                attempts = 8, min_count = 2, resolution = 2.0
                # ToolSpace (weft-toolspace): tasks from walks on real servers hosted in the
                # command tier, exported with their stored s_0 and rolled out with the others;
                # with no [pipeline].specs the run is ToolSpace only
"""

from __future__ import annotations

import glob
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from weft.errors import ConfigError
from weft_core.models import Disclosure, ViewMode


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PipelineSection(_Section):
    specs: list[str] = Field(default_factory=list, description="Spec files or glob patterns.")
    out: str = Field(default=".weft/run", description="Output folder.")
    model: str = Field(default="", description="Chat model spec; empty = programmatic strategies.")
    seed: int = Field(default=0, description="Seed of every sampling step.")


class EnvsynthSection(_Section):
    rounds: int = Field(default=3, ge=1, description="Revision rounds per environment.")
    jobs: int = Field(default=1, ge=1, description="Specs synthesized in parallel processes.")


class TasksSection(_Section):
    budget: int = Field(default=3, ge=1, description="Atomic-task synthesis rounds per MCP.")
    n_tasks: int = Field(default=6, ge=1, description="Composed tasks to build.")
    profiles: list[str] = Field(
        default_factory=list,
        description="Names of default profiles to use (Simple, Standard, ...); empty = all.",
    )
    profiles_file: str = Field(
        default="", description="A TOML/JSON profiles file (overrides `profiles`)."
    )
    evidence: str = Field(
        default="",
        description="An execution evidence file (weft-core ExecutionEvidence, e.g. from "
        "`weft-toolspace evidence`) for `witnessed_ranking`.",
    )
    witnessed_ranking: bool = Field(
        default=False,
        description="Rank MCP combinations and tool chains the evidence witnessed higher when "
        "composing (weft-tasks `witnessed_ranking`); off = the evidence-free ranking.",
    )

    @model_validator(mode="after")
    def _ranking_needs_evidence(self) -> TasksSection:
        if self.witnessed_ranking and not self.evidence:
            raise ValueError("witnessed_ranking = true needs an evidence file")
        return self


class ExternalHarness(_Section):
    name: str = Field(description="Harness name used in `harnesses` and in traces.")
    command: list[str] = Field(min_length=1, description="argv of the harness process.")
    modes: list[ViewMode] = Field(
        default_factory=lambda: [ViewMode.AGENTIC], description="Views it supports."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment for the process."
    )


class RolloutsSection(_Section):
    views: list[str] = Field(
        default_factory=lambda: ["agentic/full", "simuser/partial", "simuser/vague"],
        description="Views as 'mode/disclosure'.",
    )
    harnesses: list[str] = Field(
        default_factory=lambda: ["teacher", "react"],
        description="'teacher', 'react' (needs a model, else it replays the reference policy), or external names.",
    )
    samples: int = Field(default=1, ge=1, description="Rollouts per task, view and harness.")
    concurrency: int = Field(default=4, ge=1, description="Rollouts at the same time.")
    simulator: Literal["programmatic", "llm"] = Field(
        default="programmatic",
        description="SimUser request writer ('llm' uses the pipeline model).",
    )
    max_infra_retries: int = Field(
        default=3, ge=0, description="Physical retries after infrastructure failures."
    )
    external: list[ExternalHarness] = Field(
        default_factory=list, description="Subprocess harnesses."
    )
    model: str = Field(
        default="",
        description="Policy model the harnesses roll out (e.g. 'vllm:MODEL@URL'); empty = the "
        "pipeline model. Synthesis stages keep using [pipeline].model.",
    )

    @field_validator("views")
    @classmethod
    def _views(cls, views: list[str]) -> list[str]:
        for v in views:
            mode, _, disclosure = v.partition("/")
            try:
                ViewMode(mode)
                Disclosure(disclosure or "full")
            except ValueError:
                raise ValueError(
                    f"view {v!r} must be 'agentic|simuser/vague|partial|full'"
                ) from None
        return views

    def view_pairs(self) -> list[tuple[ViewMode, Disclosure]]:
        out = []
        for v in self.views:
            mode, _, disclosure = v.partition("/")
            out.append((ViewMode(mode), Disclosure(disclosure or "full")))
        return out


class SftSection(_Section):
    enabled: bool = Field(default=False, description="Run the sft stage after the rollouts.")
    method: Literal["prefix", "end_to_end"] = Field(
        default="prefix",
        description="Prefix-preserving rejection sampling or the end-to-end baseline.",
    )
    k: int = Field(default=2, ge=0, description="Extra samples per failed turn (or whole task).")
    max_steps_per_turn: int = Field(default=6, ge=1, description="Teacher calls per turn.")
    policy: str = Field(
        default="", description="Local model folder to fine-tune on the data; empty = data only."
    )
    epochs: int = Field(default=3, ge=1, description="SFT epochs when `policy` is set.")
    lr: float = Field(default=2e-3, gt=0, description="SFT learning rate when `policy` is set.")


class MegaMCPSection(_Section):
    url: str = Field(
        default="", description="A running MegaMCP host; empty = embedded host in out/megamcp."
    )
    admin_token: str = Field(default="", description="Admin token of that host.")


class EvolveSection(_Section):
    rounds: int = Field(
        default=0, ge=0, description="Evolution rounds after the rollouts (weft-evolve); 0 = off."
    )
    views: list[str] = Field(
        default_factory=list,
        description="mode/disclosure views of evolution rollouts; [] = [rollouts].views.",
    )


class ToolspaceSection(_Section):
    enabled: bool = Field(default=False, description="Run the toolspace stage (weft-toolspace).")
    servers: list[str] = Field(
        default_factory=lambda: ["filesystem", "memory", "git", "sqlite", "time"],
        description="Real offline MCP servers to record on (weft_toolspace.servers).",
    )
    traces: str = Field(
        default="",
        description="Recorded traces (ledgers, Weft traces, OpenAI transcripts) to mine instead "
        "of recording episodes; relative to the config file.",
    )
    episodes: int = Field(default=16, ge=1, description="Episodes the explorer records.")
    steps: int = Field(default=20, ge=1, description="Calls per recorded episode.")
    length: int = Field(
        default=30, ge=1, description="L: most calls per walk (a walk ends earlier on its own)."
    )
    min_length: int = Field(
        default=5, ge=1, description="Least calls of a kept walk (capped at length)."
    )
    envs: int = Field(default=2, ge=1, description="K: environments a walk must cross.")
    attempts: int = Field(default=8, ge=1, description="Walk attempts.")
    min_count: int = Field(default=2, ge=1, description="Prune edges seen fewer times.")
    resolution: float = Field(default=2.0, gt=0, description="Louvain resolution of clustering.")


class PipelineConfig(_Section):
    pipeline: PipelineSection = Field(default_factory=PipelineSection)
    envsynth: EnvsynthSection = Field(default_factory=EnvsynthSection)
    tasks: TasksSection = Field(default_factory=TasksSection)
    rollouts: RolloutsSection = Field(default_factory=RolloutsSection)
    sft: SftSection = Field(default_factory=SftSection)
    megamcp: MegaMCPSection = Field(default_factory=MegaMCPSection)
    evolve: EvolveSection = Field(default_factory=EvolveSection)
    toolspace: ToolspaceSection = Field(default_factory=ToolspaceSection)
    base_dir: Path = Field(
        default_factory=Path.cwd, exclude=True, description="Folder relative paths start from."
    )

    @property
    def out_dir(self) -> Path:
        return (self.base_dir / self.pipeline.out).resolve()

    @property
    def toolspace_only(self) -> bool:
        """No specs and the toolspace stage on: the run's tasks all come from ToolSpace."""
        return self.toolspace.enabled and not self.pipeline.specs

    def spec_files(self) -> list[Path]:
        """The spec files the patterns name, sorted and unique; a pattern matching nothing is an error."""
        files: list[Path] = []
        for pattern in self.pipeline.specs:
            full = str(self.base_dir / pattern)
            matches = (
                sorted(glob.glob(full))
                if glob.has_magic(full)
                else ([full] if Path(full).exists() else [])
            )
            if not matches:
                raise ConfigError(
                    f"[pipeline].specs: {pattern!r} matches no file (relative to {self.base_dir})"
                )
            files += [Path(m).resolve() for m in matches]
        if not files:
            raise ConfigError("[pipeline].specs is empty: name at least one spec file")
        return sorted(set(files))


def parse_config(
    data: dict[str, Any], *, base_dir: Path, source: str = "<config>"
) -> PipelineConfig:
    try:
        return PipelineConfig.model_validate({**data, "base_dir": base_dir})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{source}: {loc}: {first['msg']}") from None


def load_config(path: str | Path) -> PipelineConfig:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read config: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    return parse_config(data, base_dir=p.resolve().parent, source=str(p))
