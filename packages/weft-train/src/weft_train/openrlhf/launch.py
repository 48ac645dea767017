"""`python -m weft_train.openrlhf.launch`: atomic-turn GRPO on OpenRLHF 0.11.2.

Builds the run folder (`prompts.jsonl`: one row per task, label = task id; `executor.json`;
`agent_func.py` bound to it) and the `train_ppo_ray` arguments with the paper's settings (App. B.1):
group-normalised advantages over G candidates of one atomic turn, token-level TIS with tokens
outside [0.5, 2.0] masked (`mask`/`ratio` gating: survivors keep their ratio weight), KL as a k3
loss (never in the reward), dynamic sampling on. The run itself is `weft_train.openrlhf.train`
(OpenRLHF's entry point with the atomic-turn overrides installed).

`--dry-run` writes the run folder, checks the plan and prints the command without starting
anything; where openrlhf is importable it also runs OpenRLHF's own argument parser and checks on
it. Nothing here imports openrlhf unless that check runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from weft_core.models import TaskGraph
from weft_train.errors import TrainUserError
from weft_train.openrlhf.config import DEFAULT_SYSTEM, ExecutorConfig, agent_func_source

TIS_BAND = (0.5, 2.0)
Preset = Literal["tiny", "8b", "14b"]


class Hardware(BaseModel):
    """Where the run goes: one node's GPUs, shared by actor, reference and vLLM (colocated)."""

    model_config = ConfigDict(frozen=True)

    gpus: int = Field(ge=1, description="GPUs of the node, all given to actor, ref and vLLM.")
    vllm_tp: int = Field(default=1, ge=1, description="Tensor-parallel size of one vLLM engine.")
    zero_stage: int = Field(default=3, ge=0, le=3, description="DeepSpeed ZeRO stage.")
    micro_batch: int = Field(default=1, ge=1, description="Micro-batch for training forwards.")


