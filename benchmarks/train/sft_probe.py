"""Diagnostic probe for sft_learns (no server, no MegaMCP): train a from-scratch policy on teacher
rows and, every few epochs, greedy-generate the first assistant message of each turn of held-out
rows under teacher forcing; print the share whose tool call (name and arguments) equals the
teacher's. Cheap enough to watch the copy phase change; it is not a checkpoint pass rate.

    uv run python benchmarks/train/sft_probe.py --rows ROWS.jsonl --ntrain 84 --ntest 6 \\
        --merges 1000 --epochs 32 --every 4 --bs 2 --lr 5e-3 --preset mini --seed 1

ROWS.jsonl: SFT rows of the benchmark's composed tasks (`_env.teacher_rows` written with
`weft_train.sft.data.write_sft_jsonl`); held-out rows are a seeded random sample of them.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from typing import Any

import torch

from weft_train.policy import SamplingParams, parameter_count, parse_reply
from weft_train.sft.data import read_sft_jsonl
from weft_train.sft.masks import row_messages
from weft_train.sft.recipe import SFTRecipe, init_sft_policy
from weft_train.sft.trainer import SFTConfig, train_sft


def probe(policy: Any, rows: list[Any]) -> float:
    ok = n = 0
    for r in rows:
        msgs = row_messages(r)
        for i, m in enumerate(msgs):
            if m["role"] != "assistant" or msgs[i - 1]["role"] != "user":
                continue
            ids = policy.render(msgs[:i], r.tools)
            text = policy.generate(ids, SamplingParams(temperature=0, max_tokens=64)).text
            want = [
                (c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in m.get("tool_calls", [])
            ]
            try:
                got = [(c.name, json.loads(c.arguments)) for c in parse_reply(text).calls]
            except ValueError:
                got = None
            n += 1
            ok += got == want
    return ok / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", required=True)
    ap.add_argument("--ntrain", type=int, default=84)
    ap.add_argument("--ntest", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=32)
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--bs", type=int, default=2)
    ap.add_argument("--merges", type=int, default=1000)
    ap.add_argument("--preset", default="mini")
    a = ap.parse_args()
    torch.set_num_threads(1)
    rows, _ = read_sft_jsonl(a.rows)
    order = list(range(len(rows)))
    random.Random(123).shuffle(order)
    test = [rows[i] for i in order[-a.ntest :]]
    train = [rows[i] for i in order[: a.ntrain]]
    recipe = SFTRecipe(preset=a.preset, merges=a.merges)
    policy = init_sft_policy(train, tempfile.mkdtemp(), seed=a.seed, recipe=recipe)
    print(f"{parameter_count(policy.model):,} parameters", flush=True)
    done = 0
    while done < a.epochs:
        t = time.time()
        config = SFTConfig(
            lr=a.lr,
            epochs=a.every,
            batch_size=a.bs,
            warmup_steps=10 if done == 0 else 0,
            seed=a.seed * 1000 + done,
        )
        report = train_sft(policy, train, config)
        done += a.every
        loss = sum(report.losses[-5:]) / 5
        print(
            f"epoch {done} loss {loss:.3f} probe {probe(policy, test):.2f} ({time.time() - t:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
