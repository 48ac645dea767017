"""Benchmark: prefix-preserving vs end-to-end rejection sampling (paper §3.3.1) at k = 1, 2, 3.

    uv run python benchmarks/train/sft_sampling.py [--tasks 30] [--warmup-tasks 32]
        [--warmup-epochs 10] [--ks 1 2 3] [--preset small] [--temperature 0.7] [--json FILE]

The teacher is stochastic and real: a from-scratch Qwen3 policy warmed up by `train_sft_policy` on
reference trajectories of *other* customers' tasks (--warmup-tasks), served by `weft-train serve`'s
app on 127.0.0.1 and called as a `vllm:` chat model at temperature 0.7 (the SimUser speaks as in
the warm-up rows). Both methods sample every task against a real MegaMCP host
with the server-side checkpoint verifier; prefix-preserving restores the pre-turn snapshot and
resamples only the failed turn (up to k extra samples per turn), end-to-end restarts the whole task
from its initial state (up to k extra tries). Reported per method and k: accepted trajectories,
teacher calls and completion tokens in total and per accepted trajectory.
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
from sft_learns import split

from weft_core.console import summary_table
from weft_train.policy import Policy


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from weft_train.policy import PRESETS, parameter_count
    from weft_train.sft import SamplingConfig, sample_trajectory
    from weft_train.sft.recipe import SFTRecipe, train_sft_policy
    from weft_train.sft.trainer import SFTConfig

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="weft-sft-sampling-"))
    cells = []
    n = args.warmup_tasks + args.tasks
    async with environment(n, tmp, seed=args.data_seed) as (client, everything):
        # The teacher is warmed up on other customers' reference trajectories than the tasks it
        # then samples, so acceptance measures a policy, not a memorised answer key.
        # A seeded random split (as sft_learns'): the last customers have ids whose leading digits
        # the warm-up never saw in that position, and the teacher copied `83` as `23`.
        warm_graphs, graphs = split(everything, args.warmup_tasks, args.tasks, args.data_seed)
        rows = await teacher_rows(client, warm_graphs)
        recipe = SFTRecipe(
            preset=PRESETS[args.preset],
            merges=args.merges,
            sft=SFTConfig(
                lr=args.lr,
                epochs=args.warmup_epochs,
                batch_size=args.batch_size,
                warmup_steps=10,
                schedule="cosine",
            ),
        )
        folder, warm = await asyncio.to_thread(
            train_sft_policy, rows, tmp / "teacher", seed=args.seed, recipe=recipe
        )
        teacher_policy = Policy.load(folder)
        print(f"warm-up: {warm.steps} steps, final loss {warm.losses[-1]:.3f}", flush=True)
        async with served(teacher_policy, "teacher") as url:
            teacher = policy_model(url, temperature=args.temperature, max_tokens=args.max_tokens)
            for k in args.ks:
                for method in ("prefix", "end_to_end"):
                    config = SamplingConfig(
                        method=method, k=k, system_prompt=SHORT_PROMPT, max_steps_per_turn=3
                    )
                    t1 = time.perf_counter()
                    got = [
                        await sample_trajectory(g, client, teacher, config, seed=g.id)
                        for g in graphs
                    ]
                    accepted = [t for t in got if t.accepted]
                    calls = sum(t.teacher_calls for t in got)
                    tokens = sum(t.tokens for t in got)
                    cell = {
                        "method": method,
                        "k": k,
                        "tasks": len(got),
                        "accepted": len(accepted),
                        "teacher_calls": calls,
                        "tokens": tokens,
                        "calls_per_accepted": calls / len(accepted) if accepted else None,
                        "tokens_per_accepted": tokens / len(accepted) if accepted else None,
                        "turn_attempts": [[s.attempts for s in t.trace.segments] for t in got],
                        "seconds": time.perf_counter() - t1,
                    }
                    cells.append(cell)
                    print(f"{method} k={k}: {len(accepted)}/{len(got)} accepted", flush=True)
    return {
        "tasks": args.tasks,
        "teacher": {
            "preset": args.preset,
            "warmup_tasks": args.warmup_tasks,
            "parameters": parameter_count(teacher_policy.model),
            "warmup_epochs": args.warmup_epochs,
            "warmup_final_loss": warm.losses[-1],
            "temperature": args.temperature,
        },
        "cells": cells,
        "seconds": time.perf_counter() - t0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=30, help="tasks sampled by each method and k")
    ap.add_argument("--warmup-tasks", type=int, default=32, help="other tasks for the warm-up")
    ap.add_argument("--seed", type=int, default=0, help="the teacher's initialisation seed")
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--preset", default="mini", choices=["tiny", "mini", "small", "base"])
    ap.add_argument("--merges", type=int, default=1000)
    ap.add_argument("--warmup-epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--data-seed", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    result = asyncio.run(run(args))

    def per(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f}"

    summary_table(
        f"Rejection sampling with a stochastic teacher ({result['tasks']} composed tasks, "
        f"3 turns each)",
        ["method", "k", "accepted", "teacher calls", "tokens", "calls/accepted", "tokens/accepted"],
        [
            [
                c["method"],
                c["k"],
                f"{c['accepted']}/{c['tasks']}",
                c["teacher_calls"],
                c["tokens"],
                per(c["calls_per_accepted"]),
                per(c["tokens_per_accepted"]),
            ]
            for c in result["cells"]
        ],
    )
    t = result["teacher"]
    print(
        f"teacher: {t['parameters']:,}-parameter Qwen3 after {t['warmup_epochs']} SFT epochs "
        f"(loss {t['warmup_final_loss']:.3f}), T={t['temperature']}; {result['seconds']:.0f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
