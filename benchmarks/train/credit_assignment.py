"""Atomic-turn vs trajectory-level GRPO at the same rollout-token budget (paper App. C.1).

The environment and the SFT initialisation are `sft_learns.py`'s (issue 12's recipe): weft-tasks'
sample CRM + helpdesk bundles on a real MegaMCP host, one composed three-node task per generated
customer (lookup by email -> upgrade to gold with the looked-up id -> open a high-priority ticket),
a seeded split into training and held-out customers; per seed a from-scratch Qwen3 (`mini`, BPE
learnt from the rows, single-digit tokens) trained by `train_sft_policy` on the reference teacher's
prefix-preserving trajectories of the *training* customers (held-out tasks are never shown).

From that one SFT initialisation per seed, atomic-turn GRPO and trajectory-level GRPO each train on
the training customers' tasks until they have sampled the same number of rollout tokens: the same
prompts as SFT (its system prompt, tool block and SimUser requests, rendered by the policy's own
chat template), the same loss (PPO clip, TIS, k3 KL), credit masking and dynamic sampling; they
differ only in how outcomes become advantages. Every state is a MegaMCP session group (forks for
candidates, server-side checkpoint checks). Held-out checkpoint pass rate: each held-out task run
once, greedy, through the same rollout code, scored by MegaMCP's verifier; before RL (= the SFT
initialisation alone) and every --eval-every steps.

Runs are separate processes (2 cores): first the SFT initialisations, then the GRPO runs that load
them, then --combine joins the per-run JSONs into one table and PNG:

    for s in 0 1 2; do uv run python benchmarks/train/credit_assignment.py --seed-ids $s \\
        --methods sft --out OUT --json OUT/sft_s$s.json & done; wait
    for s in 0 1 2; do for m in atomic_turn trajectory; do
        uv run python benchmarks/train/credit_assignment.py --seed-ids $s --methods $m \\
        --out OUT --json OUT/${m}_s$s.json & done; done; wait
    uv run python benchmarks/train/credit_assignment.py --combine OUT/*_s?.json \\
        --json OUT/credit_assignment.json --png OUT/credit_assignment.png
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _env import SHORT_PROMPT, environment, teacher_rows
from sft_learns import split

from weft_core.console import summary_table
from weft_core.models import TaskGraph

METHODS = ("sft", "atomic_turn", "trajectory")


def turn_task(graph: TaskGraph, persona_seed: str) -> Any:
    """The task as RL turns: SFT's system prompt and the SimUser's programmatic requests (the
    teacher rows' requests for a training task, whose persona seed is the task id)."""
    from weft_tasks.views._order import disclosure_order
    from weft_tasks.views.simuser import build_simuser_view
    from weft_train.rl.tree import TurnTask

    view = build_simuser_view(graph, seed=persona_seed)
    return TurnTask(
        graph.id, SHORT_PROMPT, tuple(zip(disclosure_order(graph), view.requests, strict=True))
    )


async def tool_block(client: Any, graph: TaskGraph) -> list[dict[str, Any]]:
    """The OpenAI tool schemas the SFT rows carry (public names, in MCP order)."""
    from weft_tasks.harness.mcp_tools import openai_tool, public_tool_name

    group = await client.create_group(
        graph.initial_dbs(), task_id=graph.id, workspaces=graph.initial_workspaces()
    )
    try:
        return [
            openai_tool(public_tool_name(m, t.name), t.description or "", dict(t.input_schema))
            for m in graph.mcps
            for t in await client.list_tools(group, m)
        ]
    finally:
        await client.close(group)


def weights_sha(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(folder.glob("*.safetensors")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


class Bench:
    """What every run of one process shares: the MegaMCP client, the split, the prompts."""

    def __init__(self, args: argparse.Namespace, client: Any, graphs: list[TaskGraph]) -> None:
        self.args = args
        self.client = client
        self.train_graphs, self.test_graphs = split(graphs, args.train, args.test, args.data_seed)
        self.graphs = {g.id: g for g in graphs}
        self.train_tasks = [turn_task(g, g.id) for g in self.train_graphs]
        self.heldout = [turn_task(g, f"heldout-{g.id}") for g in self.test_graphs]
        self.tools: list[dict[str, Any]] = []

    def executor(self, policy: Any) -> Any:
        from weft_train.rl.environment import MegaMCPEnvironment
        from weft_train.rl.executor import LocalExecutor
        from weft_train.rl.generation import HFTokenGenerator
        from weft_train.rl.template import HermesTemplate

        tok = policy.tokenizer
        end = tok.convert_tokens_to_ids("<|im_end|>")
        return LocalExecutor(
            lambda tid: MegaMCPEnvironment(self.client, self.graphs[tid]),
            HFTokenGenerator(policy.model, stop_ids=[end], pad_id=tok.pad_token_id),
            HermesTemplate(tok, self.tools),
        )

    def trees(self) -> tuple[Any, Any]:
        from weft_train.policy import SamplingParams
        from weft_train.rl.tree import TreeSettings

        a = self.args
        train_sampling = SamplingParams(max_tokens=a.max_tokens, temperature=a.temperature)
        greedy = SamplingParams(max_tokens=a.max_tokens, temperature=0.0)
        return (
            TreeSettings(group_size=a.group_size, max_messages=3, sampling=train_sampling),
            TreeSettings(group_size=1, max_messages=3, sampling=greedy),
        )

    async def heldout_pass_rate(self, policy: Any) -> float:
        from weft_train.rl.loop import checkpoint_pass_rate

        return await checkpoint_pass_rate(self.heldout, self.executor(policy), self.trees()[1])

    async def sft(self, seed: int, folder: Path) -> dict[str, Any]:
        """The SFT initialisation of `seed` (issue 12's recipe), saved to `folder`."""
        from weft_train.policy import Policy, parameter_count
        from weft_train.sft.recipe import SFTRecipe, train_sft_policy
        from weft_train.sft.trainer import SFTConfig

        a = self.args
        rows = await teacher_rows(self.client, self.train_graphs)
        if rows and rows[0].tools != self.tools:
            raise SystemExit("the RL tool block differs from the SFT rows' tools")
        recipe = SFTRecipe(
            preset=a.preset,
            merges=a.merges,
            sft=SFTConfig(
                lr=a.sft_lr,
                epochs=a.sft_epochs,
                batch_size=a.sft_batch_size,
                warmup_steps=10,
                schedule="constant",
            ),
        )
        path, report = await asyncio.to_thread(
            train_sft_policy, rows, folder, seed=seed, recipe=recipe
        )
        policy = Policy.load(path)
        self.check_prompt(policy, rows[0])
        rate = await self.heldout_pass_rate(policy)
        return {
            "teacher_rows": len(rows),
            "recipe": recipe.model_dump(mode="json"),
            "parameters": parameter_count(policy.model),
            "vocabulary": len(policy.tokenizer),
            "sft_steps": report.steps,
            "sft_loss_first": report.losses[0],
            "sft_loss_final": report.losses[-1],
            "heldout_final": rate,
            "curve": [{"step": 0, "rollout_tokens": 0, "heldout_pass_rate": rate}],
        }

    def check_prompt(self, policy: Any, row: Any) -> None:
        """RL must see what SFT trained on: the first RL prompt of a training task is a prefix of
        that task's SFT row as the policy renders it."""
        from weft_train.rl.template import HermesTemplate
        from weft_train.sft.masks import row_messages

        task = next(t for t in self.train_tasks if t.task_id == row.task_id)
        prompt = HermesTemplate(policy.tokenizer, self.tools).prompt(task.system, task.turns[0][1])
        full = policy.render(row_messages(row), row.tools, add_generation_prompt=False)
        if list(full[: len(prompt)]) != list(prompt):
            raise SystemExit("the RL prompt is not a prefix of the SFT row it should continue")

    async def grpo(
        self, seed: int, method: str, folder: Path, progress: Any = None
    ) -> dict[str, Any]:
        from weft_train.policy import Policy
        from weft_train.rl.loop import LoopSettings, train
        from weft_train.rl.trainer import GRPOSettings, GRPOTrainer

        a = self.args
        policy, reference = Policy.load(folder), Policy.load(folder)
        torch.manual_seed(seed)
        trainer = GRPOTrainer(
            policy.model,
            reference.model,
            GRPOSettings(
                lr=a.lr, kl_coef=a.kl_coef, micro_batch=a.micro_batch, temperature=a.temperature
            ),
            pad_id=policy.tokenizer.pad_token_id,
        )
        tree, eval_tree = self.trees()

        rows: list[dict[str, Any]] = []

        def show(row: dict[str, Any]) -> None:
            rows.append(row)
            if progress is not None:  # an interrupted run still leaves its curve so far
                rated = [r["heldout_pass_rate"] for r in rows if "heldout_pass_rate" in r]
                progress({"steps": row["step"], "rollout_tokens": row["rollout_tokens"],
                          "heldout_start": rated[0], "heldout_final": rated[-1], "curve": rows})  # fmt: skip
            keys = ("step", "rollout_tokens", "reward", "heldout_pass_rate", "kl", "entropy")
            shown = {k: round(v, 3) if isinstance(v, float) else v for k in keys
                     if (v := row.get(k)) is not None}  # fmt: skip
            print(f"{method} s{seed}", shown, flush=True)

        loop = await train(
            trainer,
            self.train_tasks,
            self.executor(policy),
            tree,
            LoopSettings(
                method=method,  # type: ignore[arg-type]
                tasks_per_step=a.tasks_per_step,
                token_budget=a.budget,
                eval_every=a.eval_every,
                concurrency=a.concurrency,
                seed=seed,
            ),
            heldout=self.heldout,
            eval_tree=eval_tree,
            on_row=show,
        )
        final = next(
            r["heldout_pass_rate"] for r in reversed(loop.rows) if "heldout_pass_rate" in r
        )
        return {
            "steps": trainer.steps,
            "rollout_tokens": loop.rollout_tokens,
            "heldout_start": loop.rows[0]["heldout_pass_rate"],
            "heldout_final": final,
            "groups_rejected": loop.rejected,
            "failed_tasks": len(loop.failed_tasks),
            "curve": loop.rows,
            "complete": True,
        }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    # Tiny models on a shared 2-core machine: more threads only thrash.
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="weft-credit-"))
    result: dict[str, Any] = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start",
        "runs": [],
    }
    async with environment(args.train + args.test, tmp, seed=args.data_seed) as (client, graphs):
        bench = Bench(args, client, graphs)
        bench.tools = await tool_block(client, bench.train_graphs[0])
        result["heldout_ids"] = [g.id for g in bench.test_graphs]
        for seed in args.seed_ids:
            folder = out / f"sft-s{seed}"
            for method in args.methods:
                t0, c0 = time.perf_counter(), time.process_time()

                def finish(
                    got: dict[str, Any],
                    t0: float = t0,
                    c0: float = c0,
                    method: str = method,
                    seed: int = seed,
                    folder: Path = folder,
                ) -> dict[str, Any]:
                    return {
                        "method": method,
                        "seed": seed,
                        "init_sha": weights_sha(folder),
                        "complete": False,
                        **got,
                        "seconds": round(time.perf_counter() - t0, 1),
                        # This process's CPU time (the MegaMCP host and its MCP servers run in it).
                        "cpu_seconds": round(time.process_time() - c0, 1),
                    }

                def progress(got: dict[str, Any], finish: Any = finish) -> None:
                    if args.json:
                        partial = {**result, "runs": [*result["runs"], finish(got)]}
                        args.json.write_text(json.dumps(partial, indent=1, default=str))

                if method == "sft":
                    got = {**await bench.sft(seed, folder), "complete": True}
                else:
                    if not (folder / "config.json").is_file():
                        raise SystemExit(
                            f"{folder}: no SFT initialisation of seed {seed}; "
                            f"run --seed-ids {seed} --methods sft --out {out} first"
                        )
                    got = await bench.grpo(seed, method, folder, progress)
                run_row = finish(got)
                result["runs"].append(run_row)
                print(
                    f"{method} seed {seed}: held-out {run_row['heldout_final']:.3f}, "
                    f"{run_row['seconds']:.0f} s wall, {run_row['cpu_seconds']:.0f} s CPU",
                    flush=True,
                )
                if args.json:  # what has run so far survives an interrupted process
                    args.json.write_text(json.dumps(result, indent=1, default=str))
    return result


