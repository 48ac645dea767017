"""Benchmark: certify atomic-task libraries from the example MCPs, then compose N grounded tasks.

    uv run python benchmarks/tasks/compose_1000.py [--n 1000] [--bundles DIR ...] [--out DIR]
        [--profiles FILE] [--json FILE]

Without --bundles the example specs (examples/mcps/*.json) are synthesized with `weft-envsynth
synth` first; pass extra bundle folders (e.g. certified MCPs built from the real corpus) with
more --bundles. Everything runs for real: an embedded MegaMCP host, E2E validation of every
candidate atomic task, grounding, snapshot registration and the reference replay of every
composed task. Prints throughput, rejections by reason, the profile distribution against its
targets and MCP / domain coverage, then the corpus contents measured by `corpus_stats.py`
(data flow, length, contradictions, chains, grounding, views); writes OUT/benchmark.json and,
with --json FILE, the same figures to FILE.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from weft_core.console import summary_table
from weft_tasks.atomic.certify import bundle_dirs, certify_bundle
from weft_tasks.atomic.megamcp import megamcp_client
from weft_tasks.atomic.validation import MegaMCPValidator
from weft_tasks.compose.pipeline import Composer
from weft_tasks.compose.profiles import DEFAULT_PROFILES, load_profiles
from weft_tasks.compose.stats import show
from weft_tasks.settings import TasksSettings

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus_stats  # noqa: E402


def synthesize_examples(dest: Path) -> Path:
    specs = sorted(str(p) for p in (ROOT / "examples" / "mcps").glob("*.json"))
    subprocess.run(
        ["weft-envsynth", "synth", *specs, "-o", str(dest)], check=True, stdout=subprocess.DEVNULL
    )
    return dest


async def run(args: argparse.Namespace) -> dict[str, object]:
    out = Path(args.out or tempfile.mkdtemp(prefix="weft-bench-tasks-"))
    out.mkdir(parents=True, exist_ok=True)
    sources = [Path(b) for b in args.bundles] or [synthesize_examples(out / "bundles")]
    dirs = bundle_dirs(sources)
    settings = TasksSettings(seed=args.seed, concurrency=args.concurrency)
    result: dict[str, object] = {"n": args.n, "bundles": len(dirs)}
    async with megamcp_client(data_dir=out / ".megamcp", subprocess=args.subprocess_host) as client:
        t0 = time.perf_counter()
        validator = MegaMCPValidator(client, concurrency=settings.concurrency)
        libs = []
        for d in dirs:
            try:
                libs.append(
                    await certify_bundle(
                        d, client, out / "lib", settings=settings, validator=validator
                    )
                )
            except Exception as exc:
                print(f"skipped {d.name}: {exc}", file=sys.stderr)
        t_atomic = time.perf_counter() - t0
        profiles = load_profiles(args.profiles) if args.profiles else DEFAULT_PROFILES
        composer = Composer(libs, client, out / "tasks", settings=settings, profiles=profiles)
        t1 = time.perf_counter()
        report = await composer.run(args.n)
        t_compose = time.perf_counter() - t1
    tasks = sum(len(lib.tasks) for lib in libs)
    result |= {
        "mcps": len(libs),
        "domains": len({lib.domain for lib in libs}),
        "atomic_tasks": tasks,
        "atomic_seconds": round(t_atomic, 2),
        "atomic_validation_calls": validator.calls,
        "composed": len(report.tasks),
        "compose_seconds": round(t_compose, 2),
        "tasks_per_second": round(len(report.tasks) / t_compose, 3) if t_compose else None,
        "tasks_per_minute": round(60 * len(report.tasks) / t_compose, 1) if t_compose else None,
        "rejections": report.rejections,
        "grounding": report.grounding,
        "stats": report.stats.model_dump() if report.stats else None,
        "out": str(out),
    }
    summary_table(
        "weft-tasks benchmark",
        ["stage", "items", "seconds", "per second"],
        [
            [
                "atomic certification",
                f"{tasks} tasks / {len(libs)} MCPs",
                round(t_atomic, 1),
                round(tasks / t_atomic, 2) if t_atomic else "-",
            ],
            [
                "composition + grounding + replay",
                f"{len(report.tasks)} / {args.n} tasks",
                round(t_compose, 1),
                result["tasks_per_second"],
            ],
        ],
    )
    if report.stats:
        show(report.stats, report.rejections)
        summary_table(
            "Domain coverage", ["domain", "composed tasks"], list(report.stats.domains.items())
        )
    result["contents"] = contents = corpus_stats.measure(out)
    corpus_stats.show(contents)
    (out / "benchmark.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"written: {out / 'benchmark.json'}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=str))
        print(f"written: {args.json}")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument(
        "--bundles",
        action="append",
        default=[],
        help="bundle folder or folder of bundles (repeatable)",
    )
    ap.add_argument("--out", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profiles", default=None, help="profiles file (TOML or JSON)")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument(
        "--subprocess-host", action="store_true", help="run the MegaMCP host in its own process"
    )
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
