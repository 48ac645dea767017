"""Benchmark: does SFT on teacher trajectories teach a from-scratch policy to solve HELD-OUT tasks?

    uv run python benchmarks/train/sft_learns.py [--train 48] [--test 12] [--seeds 3]
        [--epochs 24 --eval-every 6] [--preset small] [--merges 600] [--json FILE] [--png FILE]

1. A real MegaMCP host serves the sample CRM + helpdesk bundles with generated customers; each
   customer gives one composed three-node task (lookup by email -> upgrade to gold with the looked-up
   id -> open a high-priority ticket), split into training and held-out customers.
2. Teacher trajectories of the training tasks come from prefix-preserving rejection sampling
   (weft_train.sft) with the reference policy as teacher (it reads the answer key: it is the
   teacher here, its own pass rate is never reported).
3. Per seed, a from-scratch Qwen3 policy (byte-level BPE learnt from the training texts) is trained
   with the CPU SFT trainer; before training and every --eval-every epochs it is served by
   `weft-train serve`'s app on 127.0.0.1 and evaluated on the held-out tasks by the ReAct harness
   (`vllm:` model, greedy) through the ordinary rollout runner: checkpoint pass rate and task
   success from MegaMCP's server-side verifier.

Prints the learning curve per seed and the mean, writes a PNG, and with --json the same figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _env import SHORT_PROMPT, environment, policy_model, served, teacher_rows

from weft_core.console import summary_table
from weft_core.models import TaskGraph, ViewMode
from weft_train.sft.masks import row_messages


async def evaluate(
    policy: Any, client: Any, graphs: list[TaskGraph], tag: str, max_tokens: int
) -> dict[str, float]:
    """Held-out scores of `policy` served over HTTP, by the ReAct harness and the rollout runner."""
    from weft_tasks.harness import ReActHarness
    from weft_tasks.rollout import RolloutPlan, run_rollout

    async with served(policy) as url:
        model = policy_model(url, temperature=0.0, max_tokens=max_tokens)
        harness = ReActHarness(model, system_prompt=SHORT_PROMPT, max_steps_per_turn=3)
        traces = []
        for g in graphs:
            plan = RolloutPlan(
                rollout_id=f"{tag}-{g.id}", task=g, mode=ViewMode.SIMUSER, harness="react"
            )
            traces.append(await run_rollout(plan, client, harness))
    checkpoints = [s.outcome.passed for t in traces for s in t.segments if s.outcome is not None]
    return {
        "checkpoint_pass_rate": sum(checkpoints) / len(checkpoints) if checkpoints else 0.0,
        "task_success": sum(bool(t.final and t.final.passed) for t in traces) / len(traces),
        "tito_calls": sum(len(t.model_calls) for t in traces),
        "errors": sum(1 for t in traces if t.failed_on_infrastructure),
    }


def split(graphs: list[TaskGraph], n_train: int, n_test: int, seed: int) -> tuple[list, list]:
    """A seeded random split into training and held-out customers: held-out tasks are distinct
    composed tasks (other customers, emails and ids) from the same distribution as training."""
    order = list(range(len(graphs)))
    random.Random(seed).shuffle(order)
    return [graphs[i] for i in order[:n_train]], [
        graphs[i] for i in order[n_train : n_train + n_test]
    ]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from weft_train.policy import PRESETS, PolicyShape, parameter_count
    from weft_train.sft.recipe import SFTRecipe, train_sft_policy
    from weft_train.sft.trainer import SFTConfig

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="weft-sft-learns-"))
    loop = asyncio.get_running_loop()
    if args.hidden:
        shape = PolicyShape(
            hidden_size=args.hidden,
            intermediate_size=4 * args.hidden,
            num_hidden_layers=args.layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=args.hidden // 4,
        )
    else:
        shape = PRESETS[args.preset]
    recipe = SFTRecipe(
        preset=shape,
        merges=args.merges,
        sft=SFTConfig(
            lr=args.lr,
            epochs=args.epochs,
            batch_size=args.batch_size,
            warmup_steps=args.warmup_steps,
            schedule=args.schedule,
        ),
    )
    eval_at = sorted({0, args.epochs, *range(args.eval_every, args.epochs, args.eval_every)})
    async with environment(args.train + args.test, tmp, seed=args.data_seed) as (client, graphs):
        train_graphs, test_graphs = split(graphs, args.train, args.test, args.data_seed)
        rows = await teacher_rows(client, train_graphs)
        t_sample = time.perf_counter() - t0
        print(f"{len(rows)} teacher rows in {t_sample:.0f} s", flush=True)
        runs = []
        for seed in args.seed_ids or range(args.seeds):
            t_seed = time.perf_counter()
            curve: list[dict[str, Any]] = []

            def on_epoch(
                epoch: int,
                policy: Any,
                seed: int = seed,
                curve: list[dict[str, Any]] = curve,
                t_seed: float = t_seed,
            ) -> None:
                # Runs in the training thread: the held-out evaluation runs on the event loop
                # (server + MegaMCP) while training waits for it.
                if epoch not in eval_at:
                    return
                scores = asyncio.run_coroutine_threadsafe(
                    evaluate(policy, client, test_graphs, f"s{seed}e{epoch}", args.max_tokens),
                    loop,
                ).result()
                point = {"epoch": epoch, "seconds": time.perf_counter() - t_seed, **scores}
                curve.append(point)
                print(f"seed {seed}: epoch {epoch} {point}", flush=True)

            folder, report = await asyncio.to_thread(
                train_sft_policy,
                rows,
                tmp / f"policy-{seed}",
                seed=seed,
                recipe=recipe,
                on_epoch=on_epoch,
            )
            losses: list[float] = report.losses
            per_epoch = len(losses) // args.epochs
            for point in curve:
                e = point["epoch"]
                window = losses[max(0, e * per_epoch - per_epoch) : e * per_epoch]
                point["loss"] = sum(window) / len(window) if e and window else None
            from weft_train.policy import Policy

            policy = Policy.load(folder)
            runs.append(
                {
                    "seed": seed,
                    "parameters": parameter_count(policy.model),
                    "vocabulary": len(policy.tokenizer),
                    "mean_row_tokens": sum(
                        len(policy.render(row_messages(r), r.tools, add_generation_prompt=False))
                        for r in rows
                    )
                    / len(rows),
                    "steps": report.steps,
                    "curve": curve,
                    "seconds": time.perf_counter() - t_seed,
                }
            )
    return {
        "train_tasks": args.train,
        "heldout_tasks": args.test,
        "heldout_ids": [g.id for g in test_graphs],
        "teacher_rows": len(rows),
        "sampling_seconds": t_sample,
        "shape": shape.model_dump(),
        "recipe": recipe.model_dump(mode="json"),
        "epochs": args.epochs,
        "runs": runs,
        "seconds": time.perf_counter() - t0,
        # This process's CPU time (the MegaMCP host's own processes not included): on a machine
        # shared with other work, wall time overstates what the benchmark costs.
        "cpu_seconds": time.process_time(),
    }


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in result["runs"]:
        xs = [p["epoch"] for p in r["curve"]]
        ax.plot(
            xs,
            [p["checkpoint_pass_rate"] for p in r["curve"]],
            "o-",
            alpha=0.6,
            label=f"seed {r['seed']}",
        )
    epochs = [p["epoch"] for p in result["runs"][0]["curve"]]
    mean = [
        sum(r["curve"][i]["checkpoint_pass_rate"] for r in result["runs"]) / len(result["runs"])
        for i in range(len(epochs))
    ]
    ax.plot(epochs, mean, "k-", linewidth=2, label="mean")
    ax.set_xlabel("SFT epochs on teacher trajectories")
    ax.set_ylabel("held-out checkpoint pass rate")
    ax.set_ylim(0, 1)
    ax.set_title(
        f"From-scratch Qwen3 ({result['runs'][0]['parameters']:,} params), "
        f"{result['heldout_tasks']} held-out tasks"
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=80, help="training tasks (customers)")
    ap.add_argument("--test", type=int, default=12, help="held-out tasks")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed-ids", type=int, nargs="+", default=None, help="run these seeds only")
    ap.add_argument(
        "--combine", type=Path, nargs="+", default=None, help="join JSON results of --seed-ids runs"
    )
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--eval-every", type=int, default=5)
    ap.add_argument("--preset", default="mini", choices=["tiny", "mini", "small", "base"])
    ap.add_argument("--hidden", type=int, default=0, help="a custom width instead of --preset")
    ap.add_argument("--layers", type=int, default=2, help="blocks of the custom shape")
    ap.add_argument("--schedule", default="constant", choices=["constant", "cosine"])
    ap.add_argument("--merges", type=int, default=1000, help="BPE merges learnt from the rows")
    ap.add_argument("--lr", type=float, default=5e-3, help="peak learning rate (cosine decay)")
    ap.add_argument("--warmup-steps", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64, help="completion limit per call")
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--png", type=Path, default=Path("sft_learns.png"))
    args = ap.parse_args()
    if args.combine:
        # Seeds run as separate processes (same data seed, hence the same rows and held-out
        # tasks) are joined here into one table and curve.
        parts = [json.loads(p.read_text()) for p in args.combine]
        result = {**parts[0], "runs": [r for part in parts for r in part["runs"]]}
        result["seconds"] = max(part["seconds"] for part in parts)
        result["processes"] = len(parts)
        assert all(part["heldout_ids"] == result["heldout_ids"] for part in parts)
    else:
        result = asyncio.run(run(args))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    rows = []
    for i, point in enumerate(result["runs"][0]["curve"]):
        per_seed = [r["curve"][i] for r in result["runs"]]
        rows.append(
            [
                point["epoch"],
                " ".join(f"{p['checkpoint_pass_rate']:.0%}" for p in per_seed),
                f"{sum(p['checkpoint_pass_rate'] for p in per_seed) / len(per_seed):.0%}",
                f"{sum(p['task_success'] for p in per_seed) / len(per_seed):.0%}",
                "-"
                if point["loss"] is None
                else f"{sum(p['loss'] for p in per_seed) / len(per_seed):.3f}",
            ]
        )
    summary_table(
        f"Held-out pass rate of a from-scratch policy trained on {result['teacher_rows']} teacher "
        f"trajectories ({result['heldout_tasks']} held-out tasks)",
        ["epoch", "ckpt pass per seed", "ckpt pass mean", "task success mean", "train loss"],
        rows,
    )
    r0 = result["runs"][0]
    print(
        f"policy: {r0['parameters']:,} parameters, vocabulary {r0['vocabulary']}, "
        f"{r0['mean_row_tokens']:.0f} tokens per row; total {result['seconds']:.0f} s"
    )
    plot(result, args.png)
    print(f"curve: {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