class LaunchConfig(BaseModel):
    """One atomic-turn GRPO run. Defaults follow App. B.1 where the paper gives a value (G = 16,
    16 tasks per step, TIS band, KL as a loss against the RL initialisation); the rest are ours."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="HF model folder or hub id of the SFT initialisation.")
    tasks_dir: Path = Field(description="TaskGraph JSON files (one task per file).")
    out_dir: Path = Field(description="Run folder: prompts, executor config, checkpoints, logs.")
    megamcp_url: str = Field(description="MegaMCP host the rollout actors reach.")
    admin_token: str = Field(description="MegaMCP admin token.")
    hardware: Hardware = Field(default_factory=lambda: Hardware(gpus=8))
    group_size: int = Field(default=16, ge=2, description="G: candidates per atomic turn.")
    tasks_per_step: int = Field(default=16, ge=1, description="Groups per optimizer step.")
    max_messages: int = Field(default=8, ge=1, description="Assistant messages per segment.")
    max_new_tokens: int = Field(default=2048, ge=1, description="Tokens per assistant message.")
    max_len: int = Field(default=16384, ge=2, description="Longest history + segment, in tokens.")
    temperature: float = Field(default=1.0, gt=0, description="Rollout temperature (top-p 1).")
    lr: float = Field(default=1e-6, gt=0, description="Actor learning rate (AdamW).")
    kl_coef: float = Field(default=1e-3, ge=0, description="k3 KL loss coefficient.")
    clip: tuple[float, float] = Field(default=(0.2, 0.28), description="PPO clip low, high.")
    estimator: Literal["group_norm", "dr_grpo"] = "group_norm"
    episodes: int = Field(default=1, ge=1, description="Passes over the task set.")
    seed: int = 42
    system: str = DEFAULT_SYSTEM
    extra_args: list[str] = Field(default_factory=list, description="Appended OpenRLHF flags.")


PRESETS: dict[Preset, dict[str, object]] = {
    # The tiny policy of `weft-train init-policy` on one GPU: a few steps to check the plumbing.
    "tiny": {
        "hardware": Hardware(gpus=1, zero_stage=0, micro_batch=4),
        "group_size": 4,
        "tasks_per_step": 2,
        "max_new_tokens": 128,
        "max_len": 2048,
        "lr": 1e-5,
    },
    # Qwen3-8B / Qwen3-14B class on one 8-GPU node. Untested here: no GPU was available.
    "8b": {"hardware": Hardware(gpus=8, vllm_tp=1, zero_stage=3, micro_batch=2)},
    "14b": {"hardware": Hardware(gpus=8, vllm_tp=2, zero_stage=3, micro_batch=1)},
}


class LaunchPlan(BaseModel):
    config: LaunchConfig
    executor: ExecutorConfig
    prompts: list[dict[str, str]]
    argv: list[str] = Field(description="Arguments of weft_train.openrlhf.train (OpenRLHF's).")

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "weft_train.openrlhf.train", *self.argv]


def load_tasks(tasks_dir: Path) -> list[TaskGraph]:
    files = sorted(tasks_dir.glob("*.json"))
    if not files:
        raise TrainUserError(f"{tasks_dir}: no TaskGraph JSON files")
    graphs = []
    for f in files:
        try:
            g = TaskGraph.load(f)
        except Exception as exc:
            raise TrainUserError(f"{f}: not a TaskGraph ({type(exc).__name__}: {exc})") from exc
        if f.stem != g.id:
            raise TrainUserError(f"{f}: holds task {g.id!r}; the file must be named {g.id}.json")
        if not g.order:
            raise TrainUserError(f"{f}: task {g.id!r} has no topological order (no turns)")
        graphs.append(g)
    return graphs


def plan(config: LaunchConfig) -> LaunchPlan:
    """The run's files and OpenRLHF arguments; raises `TrainUserError` on an inconsistent plan."""
    graphs = load_tasks(config.tasks_dir)
    hw = config.hardware
    if hw.gpus % hw.vllm_tp:
        raise TrainUserError(f"{hw.gpus} GPUs do not split into vLLM engines of TP {hw.vllm_tp}")
    samples = config.tasks_per_step * config.group_size
    if samples % hw.micro_batch:
        raise TrainUserError(
            f"{samples} samples per step ({config.tasks_per_step} groups x G={config.group_size}) "
            f"do not split into micro-batches of {hw.micro_batch}"
        )
    if samples // hw.micro_batch < hw.gpus:
        raise TrainUserError(f"{samples} samples per step cannot feed {hw.gpus} actor GPUs")
    if config.max_new_tokens >= config.max_len:
        raise TrainUserError(
            f"max_new_tokens {config.max_new_tokens} leaves no room for the history in "
            f"max_len {config.max_len}"
        )
    out = config.out_dir.resolve()
    executor = ExecutorConfig(
        megamcp_url=config.megamcp_url,
        admin_token=config.admin_token,
        tasks_dir=config.tasks_dir.resolve(),
        group_size=config.group_size,
        max_messages=config.max_messages,
        max_new_tokens=config.max_new_tokens,
        system=config.system,
        seed=config.seed,
    )
    prompts = [{"prompt": g.node(g.order[0]).intent, "label": g.id} for g in graphs]
    n = str(hw.gpus)
    argv = [
        "--actor.model_name_or_path", config.model,
        "--actor.num_nodes", "1", "--actor.num_gpus_per_node", n,
        "--ref.num_nodes", "1", "--ref.num_gpus_per_node", n,
        "--vllm.num_engines", str(hw.gpus // hw.vllm_tp),
        "--vllm.tensor_parallel_size", str(hw.vllm_tp),
        "--train.colocate_all", "--vllm.enable_sleep", "--ds.enable_sleep",
        "--ds.zero_stage", str(hw.zero_stage), "--ds.param_dtype", "bf16",
        "--actor.gradient_checkpointing_enable",
        "--data.prompt_dataset", str(out / "prompts.jsonl"),
        "--data.input_key", "prompt", "--data.label_key", "label",
        "--train.agent_func_path", str(out / "agent_func.py"),
        # A group is G candidates of one turn; each bundle unpacks into whole groups.
        "--rollout.n_samples_per_prompt", str(config.group_size),
        "--rollout.batch_size", str(config.tasks_per_step),
        "--train.batch_size", str(samples),
        "--rollout.micro_batch_size", str(hw.micro_batch),
        "--train.micro_batch_size", str(hw.micro_batch),
        "--train.max_epochs", "1", "--train.num_episodes", str(config.episodes),
        "--rollout.max_new_tokens", str(config.max_new_tokens),
        "--data.max_len", str(config.max_len),
        # top_p 1 and top_k off: vLLM's processed logprobs are then the trainer's (TIS)
        "--rollout.temperature", str(config.temperature), "--rollout.top_p", "1.0",
        "--algo.advantage.estimator", config.estimator,
        "--algo.advantage.is_correction_level", "token",
        "--algo.advantage.is_correction_mode", "mask",
        "--algo.advantage.is_correction_gating", "ratio",
        "--algo.advantage.is_correction_threshold", str(TIS_BAND[0]), str(TIS_BAND[1]),
        "--algo.kl.use_loss", "--algo.kl.estimator", "k3",
        "--algo.kl.init_coef", str(config.kl_coef),
        "--actor.eps_clip_low_high", str(config.clip[0]), str(config.clip[1]),
        # the range is unused: the adapter screens groups by Weft's rule (bundle.screen)
        "--algo.dynamic_filtering_enable", "--algo.dynamic_filtering_range", "0", "1",
        "--actor.adam.lr", str(config.lr),
        # one task gives T x G samples, so OpenRLHF's step count (tasks x G) is too low for decay
        "--actor.lr_scheduler", "constant_with_warmup",
        "--train.seed", str(config.seed),
        "--ckpt.output_dir", str(out / "model"), "--ckpt.path", str(out / "checkpoints"),
        "--logger.tensorboard_dir", str(out / "tensorboard"),
        *config.extra_args,
    ]  # fmt: skip
    for flag in ("--train.async_enable", "--rollout.vllm_generate_batch_size"):
        if flag in config.extra_args:
            raise TrainUserError(f"{flag}: the atomic-turn adapter runs the synchronous trainer")
    return LaunchPlan(config=config, executor=executor, prompts=prompts, argv=argv)


def write(p: LaunchPlan) -> None:
    out = p.config.out_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in p.prompts))
    (out / "executor.json").write_text(p.executor.model_dump_json(indent=2))
    (out / "agent_func.py").write_text(agent_func_source(out / "executor.json"))
    (out / "launch.json").write_text(p.model_dump_json(indent=2))


