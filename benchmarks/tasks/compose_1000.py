"""Benchmark: certify atomic-task libraries from the example MCPs, then compose N grounded tasks.

    uv run python benchmarks/tasks/compose_1000.py [--n 1000] [--bundles DIR ...] [--out DIR]
        [--profiles FILE] [--json FILE] [--libraries DIR] [--before GIT_REF]

Without --bundles the example specs (examples/mcps/*.json) are synthesized with `weft-envsynth
synth` first; pass extra bundle folders (e.g. certified MCPs built from the real corpus) with
more --bundles. Everything runs for real: an embedded MegaMCP host, E2E validation of every
candidate atomic task, grounding, snapshot registration and the reference replay of every
composed task. Prints throughput, rejections by reason, the profile distribution against its
targets and MCP / domain coverage, then the corpus contents measured by `corpus_stats.py`
(data flow, length, contradictions, chains, grounding, views); writes OUT/benchmark.json and,
with --json FILE, the same figures to FILE.

Composition's cost is reported as wall time, process CPU seconds per task (all threads: the
embedded host runs in this process; on a machine shared with other work CPU is the figure that
compares) and MegaMCP admin requests per task. `--libraries DIR` composes from libraries an
earlier run certified (OUT/lib) instead of certifying again. `--before GIT_REF` composes the
same libraries with weft-tasks, weft-megamcp and weft-core as they were at GIT_REF (their
sources first on the import path of a child process) and then with this checkout, and prints
both side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

from weft_core.console import summary_table
from weft_tasks.atomic.certify import bundle_dirs, certify_bundle
from weft_tasks.atomic.library import load_library
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


def _cpu_seconds() -> float:
    """CPU of this process (every thread), its live descendants (a subprocess or prefork host
    and its workers) and its reaped children."""
    own = time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    live = 0.0
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            t = child.cpu_times()
            live += t.user + t.system
    return own + kids.ru_utime + kids.ru_stime + live


def _role(proc: psutil.Process) -> str:
    """Which part of the pipeline a process is: this client, the host (master), a prefork worker
    (forked by the master's fork server) or anything else it started (probes, sandboxes)."""
    if proc.pid == os.getpid():
        return "client"
    with contextlib.suppress(psutil.Error):
        cmd = " ".join(proc.cmdline())
        if "forkserver" in cmd:
            parent = proc.parent()
            return (
                "worker"
                if parent is not None and "forkserver" in " ".join(parent.cmdline())
                else "fork server"
            )
        if "weft_megamcp.cli serve" in cmd or "weft-megamcp serve" in cmd:
            return "host"
    return "other"


def _cpu_by_role() -> dict[int, tuple[str, float, float]]:
    """(role, user s, system s) of this process and every live descendant, by pid."""
    out: dict[int, tuple[str, float, float]] = {}
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            out[proc.pid] = (_role(proc), t.user, t.system)
    return out


def _cpu_split(before: dict[int, tuple[str, float, float]]) -> dict[str, dict[str, float]]:
    """CPU seconds spent since `before`, by role, user and system apart."""
    split: dict[str, dict[str, float]] = {}
    for pid, (role, user, system) in _cpu_by_role().items():
        _, u0, s0 = before.get(pid, (role, 0.0, 0.0))
        acc = split.setdefault(role, {"user": 0.0, "system": 0.0})
        acc["user"] = round(acc["user"] + user - u0, 2)
        acc["system"] = round(acc["system"] + system - s0, 2)
    return split


def _count_requests(client: Any) -> Counter[str]:
    """Counts the admin requests a `MegaMCPClient` makes, by method and route."""
    counts: Counter[str] = Counter()

    async def hook(response: Any) -> None:
        parts = response.request.url.path.split("/")
        # /admin/groups/<id>/batch -> /admin/groups/{id}/batch; /admin/mcps/<id>/snapshots too
        route = "/".join("{id}" if i == 3 and len(parts) > 4 else p for i, p in enumerate(parts))
        counts[f"{response.request.method} {route}"] += 1

    http = getattr(client, "_http", None)
    if http is not None:
        http.event_hooks["response"].append(hook)
    return counts


async def run(args: argparse.Namespace) -> dict[str, object]:
    out = Path(args.out or tempfile.mkdtemp(prefix="weft-bench-tasks-"))
    out.mkdir(parents=True, exist_ok=True)
    settings = TasksSettings(seed=args.seed, concurrency=args.concurrency)
    dirs: list[Path] = []
    if not args.libraries:
        sources = [Path(b) for b in args.bundles] or [synthesize_examples(out / "bundles")]
        dirs = bundle_dirs(sources)
    result: dict[str, object] = {"n": args.n, "bundles": len(dirs)}
    # `workers` only when asked: a --before child runs older weft-tasks without that argument
    workers = _host_workers(args.host_workers, settings)
    host: dict[str, Any] = {"workers": workers} if workers > 1 else {}
    # as `weft-tasks compose` runs it by default (a --before child's older code may not have it)
    if "groups_on_tmpfs" in inspect.signature(megamcp_client).parameters:
        host["groups_on_tmpfs"] = getattr(settings, "host_groups_tmpfs", False)
    async with megamcp_client(
        data_dir=out / ".megamcp", subprocess=args.subprocess_host, **host
    ) as client:
        t0 = time.perf_counter()
        validator = MegaMCPValidator(client, concurrency=settings.concurrency)
        libs = []
        if args.libraries:
            libs = load_library(args.libraries)
            if not (out / "lib").exists():  # corpus_stats reads the libraries from OUT/lib
                (out / "lib").symlink_to(Path(args.libraries).resolve())
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
        for lib in composer.libs:  # registration is per MCP, not per task: outside the timing
            await composer.registrar.mcp_id(lib.bundle.path)
        requests = _count_requests(client)
        c1, t1, by_role = _cpu_seconds(), time.perf_counter(), _cpu_by_role()
        report = await composer.run(args.n)
        t_compose, c_compose = time.perf_counter() - t1, _cpu_seconds() - c1
        cpu_split = _cpu_split(by_role)
    tasks = sum(len(lib.tasks) for lib in libs)
    done = max(1, len(report.tasks))
    result |= {
        "code": os.environ.get("WEFT_BENCH_CODE", "this checkout"),
        "compose_cpu_seconds": round(c_compose, 2),
        "cpu_seconds_per_task": round(c_compose / done, 3),
        # Where the CPU went: processes alive at the end of the window (a worker that exited
        # during it is only in the total).
        "cpu_by_process": cpu_split,
        "megamcp_requests": dict(requests),
        "requests_per_task": round(sum(requests.values()) / done, 2),
        "mcps": len(libs),
        "domains": len({lib.domain for lib in libs}),
        "atomic_tasks": tasks,
        "atomic_seconds": round(t_atomic, 2),
        "atomic_validation_calls": validator.calls,
        "composed": len(report.tasks),
        "compose_seconds": round(t_compose, 2),
        "tasks_per_second": round(len(report.tasks) / t_compose, 3) if t_compose else None,
        "tasks_per_minute": round(60 * len(report.tasks) / t_compose, 1) if t_compose else None,
        "tasks_per_cpu_minute": round(60 * len(report.tasks) / c_compose, 1) if c_compose else None,
        "rejections": report.rejections,
        "diagnostics": report.diagnostics,  # why each rejected candidate was rejected
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
    summary_table(
        "Composition cost",
        ["tasks/min (wall)", "CPU s / task", "tasks / CPU-min", "MegaMCP requests / task"],
        [
            [
                result["tasks_per_minute"],
                result["cpu_seconds_per_task"],
                result["tasks_per_cpu_minute"],
                result["requests_per_task"],
            ]
        ],
    )
    summary_table(
        "Composition CPU by process (seconds)",
        ["process", "user", "system", "per task"],
        [
            [role, v["user"], v["system"], round((v["user"] + v["system"]) / done, 4)]
            for role, v in sorted(cpu_split.items())
        ],
    )
    if report.stats:
        show(report.stats, report.rejections)
        summary_table(
            "Domain coverage", ["domain", "composed tasks"], list(report.stats.domains.items())
        )
    result["contents"] = contents = await corpus_stats.measure_async(out)
    corpus_stats.show(contents)
    (out / "benchmark.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"written: {out / 'benchmark.json'}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=str))
        print(f"written: {args.json}")
    return result


COST_FIELDS = (
    "composed",
    "compose_seconds",
    "tasks_per_minute",
    "cpu_seconds_per_task",
    "tasks_per_cpu_minute",
    "requests_per_task",
)


def _host_workers(asked: int | None, settings: Any) -> int:
    """The embedded host's workers: as asked, else what `weft-tasks compose` picks by default
    (code from before that default served from one process)."""
    if asked is not None:
        return asked
    try:
        from weft_tasks.settings import host_workers
    except ImportError:
        return 0
    return host_workers(settings)


def run_child(argv: list[str], label: str, src: Path | None) -> dict[str, Any]:
    """This benchmark in a child process; with `src`, the packages' sources there come first."""
    out = Path(tempfile.mkdtemp(prefix="weft-bench-tasks-cmp-"))
    env = {**os.environ, "WEFT_BENCH_CODE": label}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            str(src / "packages" / p / "src") for p in ("weft-core", "weft-megamcp", "weft-tasks")
        )
    subprocess.run(
        [sys.executable, __file__, *argv, "--out", str(out / "run"), "--json", str(out / "r.json")],
        env=env,
        check=True,
    )
    data: dict[str, Any] = json.loads((out / "r.json").read_text())
    return data


