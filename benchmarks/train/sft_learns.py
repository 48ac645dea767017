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


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from weft_train.policy import PRESETS, Policy, build_tokenizer, init_policy, parameter_count
    from weft_train.sft.masks import row_messages
    from weft_train.sft.trainer import SFTConfig, train_sft

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="weft-sft-learns-"))
    async with environment(args.train + args.test, tmp, seed=args.data_seed) as (client, graphs):
        train_graphs, test_graphs = graphs[: args.train], graphs[args.train :]
        rows = await teacher_rows(client, train_graphs)
        t_sample = time.perf_counter() - t0
        plain = build_tokenizer()
        corpus = [
            plain.apply_chat_template(row_messages(r), tools=r.tools, tokenize=False) for r in rows
        ]
        runs = []
        for seed in range(args.seeds):
            folder = init_policy(
                tmp / f"policy-{seed}",
                PRESETS[args.preset].model_copy(update={"max_position_embeddings": 2048}),
                seed=seed,
                corpus=corpus,
                merges=args.merges,
            )
            policy = Policy.load(folder)
            lengths = [len(policy.tokenizer(c)["input_ids"]) for c in corpus]
            curve = [
                {
                    "epoch": 0,
                    "loss": None,
                    **await evaluate(policy, client, test_graphs, f"s{seed}e0", args.max_tokens),
                }
            ]
            print(f"seed {seed}: epoch 0 {curve[-1]}", flush=True)
            done = 0
            while done < args.epochs:
                chunk = min(args.eval_every, args.epochs - done)
                report = await asyncio.to_thread(
                    train_sft,
                    policy,
                    rows,
                    SFTConfig(
                        lr=args.lr,
                        epochs=chunk,
                        batch_size=args.batch_size,
                        warmup_steps=10 if done == 0 else 0,
                        seed=seed * 1000 + done,
                    ),
                )
                done += chunk
                loss = sum(report.losses[-5:]) / len(report.losses[-5:])
                scores = await evaluate(
                    policy, client, test_graphs, f"s{seed}e{done}", args.max_tokens
                )
                curve.append({"epoch": done, "loss": loss, **scores})
                print(f"seed {seed}: epoch {done} loss {loss:.3f} {scores}", flush=True)
            runs.append(
                {
                    "seed": seed,
                    "parameters": parameter_count(policy.model),
                    "vocabulary": len(policy.tokenizer),
                    "mean_row_tokens": sum(lengths) / len(lengths),
                    "curve": curve,
                }
            )
    return {
        "train_tasks": args.train,
        "heldout_tasks": args.test,
        "teacher_rows": len(rows),
        "sampling_seconds": t_sample,
        "preset": args.preset,
        "epochs": args.epochs,
        "runs": runs,
        "seconds": time.perf_counter() - t0,
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
        f"From-scratch Qwen3 ({result['preset']}), {result['heldout_tasks']} held-out tasks"
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=48, help="training tasks (customers)")
    ap.add_argument("--test", type=int, default=12, help="held-out tasks")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=24)
    ap.add_argument("--eval-every", type=int, default=6)
    ap.add_argument("--preset", default="small", choices=["tiny", "small", "base"])
    ap.add_argument("--merges", type=int, default=600, help="BPE merges learnt from the rows")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=64, help="completion limit per call")
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--png", type=Path, default=Path("sft_learns.png"))
    args = ap.parse_args()
    result = asyncio.run(run(args))
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
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
