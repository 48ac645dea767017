"""Atomic-turn vs trajectory-level GRPO at the same rollout-token budget (paper App. C.1).

A tiny from-scratch Qwen3-architecture policy (byte-level tokenizer, built here; no download) is
warmed up by a short SFT on reference demonstrations of the training tasks (issue 12's SFT
initialisation was not merged when this was written; the warm-up is stated in the output). From
that one initialisation, atomic-turn GRPO and trajectory-level GRPO each train until they have
sampled the same number of rollout tokens, on composed stockroom tasks served by a real embedded
MegaMCP host (one session group per state, forks for candidates, server-side checkpoint checks).
Both use the same loss (PPO clip, TIS, k3 KL), credit masking and dynamic sampling; they differ
only in how outcomes become advantages. Held-out checkpoint pass rates are measured on tasks never
trained on, for several seeds, next to the SFT initialisation alone.

    uv run python benchmarks/train/credit_assignment.py [--seeds 0 1 2] [--budget 12000] \
        [--json FILE] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from stockroom.tasks import (  # noqa: E402
    make_tasks,
    reference_reply,
    snapshot_ref,
    turn_task,
    write_seed,
)

from weft_core.console import summary_table  # noqa: E402
from weft_core.models import TaskGraph  # noqa: E402
from weft_megamcp.client import MegaMCPClient  # noqa: E402
from weft_megamcp.host import MegaMCPHost  # noqa: E402
from weft_megamcp.settings import MegaMCPSettings  # noqa: E402
from weft_train.policy import PolicyShape, SamplingParams, build_model, build_tokenizer  # noqa: E402
from weft_train.rl.curves import plot_curves, save_curves  # noqa: E402
from weft_train.rl.environment import MegaMCPEnvironment  # noqa: E402
from weft_train.rl.generation import HFTokenGenerator  # noqa: E402
from weft_train.rl.loop import LoopSettings, checkpoint_pass_rate, train  # noqa: E402
from weft_train.rl.template import HermesTemplate  # noqa: E402
from weft_train.rl.trainer import GRPOSettings, GRPOTrainer  # noqa: E402
from weft_train.rl.tree import TreeSettings  # noqa: E402


def demonstration(
    graph: TaskGraph, template: HermesTemplate, tok: Any
) -> tuple[list[int], list[int]]:
    """(ids, loss mask) of a reference conversation, rendered with the same TITO deltas."""
    task = turn_task(graph)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    ids = template.prompt(task.system, task.turns[0][1])
    mask = [0] * len(ids)
    for t, (node_id, request) in enumerate(task.turns):
        if t:
            d = template.user_delta(request)
            ids, mask = ids + d, mask + [0] * len(d)
        call, done = reference_reply(graph, node_id)
        check = graph.node(node_id).checks[0]
        a = [*list(tok.encode(call, add_special_tokens=False)), end]
        ids, mask = ids + a, mask + [1] * len(a)
        obs = json.dumps({"sku": check.where["sku"], "qty": check.value}, separators=(",", ":"))
        d = template.observation_delta([obs])
        ids, mask = ids + d, mask + [0] * len(d)
        a = [*list(tok.encode(done, add_special_tokens=False)), end]
        ids, mask = ids + a, mask + [1] * len(a)
    return ids, mask


def warmup_sft(
    model: Any, demos: list[tuple[list[int], list[int]]], steps: int, pad: int, seed: int
) -> list[float]:
    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    losses = []
    for _ in range(steps):
        batch = rng.sample(demos, min(16, len(demos)))
        width = max(len(i) for i, _ in batch)
        ids = torch.full((len(batch), width), pad)
        labels = torch.full((len(batch), width), -100)
        attn = torch.zeros((len(batch), width), dtype=torch.long)
        for r, (i, m) in enumerate(batch):
            ids[r, : len(i)] = torch.tensor(i)
            attn[r, : len(i)] = 1
            labels[r, : len(i)] = torch.tensor(
                [t if k else -100 for t, k in zip(i, m, strict=True)]
            )
        loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses


async def run(args: argparse.Namespace) -> dict[str, Any]:
    # Tiny models on a shared 2-core machine: more threads only thrash.
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer()
    template = HermesTemplate(tok)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    pad = tok.pad_token_id
    tmp = Path(tempfile.mkdtemp(prefix="weft-credit-"))
    results: dict[str, Any] = {"config": vars(args), "runs": [], "sft": []}
    settings = MegaMCPSettings(data_dir=tmp / "megamcp", offload_after_s=3600)
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        rec = await client.register(HERE / "stockroom", name="st")
        seed_db = write_seed(tmp / "seed.sqlite")
        snap = snapshot_ref(seed_db, await client.put_snapshot(rec.mcp_id, seed_db))
        train_graphs = make_tasks(args.train_tasks, args.turns, 1000, snap, prefix="train")
        heldout_graphs = make_tasks(args.heldout_tasks, args.turns, 2000, snap, prefix="heldout")
        graphs = {g.id: g for g in train_graphs + heldout_graphs}

        def env_for(task_id: str) -> MegaMCPEnvironment:
            return MegaMCPEnvironment(client, graphs[task_id])

        train_tasks = [turn_task(g) for g in train_graphs]
        heldout = [turn_task(g) for g in heldout_graphs]
        sampling = SamplingParams(max_tokens=args.max_new_tokens, temperature=args.temperature)
        tree = TreeSettings(group_size=args.group_size, max_messages=3, sampling=sampling)
        eval_tree = TreeSettings(group_size=args.eval_samples, max_messages=3, sampling=sampling)

        t0 = time.time()
        shape = PolicyShape(
            hidden_size=args.hidden,
            intermediate_size=args.hidden * 2,
            num_hidden_layers=args.layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=args.hidden // 4,
        )
        init = build_model(len(tok), shape, seed=0, pad_id=tok.pad_token_id)
        demos = [demonstration(g, template, tok) for g in train_graphs]
        sft_losses = warmup_sft(init, demos, args.sft_steps, pad, 0)
        sft_s = time.time() - t0
        results["warmup"] = {
            "kind": "short SFT warm-up on reference demonstrations of the training tasks",
            "steps": args.sft_steps, "final_loss": sft_losses[-1], "seconds": round(sft_s, 1),
        }  # fmt: skip
        print(
            f"warm-up SFT: {args.sft_steps} steps, loss {sft_losses[0]:.3f} -> {sft_losses[-1]:.3f}, {sft_s:.0f} s",
            flush=True,
        )

        curves: dict[str, list[dict[str, Any]]] = {}
        for seed in args.seeds:
            torch.manual_seed(seed)
            sft_rate = await checkpoint_pass_rate(
                heldout,
                env_for,
                HFTokenGenerator(init, stop_ids=[end], pad_id=pad),
                template,
                eval_tree,
            )
            results["sft"].append({"seed": seed, "heldout_pass_rate": sft_rate})
            print(f"seed {seed}: SFT init held-out pass rate {sft_rate:.3f}", flush=True)
            for method in args.methods:
                torch.manual_seed(seed)
                policy = copy.deepcopy(init)
                trainer = GRPOTrainer(
                    policy, copy.deepcopy(init),
                    GRPOSettings(
                    lr=args.lr, kl_coef=args.kl_coef, micro_batch=16, temperature=args.temperature
                ),
                    pad_id=pad,
                )  # fmt: skip
                gen = HFTokenGenerator(policy, stop_ids=[end], pad_id=pad)
                t1 = time.time()
                label = f"{method} s{seed}"

                def show(row: dict[str, Any], label: str = label) -> None:
                    keys = (
                        "step",
                        "rollout_tokens",
                        "reward",
                        "heldout_pass_rate",
                        "kl",
                        "entropy",
                    )
                    print(
                        label,
                        {
                            k: round(row[k], 3) if isinstance(row.get(k), float) else row.get(k)
                            for k in keys
                            if k in row
                        },
                        flush=True,
                    )

                loop = await train(
                    trainer, train_tasks, env_for, gen, template, tree,
                    LoopSettings(method=method, tasks_per_step=args.tasks_per_step,
                                 token_budget=args.budget, eval_every=args.eval_every,
                                 concurrency=args.concurrency, seed=seed),
                    heldout=heldout, eval_tree=eval_tree, on_row=show,
                )  # fmt: skip
                rows = loop.rows
                curves[label] = rows
                final = next(
                    r["heldout_pass_rate"] for r in reversed(rows) if "heldout_pass_rate" in r
                )
                results["runs"].append({
                    "method": method, "seed": seed, "steps": trainer.steps,
                    "rollout_tokens": loop.rollout_tokens, "heldout_start": rows[0].get("heldout_pass_rate"),
                    "heldout_final": final, "seconds": round(time.time() - t1, 1),
                    "groups_rejected": loop.rejected, "failed_tasks": len(loop.failed_tasks),
                })  # fmt: skip
                save_curves(
                    out / "curves.json",
                    [dict(r, run=k) for k, rs in curves.items() for r in rs],
                )
    plot_curves(out / "curves.png", curves)
    return results


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    sft = [r["heldout_pass_rate"] for r in results["sft"]]
    summary["sft"] = {"mean": statistics.mean(sft), "per_seed": sft}
    for method in {r["method"] for r in results["runs"]}:
        finals = [r["heldout_final"] for r in results["runs"] if r["method"] == method]
        tokens = [r["rollout_tokens"] for r in results["runs"] if r["method"] == method]
        summary[method] = {
            "mean": statistics.mean(finals),
            "std": statistics.stdev(finals) if len(finals) > 1 else 0.0,
            "per_seed": finals,
            "rollout_tokens": tokens,
        }
    return summary


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--methods", nargs="+", default=["atomic_turn", "trajectory"])
    p.add_argument("--budget", type=int, default=12000, help="rollout tokens per run")
    p.add_argument("--train-tasks", type=int, default=48)
    p.add_argument("--heldout-tasks", type=int, default=12)
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--tasks-per-step", type=int, default=4)
    p.add_argument("--eval-samples", type=int, default=2)
    p.add_argument("--eval-every", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--sft-steps", type=int, default=150)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--kl-coef", type=float, default=1e-3)
    p.add_argument("--max-new-tokens", type=int, default=72)
    p.add_argument("--temperature", type=float, default=0.7, help="rollout and eval temperature")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--out", default="benchmarks/train/out")
    p.add_argument("--json", dest="json_path")
    args = p.parse_args()
    t0 = time.time()
    results = asyncio.run(run(args))
    results["summary"] = summarize(results)
    results["seconds"] = round(time.time() - t0, 1)
    s = results["summary"]
    rows = [
        [
            "SFT init (warm-up)",
            f"{s['sft']['mean']:.3f}",
            "-",
            " ".join(f"{x:.3f}" for x in s["sft"]["per_seed"]),
            "-",
        ]
    ]
    for method in args.methods:
        m = s[method]
        rows.append([f"{method} GRPO", f"{m['mean']:.3f}", f"{m['std']:.3f}",
                     " ".join(f"{x:.3f}" for x in m["per_seed"]), " ".join(str(t) for t in m["rollout_tokens"])])  # fmt: skip
    summary_table(
        f"Held-out checkpoint pass rate ({len(args.seeds)} seeds, budget {args.budget} rollout tokens, {results['seconds']:.0f} s)",
        ["policy", "mean", "std", "per seed", "rollout tokens"],
        rows,
    )
    print(f"curves: {Path(args.out) / 'curves.png'}  data: {Path(args.out) / 'curves.json'}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