def combine(paths: list[Path]) -> dict[str, Any]:
    """Join per-process results; every part must have the same held-out tasks, and both GRPO
    methods of a seed must start from that seed's SFT initialisation."""
    parts = [json.loads(p.read_text()) for p in paths]
    ids = parts[0]["heldout_ids"]
    if any(p["heldout_ids"] != ids for p in parts):
        raise SystemExit("the parts were run on different held-out tasks")
    runs = [r for p in parts for r in p["runs"]]
    inits = {r["seed"]: r["init_sha"] for r in runs if r["method"] == "sft"}
    for r in runs:
        if r["seed"] in inits and r["init_sha"] != inits[r["seed"]]:
            raise SystemExit(f"{r['method']} seed {r['seed']} did not start from its SFT init")
    return {"heldout_ids": ids, "processes": len(parts), "config": parts[-1]["config"],
            "runs": sorted(runs, key=lambda r: (METHODS.index(r["method"]), r["seed"]))}  # fmt: skip


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for method in METHODS:
        rs = [r for r in result["runs"] if r["method"] == method]
        if not rs:
            continue
        finals = [r["heldout_final"] for r in rs]
        summary[method] = {
            "mean": statistics.mean(finals),
            "std": statistics.stdev(finals) if len(finals) > 1 else 0.0,
            "seeds": [r["seed"] for r in rs],
            "per_seed": finals,
            "rollout_tokens": [r.get("rollout_tokens", 0) for r in rs],
            "steps": [r.get("steps", r.get("sft_steps")) for r in rs],
            "cpu_seconds": [r["cpu_seconds"] for r in rs],
            "seconds": [r["seconds"] for r in rs],
            # False: the process was stopped before its budget was spent (figures so far)
            "complete": [r.get("complete", False) for r in rs],
        }
    return summary