def openrlhf_installed() -> bool:
    return importlib.util.find_spec("openrlhf") is not None


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m weft_train.openrlhf.launch",
        description="Atomic-turn GRPO on OpenRLHF 0.11.2 (needs weft-train[openrlhf] and GPUs).",
    )
    ap.add_argument("--model", required=True, help="SFT initialisation (HF folder or hub id)")
    ap.add_argument("--tasks-dir", type=Path, required=True, help="TaskGraph JSON files")
    ap.add_argument("--out", type=Path, required=True, help="run folder")
    ap.add_argument("--megamcp-url", required=True)
    ap.add_argument("--admin-token", required=True)
    ap.add_argument("--preset", choices=list(PRESETS), default="8b")
    ap.add_argument("--gpus", type=int, help="override the preset's GPU count")
    ap.add_argument("--group-size", type=int)
    ap.add_argument("--tasks-per-step", type=int)
    ap.add_argument("--episodes", type=int)
    ap.add_argument("--dry-run", action="store_true", help="write the run folder, check, print")
    ap.add_argument(
        "--no-openrlhf-check",
        action="store_true",
        help="in --dry-run, skip OpenRLHF's own parser even where openrlhf is installed",
    )
    ap.add_argument("openrlhf_args", nargs="*", help="extra OpenRLHF flags, after --")
    return ap


def config_from_args(ns: argparse.Namespace) -> LaunchConfig:
    fields: dict[str, object] = dict(PRESETS[ns.preset])
    if ns.gpus is not None:
        hw = fields.get("hardware", Hardware(gpus=8))
        assert isinstance(hw, Hardware)
        fields["hardware"] = hw.model_copy(update={"gpus": ns.gpus})
    for name in ("group_size", "tasks_per_step", "episodes"):
        if getattr(ns, name) is not None:
            fields[name] = getattr(ns, name)
    return LaunchConfig.model_validate(
        {
            **fields,
            "model": ns.model,
            "tasks_dir": ns.tasks_dir,
            "out_dir": ns.out,
            "megamcp_url": ns.megamcp_url,
            "admin_token": ns.admin_token,
            "extra_args": list(ns.openrlhf_args),
        }
    )


def main(argv: Sequence[str] | None = None) -> int:
    ns = parser().parse_args(argv)
    try:
        p = plan(config_from_args(ns))
    except TrainUserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write(p)
    print(shlex.join(p.command))
    if ns.dry_run:
        print(f"# run folder {p.config.out_dir}: {len(p.prompts)} tasks", file=sys.stderr)
        if ns.no_openrlhf_check:
            return 0
        if not openrlhf_installed():
            print("# openrlhf not installed: OpenRLHF's own checks were not run", file=sys.stderr)
            return 0
        from weft_train.openrlhf.train import parse_openrlhf_args

        try:
            parse_openrlhf_args(p.argv)
        except (SystemExit, AssertionError) as exc:
            print(f"error: OpenRLHF rejects the arguments: {exc!r}", file=sys.stderr)
            return 2
        print("# OpenRLHF 0.11.2's parser and checks accept the arguments", file=sys.stderr)
        return 0
    if not openrlhf_installed():
        print(
            "error: openrlhf is not installed (pip install 'weft-train[openrlhf]')", file=sys.stderr
        )
        return 2
    return subprocess.call(p.command)


if __name__ == "__main__":
    raise SystemExit(main())
