"""Atomic-turn vs trajectory-level GRPO at the same rollout-token budget (paper App. C.1).

Per seed, a from-scratch Qwen3-architecture policy (byte-level tokenizer, built here; no download)
is trained by weft-train's SFT trainer (`weft_train.sft.train_sft`, the policy's chat template and
its assistant-token masks) on demonstrations of the *training* tasks (the answer key writes them;
held-out tasks are never shown). From that one SFT initialisation, atomic-turn GRPO and
trajectory-level GRPO each train until they have sampled the same number of rollout tokens, on
composed stockroom tasks served by a real embedded MegaMCP host (one session group per state,
forks for candidates, server-side checkpoint checks).
Both use the same loss (PPO clip, TIS, k3 KL), credit masking and dynamic sampling; they differ
only in how outcomes become advantages. Held-out checkpoint pass rates are measured on tasks never
trained on, for several seeds, next to the SFT initialisation alone.

    uv run python benchmarks/train/credit_assignment.py [--seeds 0 1 2] [--budget 12000] \
        [--sft-epochs 6] [--json FILE] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
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
from weft_core.models import ChatMessage, SFTRow, TaskGraph  # noqa: E402
from weft_megamcp.client import MegaMCPClient  # noqa: E402
from weft_megamcp.host import MegaMCPHost  # noqa: E402
from weft_megamcp.settings import MegaMCPSettings  # noqa: E402
from weft_train.policy import (  # noqa: E402
    Policy,
    PolicyShape,
    SamplingParams,
    build_model,
    build_tokenizer,
)
from weft_train.rl.curves import plot_curves, save_curves  # noqa: E402
from weft_train.rl.environment import MegaMCPEnvironment  # noqa: E402
from weft_train.rl.executor import LocalExecutor  # noqa: E402
from weft_train.rl.generation import HFTokenGenerator  # noqa: E402
from weft_train.rl.loop import LoopSettings, train  # noqa: E402
from weft_train.rl.template import HermesTemplate  # noqa: E402
from weft_train.rl.trainer import GRPOSettings, GRPOTrainer  # noqa: E402
from weft_train.rl.tree import TreeSettings  # noqa: E402
from weft_train.sft.trainer import SFTConfig, train_sft  # noqa: E402


def demonstration(graph: TaskGraph) -> SFTRow:
    """A reference conversation of one training task as an SFT row (the policy's own format:
    a call written as the model writes it, the tool's reply as a `tool` turn, then "Done.")."""
    task = turn_task(graph)
    messages = [ChatMessage(role="system", content=task.system)]
    for node_id, request in task.turns:
        call, done = reference_reply(graph, node_id)
        check = graph.node(node_id).checks[0]
        obs = json.dumps({"sku": check.where["sku"], "qty": check.value})
        messages += [
            ChatMessage(role="user", content=request),
            ChatMessage(role="assistant", content=call),
            ChatMessage(role="tool", content=obs),
            ChatMessage(role="assistant", content=done),
        ]
    return SFTRow(messages=messages, task_id=graph.id)


def sft_init(args: argparse.Namespace, tok: Any, rows: list[SFTRow], seed: int) -> tuple[Any, Any]:
    """The SFT initialisation of one seed: a fresh model trained by weft-train's SFT trainer."""
    shape = PolicyShape(
        hidden_size=args.hidden,
        intermediate_size=args.hidden * 3,
        num_hidden_layers=args.layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=args.hidden // 4,
    )
    model = build_model(
        len(tok), shape, seed=seed, eos_id=tok.eos_token_id, pad_id=tok.pad_token_id
    )
    report = train_sft(
        Policy(model, tok),
        rows,
        SFTConfig(lr=args.sft_lr, epochs=args.sft_epochs, batch_size=8, warmup_steps=10, seed=seed),
    )
    model.eval()
    return model, report


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
    results: dict[str, Any] = {
        "config": vars(args), "runs": [], "sft": [], "complete": False,
        "machine": f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start",
    }  # fmt: skip
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

        demos = [demonstration(g) for g in train_graphs]
        results["sft_data"] = {"rows": len(demos), "held_out_tasks_shown": 0}

        def executor_for(model: Any) -> LocalExecutor:
            return LocalExecutor(
                env_for, HFTokenGenerator(model, stop_ids=[end], pad_id=pad), template
            )

        # One SFT initialisation shared by every seed and method (the issue's "same SFT
        # initialisation"); seeds vary RL sampling and the held-out evaluation's sampling.
        t0 = time.time()
        torch.manual_seed(args.sft_seed)
        init, report = sft_init(args, tok, demos, args.sft_seed)
        results["sft_init"] = {
            "seed": args.sft_seed, "steps": report.steps, "rows": report.rows,
            "first_loss": report.losses[0], "final_loss": report.losses[-1],
            "seconds": round(time.time() - t0, 1),
        }  # fmt: skip
        print(
            f"SFT init: {report.steps} steps on {report.rows} rows, loss {report.losses[0]:.3f} "
            f"-> {report.losses[-1]:.3f}, {time.time() - t0:.0f} s",
            flush=True,
        )

        curves: dict[str, list[dict[str, Any]]] = {}
        for seed in args.seeds:
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
                    trainer, train_tasks, executor_for(policy), tree,
                    LoopSettings(method=method, tasks_per_step=args.tasks_per_step,
                                 token_budget=args.budget, eval_every=args.eval_every,
                                 concurrency=args.concurrency, seed=seed),
                    heldout=heldout, eval_tree=eval_tree, on_row=show,
                )  # fmt: skip
                rows = loop.rows
                curves[label] = rows
                if not any(r["seed"] == seed for r in results["sft"]):
                    # step 0 of a run is the SFT initialisation under this seed's evaluation
                    results["sft"].append(
                        {"seed": seed, "heldout_pass_rate": rows[0]["heldout_pass_rate"]}
                    )
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
                if args.json_path:  # what has run so far survives an interrupted benchmark
                    Path(args.json_path).write_text(json.dumps(results, indent=1, default=str))
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
    p.add_argument("--sft-epochs", type=int, default=6, help="SFT passes over the demonstrations")
    p.add_argument("--sft-lr", type=float, default=3e-3)
    p.add_argument("--sft-seed", type=int, default=0, help="seed of the one SFT initialisation")
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
    results["complete"] = True
    results["seconds"] = round(time.time() - t0, 1)
    s = results["summary"]
    rows = [
        [
            "SFT init (alone)",
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