def compare(args: argparse.Namespace, argv: list[str]) -> None:
    """Compose the same libraries with the code at `args.before`, then with this checkout."""
    repo = ROOT
    lib = args.libraries
    if not lib:  # certify once with this checkout; both sides compose from those libraries
        first = run_child([*_strip(argv, ("--n",)), "--n", "0"], "certify", None)
        lib = str(Path(str(first["out"])) / "lib")
    src = Path(tempfile.mkdtemp(prefix="weft-bench-tasks-before-"))
    try:
        arch = subprocess.run(
            ["git", "-C", str(repo), "archive", args.before, "packages"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=arch, check=True)
        common = ["--libraries", lib, "--n", str(args.n), "--seed", str(args.seed)]
        workers = _host_workers(args.host_workers, TasksSettings())
        common += ["--host-workers", str(workers), "--concurrency", str(args.concurrency)]
        common += ["--subprocess-host"] if args.subprocess_host else []
        before = run_child(common, f"at {args.before}", src)
        after = run_child(common, "this checkout", None)
    finally:
        shutil.rmtree(src, ignore_errors=True)
    summary_table(
        f"Composition, {args.n} tasks: before ({args.before}) and after, one run",
        ["code", *COST_FIELDS],
        [[r["code"], *(r.get(f) for f in COST_FIELDS)] for r in (before, after)],
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"before": before, "after": after}, indent=2))
        print(f"written: {args.json}")


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
    ap.add_argument(
        "--host-workers",
        type=int,
        default=None,
        help="N > 1: a prefork MegaMCP host with up to N workers, in its own process; 0: in "
        "this process (default: as `weft-tasks compose`, one worker per core up to 4)",
    )
    ap.add_argument(
        "--libraries", default=None, help="compose from these certified libraries (OUT/lib)"
    )
    ap.add_argument(
        "--before", default=None, help="also compose with the code at this git ref, side by side"
    )
    args = ap.parse_args()
    if args.before:
        compare(args, _strip(sys.argv[1:], ("--before", "--json", "--out")))
        return
    asyncio.run(run(args))


def _strip(argv: list[str], options: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in options:
            skip = True
            continue
        if any(a.startswith(o + "=") for o in options):
            continue
        out.append(a)
    return out


if __name__ == "__main__":
    main()
