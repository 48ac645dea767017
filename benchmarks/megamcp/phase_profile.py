"""Where a MegaMCP host's CPU goes at a given number of concurrent sessions.

    uv run python benchmarks/megamcp/phase_profile.py --workers 0 --sessions 100,1000 \
        [--py-spy PREFIX] [--perf FILE] [--json FILE]

One host (`--workers 0`: one process; N: prefork), the registered `notes_crm` bundle of
`run.py`, then one concurrency phase of `run.py` per `--sessions` size (create a group, 10 calls,
close; all lifecycles at once). Per phase it prints the phase's figures and, for the host
process and each child, user and system CPU per call, the host's threads (and the busiest),
and its voluntary / involuntary context switches per call. Set any `WEFT_MEGAMCP_*` setting in
the environment to compare policies; run the settings alternately, as this machine is noisy.

`--py-spy PREFIX` records each phase with py-spy (`--gil --nonblocking`: the samples are the
GIL holder's, i.e. Python CPU; raw folded stacks in PREFIX-<sessions>-<i>.raw; with
`--py-spy-all-threads`, every thread py-spy does not judge idle, which counts a thread blocked
in fsync or a lock as busy: read those as wall time, not CPU). py-spy does not
see CPU spent outside the GIL (kernel time in file operations, futex waits of threads handing
the GIL over): `--perf FILE` records the host's first 30 s of the largest phase with Linux
`perf record -g` for that. Neither tool is a dependency: install them yourself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from harness import MegaServing
from run import _mega_lifecycle, concurrency_phase
from traces import build_bundle

_KEYS = ("sessions", "completed", "calls_per_s", "p50_ms", "p99_ms", "server_cpu_ms_per_call")


def _cpu(procs: list[psutil.Process]) -> dict[int, tuple[str, float, float]]:
    out = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = (" ".join(p.cmdline()[1:4])[:60], t.user, t.system)
        except psutil.NoSuchProcess:
            continue
    return out


def _threads(p: psutil.Process) -> dict[int, float]:
    return {t.id: t.user_time + t.system_time for t in p.threads()}


def _per_call(seconds: float, calls: int) -> float:
    return round(seconds / calls * 1000, 3)


def _tool(name: str, *args: str) -> subprocess.Popen[bytes]:
    exe = shutil.which(name)
    if exe is None:
        raise SystemExit(f"phase_profile: {name} is not on PATH")
    return subprocess.Popen([exe, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def profile(args: argparse.Namespace) -> list[dict[str, Any]]:
    sizes = [int(x) for x in args.sessions.split(",") if x]
    root = Path(tempfile.mkdtemp(prefix="megamcp-profile-"))
    mega = MegaServing(build_bundle(root / "bundle", args.seed_rows), root / "m", args.workers)
    await mega.start()
    assert mega.host is not None
    url, token = mega.host.url, mega.host.admin_token
    host = psutil.Process(mega.pid)
    rows = []

    async def lifecycle(trace: list[Any]) -> Any:
        return await _mega_lifecycle(url, token, mega.mcp_id, trace)

    try:
        for i, n in enumerate(sizes):
            spies = []
            if args.py_spy:
                out = f"{args.py_spy}-{n}-{i}.raw"
                spies.append(
                    _tool(
                        "py-spy",
                        "record",
                        "-r",
                        "100",
                        "--nonblocking",
                        *(["--gil"] if not args.py_spy_all_threads else []),
                        "-s",
                        "-f",
                        "raw",
                        "-o",
                        out,
                        "-p",
                        str(mega.pid),
                    )
                )
                await asyncio.sleep(1.0)
            perf = None
            if args.perf and n == max(sizes):
                perf = _tool(
                    "perf",
                    "record",
                    "-F",
                    "297",
                    "-g",
                    "-o",
                    args.perf,
                    "-p",
                    str(mega.pid),
                    "--",
                    "sleep",
                    "30",
                )
            before = _cpu([host, *host.children(recursive=True)])
            threads0, ctx0 = _threads(host), host.num_ctx_switches()
            row = await concurrency_phase(
                "MegaMCP", [mega.pid], lifecycle, n, args.calls, args.seed_rows, 30_000 + 5_000 * i
            )
            after = _cpu([host, *host.children(recursive=True)])
            threads1, ctx1 = _threads(host), host.num_ctx_switches()
            if perf is not None:
                perf.wait()
            for spy in spies:
                spy.send_signal(signal.SIGINT)
                spy.wait()
            calls = max(1, row["calls"])
            row["processes"] = {
                f"{pid} {name}": {
                    "user_ms_per_call": _per_call(
                        user - before.get(pid, (name, 0.0, 0.0))[1], calls
                    ),
                    "sys_ms_per_call": _per_call(
                        sys_ - before.get(pid, (name, 0.0, 0.0))[2], calls
                    ),
                }
                for pid, (name, user, sys_) in after.items()
            }
            spent = sorted(
                (t - threads0.get(tid, 0.0) for tid, t in threads1.items()), reverse=True
            )
            row["host_threads"] = len(threads1)
            row["busiest_threads_ms_per_call"] = [_per_call(x, calls) for x in spent[:6]]
            row["voluntary_switches_per_call"] = round((ctx1.voluntary - ctx0.voluntary) / calls, 2)
            row["involuntary_switches_per_call"] = round(
                (ctx1.involuntary - ctx0.involuntary) / calls, 2
            )
            rows.append(row)
            print(json.dumps({k: row[k] for k in _KEYS}), flush=True)
            for name, cpu in row["processes"].items():
                print(f"  {name}: {cpu}", flush=True)
            print(
                f"  host threads {row['host_threads']}, busiest (ms/call) "
                f"{row['busiest_threads_ms_per_call']}, switches/call voluntary "
                f"{row['voluntary_switches_per_call']} involuntary "
                f"{row['involuntary_switches_per_call']}",
                flush=True,
            )
    finally:
        await mega.stop()
        shutil.rmtree(root, ignore_errors=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=0, help="0: one process; N: N prefork workers")
    ap.add_argument("--sessions", default="100,1000", help="concurrent lifecycles per phase")
    ap.add_argument("--calls", type=int, default=10, help="tool calls per lifecycle")
    ap.add_argument("--seed-rows", type=int, default=2000, help="contacts in the seed DB")
    ap.add_argument("--py-spy", default="", help="record each phase with py-spy to PREFIX-*.raw")
    ap.add_argument(
        "--py-spy-all-threads",
        action="store_true",
        help="with --py-spy: sample every non-idle thread, not only the GIL holder",
    )
    ap.add_argument("--perf", default="", help="perf record the largest phase's first 30 s")
    ap.add_argument("--json", default="", help="also write the rows as JSON here")
    args = ap.parse_args()
    rows = asyncio.run(profile(args))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