def plot(result: dict[str, Any], path: Path) -> None:
    from weft_train.rl.curves import plot_curves

    curves = {
        f"{r['method']} s{r['seed']}": r["curve"] for r in result["runs"] if r["method"] != "sft"
    }
    if curves:
        plot_curves(path, curves)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seed-ids", type=int, nargs="+", default=[0])
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--combine", type=Path, nargs="+", help="join the JSONs of per-run processes")
    ap.add_argument("--train", type=int, default=80, help="training tasks (customers)")
    ap.add_argument("--test", type=int, default=12, help="held-out tasks")
    ap.add_argument("--data-seed", type=int, default=0)
    # SFT initialisation: sft_learns.py's recipe
    ap.add_argument("--preset", default="mini")
    ap.add_argument("--merges", type=int, default=1000)
    ap.add_argument("--sft-epochs", type=int, default=20)
    ap.add_argument("--sft-lr", type=float, default=5e-3)
    ap.add_argument("--sft-batch-size", type=int, default=2)
    # GRPO, the same for both methods
    ap.add_argument("--budget", type=int, default=60000, help="rollout tokens per GRPO run")
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--tasks-per-step", type=int, default=4)
    ap.add_argument("--eval-every", type=int, default=5, help="steps between held-out evals")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--kl-coef", type=float, default=1e-3)
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=1.0, help="rollout temperature")
    ap.add_argument("--max-tokens", type=int, default=64, help="completion limit per message")
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "out" / "credit",
        help="SFT initialisations (model folders) are kept here; the GRPO runs load them",
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument("--png", type=Path, help="curves (reward, entropy, KL, held-out pass rate)")
    args = ap.parse_args()
    if args.combine:
        result = combine(args.combine)
    else:
        t0 = time.perf_counter()
        result = asyncio.run(run(args))
        result["seconds"] = round(time.perf_counter() - t0, 1)
    result["summary"] = s = summarize(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str))
    names = {"sft": "SFT init alone", "atomic_turn": "atomic-turn GRPO",
             "trajectory": "trajectory GRPO"}  # fmt: skip
    rows = [
        [
            names[m],
            f"{v['mean']:.3f}",
            f"{v['std']:.3f}",
            " ".join(
                f"s{k}:{x:.3f}{'' if done else '*'}"
                for k, x, done in zip(v["seeds"], v["per_seed"], v["complete"], strict=True)
            ),
            " ".join(str(t) for t in v["rollout_tokens"]),
            " ".join(str(t) for t in v["steps"]),
            " ".join(f"{c:.0f}" for c in v["cpu_seconds"]),
        ]
        for m, v in s.items()
    ]
    summary_table(
        f"Held-out checkpoint pass rate ({len(result['heldout_ids'])} held-out tasks, greedy)",
        ["policy", "mean", "std", "per seed", "rollout tokens", "steps", "CPU s"],
        rows,
    )
    if not all(c for v in s.values() for c in v["complete"]):
        print("* stopped before its rollout-token budget was spent: figures so far")
    if args.png:
        plot(result, args.png)
        print(f"curves: {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
