"""The weft-envsynth command: `synth SPEC... -o OUT/`, `serve BUNDLE` and
`snapshot BUNDLE --state FILE -o OUT/`."""

from __future__ import annotations

import argparse
import json
import os
import socket
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from weft_core.console import ProgressTracker
from weft_core.exceptions import WeftError
from weft_envsynth.errors import BundleError, EnvSynthUserError
from weft_envsynth.pipeline import SynthResult, default_jobs, synthesize_files


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="weft-envsynth", description="Synthesize certified, stateful MCP environments."
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("synth", help="synthesize EnvBundles from MCP spec files")
    s.add_argument(
        "specs",
        nargs="+",
        help="spec files (Weft MCPSpec, MCP tools/list, OpenAI/BFCL functions, Toucan) or folders of *.json",
    )
    s.add_argument(
        "-o",
        "--out",
        required=True,
        help="output folder; bundles go to OUT/<slug>/, the report to OUT/envsynth-report.json",
    )
    s.add_argument(
        "--model",
        default=None,
        help="chat model for the LLM strategies, e.g. openai:gpt-4.1-mini (default: programmatic)",
    )
    s.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="revision rounds after the first validation (default 3)",
    )
    s.add_argument(
        "--jobs",
        type=int,
        default=1,
        help=f"specs synthesized in parallel processes (this machine: {default_jobs()})",
    )
    s.add_argument("--quiet", action="store_true", help="no progress bar or table; errors only")
    s.add_argument(
        "--max-spec-bytes",
        type=int,
        default=MAX_SPEC_BYTES,
        help=f"refuse spec files larger than this (default {MAX_SPEC_BYTES})",
    )
    v = sub.add_parser("serve", help="serve one bundle standalone over streamable HTTP")
    v.add_argument("bundle", help="an EnvBundle folder")
    v.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    v.add_argument("--port", type=int, default=8765, help="TCP port (default 8765; 0: a free one)")
    v.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host header name to accept besides localhost, 127.0.0.1, ::1 and the bound "
        "address (repeatable; fnmatch patterns; '*' turns the DNS-rebinding check off)",
    )
    v.add_argument(
        "--db",
        default=None,
        help="SQLite state file (default ./state.sqlite, created from seed.sqlite)",
    )
    v.add_argument(
        "--workspace", default=None, help="workspace folder for file tools (default ./workspace)"
    )
    v.add_argument(
        "--state",
        default=None,
        help="JSON state document loaded as the initial state (entity -> records, file trees); "
        "what does not fit the schema is listed on stderr",
    )
    n = sub.add_parser(
        "snapshot",
        help="build a MegaMCP initial state (DB + workspace) from a state document",
        description="Load a state document on top of the bundle's seed and write OUT/state.sqlite, "
        "OUT/workspace/ and OUT/state-report.json; store them with MegaMCP's put_snapshot and "
        "put_workspace (or call weft_envsynth.statesnapshot.snapshot_from_state with a client).",
    )
    n.add_argument("bundle", help="an EnvBundle folder")
    n.add_argument("--state", required=True, help="JSON state document")
    n.add_argument("-o", "--out", required=True, help="output folder (must not hold a state)")
    n.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when anything in the document did not fit the schema",
    )
    return p


# The largest of the 2,120 real specs in the corpus is 1.6 MB; a spec past this is refused
# before it is read (a 10 MB description once made a 201 MB bundle).
MAX_SPEC_BYTES = 4 * 1024 * 1024


def _spec_file(p: Path, max_bytes: int) -> Path:
    """`p` if it is a regular file within the size cap (a FIFO or device would block the
    reader forever); EnvSynthUserError naming the file otherwise."""
    try:
        st = p.stat()
    except OSError as exc:
        raise EnvSynthUserError(f"spec file {p}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise EnvSynthUserError(f"spec file {p} is not a regular file")
    if st.st_size > max_bytes:
        raise EnvSynthUserError(
            f"spec file {p} is {st.st_size} bytes, over the {max_bytes}-byte limit "
            "(--max-spec-bytes)"
        )
    return p


def _expand(specs: Sequence[str], max_bytes: int = MAX_SPEC_BYTES) -> list[Path]:
    out: list[Path] = []
    for s in specs:
        p = Path(s)
        if p.is_dir():
            out.extend(_spec_file(f, max_bytes) for f in sorted(p.glob("*.json")))
        elif p.exists() or p.is_symlink():
            out.append(_spec_file(p, max_bytes))
        else:
            raise EnvSynthUserError(f"spec file {s} does not exist")
    if not out:
        raise EnvSynthUserError("no spec files given")
    return out


def _not_loadable(r: SynthResult) -> bool:
    return r.status == "rejected" and (r.reason or "").startswith("spec not loadable")


def synth(args: argparse.Namespace) -> int:
    from weft_core.console import WeftConsole

    console = WeftConsole(quiet=args.quiet or None)
    if args.rounds < 0 or args.jobs < 1:
        raise EnvSynthUserError("--rounds must be >= 0 and --jobs >= 1")
    paths = _expand(args.specs, args.max_spec_bytes)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tracker: ProgressTracker[Any] = console.progress(total=len(paths), description="synthesizing")
    with tracker as bar:

        def done(_r: SynthResult) -> None:
            bar.advance()

        results = synthesize_files(
            paths, out, model=args.model, rounds=args.rounds, jobs=args.jobs, on_result=done
        )
    wall = time.perf_counter() - t0
    report = {
        "out": str(out),
        "model": args.model or "programmatic",
        "rounds": args.rounds,
        "wall_seconds": round(wall, 2),
        "specs": len(results),
        "certified": sum(r.status == "certified" for r in results),
        "partial": sum(r.status == "partial" for r in results),
        "rejected": sum(r.status == "rejected" for r in results),
        "failed": sum(r.status == "failed" for r in results),
        "tools_total": sum(r.tools_total for r in results),
        "tools_certified": sum(r.tools_certified for r in results),
        "results": [r.model_dump(mode="json") for r in results],
    }
    from weft_core.models import atomic_write_text

    atomic_write_text(out / "envsynth-report.json", json.dumps(report, indent=2))
    rows = [
        (
            r.slug or Path(r.source).name,
            r.status,
            f"{r.tools_certified}/{r.tools_total}",
            r.rounds_used,
            f"{r.seconds:.1f}s",
            (r.reason or next(iter(r.uncertified.values()), ""))[:70],
        )
        for r in results
    ]
    console.summary_table(
        "weft-envsynth synth",
        ["mcp", "status", "tools certified", "rounds", "time", "reason"],
        rows,
    )
    console.print(
        f"{report['certified']} certified, {report['partial']} partial, {report['rejected']} rejected, "
        f"{report['failed']} failed; {report['tools_certified']}/{report['tools_total']} tools; report: {out / 'envsynth-report.json'}"
    )
    for r in results:
        if r.status == "failed":
            console.error(f"weft-envsynth: {r.source}: synthesis crashed: {r.reason}")
        elif _not_loadable(r):
            console.error(f"weft-envsynth: {r.source}: {r.reason}")
    unloadable = sum(_not_loadable(r) for r in results)
    if unloadable == len(results):
        # Nothing was synthesized: an input error, not a run with rejections.
        console.error(f"weft-envsynth: none of the {len(results)} spec file(s) could be loaded")
        return 2
    return 0 if report["failed"] == 0 and unloadable == 0 else 1


def _listen(host: str, port: int) -> socket.socket:
    if not 0 <= port <= 65535:
        raise EnvSynthUserError(f"--port {port} is out of range (0-65535)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise EnvSynthUserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


def serve(args: argparse.Namespace) -> int:
    bundle = Path(args.bundle)
    if not bundle.is_dir() or not (bundle / "manifest.json").is_file():
        raise BundleError(
            f"{bundle} is not a certified EnvBundle (no manifest.json); run weft-envsynth synth first"
        )
    sock = _listen(args.host, args.port)
    if args.db:
        os.environ["WEFT_DB_PATH"] = str(Path(args.db).resolve())
    if args.workspace:
        os.environ["WEFT_WORKSPACE"] = str(Path(args.workspace).resolve())
    from weft_envsynth.loader import import_bundle

    if args.state:
        _load_state(bundle, Path(args.state), args)
    server = import_bundle(bundle).create_server()
    # DNS rebinding: fastmcp's Host/Origin guard in strict mode (every request is checked;
    # localhost names and the bound address are always allowed).
    server.run(
        transport="http",
        host=args.host,
        port=sock.getsockname()[1],
        sockets=[sock],
        host_origin_protection=True,
        allowed_hosts=args.allowed_host,
    )
    return 0


def _load_state(bundle: Path, state: Path, args: argparse.Namespace) -> None:
    import shutil

    from weft_envsynth.stateimport import import_state

    db = Path(args.db or "state.sqlite").resolve()
    ws = Path(args.workspace or "workspace").resolve()
    if not db.exists():
        shutil.copyfile(bundle / "seed.sqlite", db)
    if not ws.exists() and (bundle / "seed_workspace").is_dir():
        shutil.copytree(bundle / "seed_workspace", ws)
    report = import_state(bundle, state, db_path=db, workspace=ws)
    os.environ["WEFT_DB_PATH"], os.environ["WEFT_WORKSPACE"] = str(db), str(ws)
    rows = ", ".join(f"{k} {n}" for k, n in report.rows.items()) or "none"
    print(f"weft-envsynth: state {state}: rows {rows}; files {report.files}", file=sys.stderr)
    for line in report.not_imported:
        print(f"weft-envsynth: state {state}: not imported: {line}", file=sys.stderr)


def snapshot(args: argparse.Namespace) -> int:
    from weft_envsynth.statesnapshot import build_initial_state

    built = build_initial_state(args.bundle, Path(args.state), args.out)
    rows = ", ".join(f"{k} {n}" for k, n in built.report.rows.items()) or "none"
    print(
        f"weft-envsynth: state {args.state}: rows {rows}; files {built.report.files}; "
        f"db {built.db_path}; workspace {built.workspace or 'none (bundle seed)'}",
        file=sys.stderr,
    )
    for line in built.report.not_imported:
        print(f"weft-envsynth: state {args.state}: not imported: {line}", file=sys.stderr)
    return 1 if args.strict and built.report.not_imported else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"synth": synth, "serve": serve, "snapshot": snapshot}
    try:
        return commands[args.command](args)
    except WeftError as exc:
        print(f"weft-envsynth: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an output folder that is a file, a path without permission
        where = f" {exc.filename}:" if exc.filename else ""
        print(f"weft-envsynth:{where} {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
