"""`weft-tasks`: certify atomic-task libraries and compose grounded cross-MCP tasks.

    weft-tasks atomic BUNDLE... -o LIB/ [--rounds R] [--target ETA] [--model M] [--megamcp URL]
    weft-tasks compose LIB/ --n N [--profiles FILE] -o TASKS/ [--model M] [--megamcp URL] [--seed S]
    weft-tasks harness install hermes|openclaw [--home DIR] [--force]   external harnesses
    weft-tasks harness status [--home DIR]

Without --megamcp an embedded MegaMCP host is started whose data (registry, snapshots) lives in
OUT/.megamcp, so the snapshot URIs in the written tasks stay valid for a host started on it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from weft_core.exceptions import UserError, WeftRuntimeError
from weft_tasks.exceptions import TasksUserError
from weft_tasks.settings import TasksSettings, host_workers


def _model(spec: str | None) -> Any:
    if not spec:
        return None
    from weft_core.llm import make_chat_model

    return make_chat_model(spec)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--out", required=True, type=Path, help="output folder")
    p.add_argument(
        "--model",
        default=None,
        help="chat model for the LLM strategies ('openai:MODEL'); default: programmatic",
    )
    p.add_argument(
        "--megamcp",
        default=None,
        help="URL of a running MegaMCP host (default: start an embedded one)",
    )
    p.add_argument("--admin-token", default=None, help="admin token of --megamcp")
    p.add_argument(
        "--host-workers",
        type=int,
        default=None,
        help="worker processes of the embedded MegaMCP host (N > 1: a prefork host in its own "
        "process; 0: serve from this process; default: one per core, up to 4)",
    )
    p.add_argument(
        "--concurrency", type=int, default=None, help="MegaMCP groups run at the same time"
    )
    p.add_argument("--seed", type=int, default=None, help="random seed")
    p.add_argument(
        "--json", action="store_true", help="print the summary as JSON instead of tables"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars or tables")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="weft-tasks", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    a = sub.add_parser("atomic", help="certify atomic-task libraries from EnvBundles (Algorithm 1)")
    a.add_argument("bundles", nargs="+", help="bundle folders, or folders of bundles")
    a.add_argument(
        "--rounds", type=int, default=None, help="round budget R (first validation round included)"
    )
    a.add_argument("--target", type=float, default=None, help="target tool coverage eta in (0, 1]")
    a.add_argument(
        "--max-chain", type=int, default=None, help="longest tool chain of an atomic task"
    )
    _common(a)
    c = sub.add_parser("compose", help="compose grounded cross-MCP task graphs from libraries")
    c.add_argument("library", type=Path, help="library folder written by `weft-tasks atomic`")
    c.add_argument("--n", type=int, required=True, help="number of composed tasks")
    c.add_argument("--profiles", type=Path, default=None, help="profiles file (TOML or JSON)")
    c.add_argument("--surplus", type=float, default=None, help="capacity surplus rho")
    c.add_argument(
        "--distractors", type=int, default=None, help="distractor rows per table (round iii)"
    )
    c.add_argument(
        "--evidence",
        type=Path,
        default=None,
        help="execution evidence file (`weft-toolspace evidence`); with --witnessed-ranking",
    )
    c.add_argument(
        "--witnessed-ranking",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="rank combinations and tool chains the evidence witnessed higher (default: off)",
    )
    _common(c)
    _harness_parser(sub)
    return ap


# CLI option -> TasksSettings field
_OPTIONS = (
    ("rounds", "round_budget"),
    ("target", "target_coverage"),
    ("max_chain", "max_chain_length"),
    ("concurrency", "concurrency"),
    ("seed", "seed"),
    ("surplus", "surplus"),
    ("distractors", "distractors_per_table"),
    ("model", "model"),
    ("megamcp", "megamcp_url"),
    ("admin_token", "megamcp_admin_token"),
    ("host_workers", "host_workers"),
    ("evidence", "evidence"),
    ("witnessed_ranking", "witnessed_ranking"),
)


def _bad_setting(exc: ValidationError, name: Callable[[str], str]) -> TasksUserError:
    """One line for the first invalid setting; `name(field)` says where the value came from."""
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else "?"
    return TasksUserError(f"{name(field)}: {err['msg']} (got {err.get('input')!r})")


def _option(field: str) -> str:
    return next((f"--{a.replace('_', '-')}" for a, f in _OPTIONS if f == field), field)


def _settings(args: argparse.Namespace) -> TasksSettings:
    try:
        base = TasksSettings()
    except ValidationError as exc:
        raise _bad_setting(exc, lambda f: f"WEFT_TASKS_{f.upper()}") from None
    upd = {f: v for a, f in _OPTIONS if (v := getattr(args, a, None)) is not None}
    try:
        return TasksSettings.model_validate(base.model_dump() | upd)
    except ValidationError as exc:
        raise _bad_setting(exc, _option) from None


_SHORT = {
    "target coverage reached": "eta reached",
    "round budget exhausted": "budget spent",
    "no new candidates": "no new",
}


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


async def run_atomic(args: argparse.Namespace, settings: TasksSettings) -> int:
    from weft_core.console import ProgressTracker, progress, summary_table
    from weft_tasks.atomic.certify import MCPOutcome, bundle_dirs, certify_bundle
    from weft_tasks.atomic.megamcp import megamcp_client
    from weft_tasks.atomic.validation import MegaMCPValidator
    from weft_tasks.exceptions import BundleError, LibraryError

    dirs = bundle_dirs(args.bundles)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    llm = _model(settings.model)
    outcomes: list[MCPOutcome] = []
    async with megamcp_client(
        settings.megamcp_url,
        settings.megamcp_admin_token,
        data_dir=out / ".megamcp",
        workers=host_workers(settings),
        groups_on_tmpfs=settings.host_groups_tmpfs,
    ) as client:
        validator = MegaMCPValidator(client, concurrency=settings.concurrency)
        bar: ProgressTracker[Any]
        with progress(total=len(dirs), description="certify") as bar:
            for d in dirs:
                try:
                    lib = await certify_bundle(
                        d, client, out, llm=llm, settings=settings, validator=validator
                    )
                except (BundleError, LibraryError) as exc:
                    outcomes.append(MCPOutcome(bundle=str(d), error=str(exc)))
                else:
                    m = lib.manifest
                    outcomes.append(
                        MCPOutcome(
                            bundle=str(d),
                            mcp=m.mcp,
                            domain=m.domain,
                            tools=len(m.tools),
                            retained=len(m.tasks),
                            coverage=m.coverage,
                            rounds=len(m.rounds),
                            stop_reason=m.stop_reason,
                            failures=sum(r.failed for r in m.rounds),
                        )
                    )
                bar.advance()
    report = {
        "libraries": [o.model_dump() for o in outcomes],
        "certified": sum(1 for o in outcomes if o.error is None),
        "rejected": {o.bundle: o.error for o in outcomes if o.error},
    }
    from weft_core.models import atomic_write_text

    atomic_write_text(out / "atomic-report.json", json.dumps(report, indent=2))
    if args.json:
        _print_json(report)
    else:
        summary_table(
            "Atomic-task libraries",
            ["mcp", "domain", "tools", "tasks", "coverage", "rounds", "failed", "stop / error"],
            [
                [
                    o.mcp or Path(o.bundle).name,
                    o.domain or "-",
                    o.tools,
                    o.retained,
                    f"{o.coverage:.0%}",
                    o.rounds,
                    o.failures,
                    o.stop_reason or o.error or "",
                ]
                for o in outcomes
            ],
        )
    return 0 if report["certified"] else 1


async def run_compose(args: argparse.Namespace, settings: TasksSettings) -> int:
    from weft_tasks.exceptions import LibraryError

    if args.n < 1:
        raise TasksUserError(f"--n must be at least 1, got {args.n}")
    if not Path(args.library).is_dir():  # before OUT or a host exists (the rest: in load())
        raise LibraryError(f"{args.library}: no such library folder")
    out: Path = args.out
    fresh = [p for p in (out, out / ".megamcp") if not p.exists()]
    out.mkdir(parents=True, exist_ok=True)
    loaded: dict[str, Any] = {}

    def load() -> None:
        # Composition's imports (LangGraph, LangChain: seconds) and its inputs load while the
        # embedded host boots in its own process; a bad input stops that host and is reported.
        from weft_tasks.atomic.library import load_library
        from weft_tasks.compose.pipeline import witnessed_evidence
        from weft_tasks.compose.profiles import DEFAULT_PROFILES, load_profiles

        loaded["profiles"] = load_profiles(args.profiles) if args.profiles else DEFAULT_PROFILES
        witnessed_evidence(settings)
        loaded["libraries"] = load_library(args.library)
        loaded["llm"] = _model(settings.model)
        loaded["inputs_ok"] = True  # last: any failure above is a bad input

    try:
        async with _composing_host(settings, out, load) as client:
            return await _compose(args, settings, out, loaded, client)
    except BaseException:
        if "inputs_ok" not in loaded:  # a bad input: nothing was composed, leave no host folder
            for path in reversed(fresh):
                shutil.rmtree(path, ignore_errors=True)
        raise


def _composing_host(
    settings: TasksSettings, out: Path, load: Callable[[], None]
) -> contextlib.AbstractAsyncContextManager[Any]:
    from weft_tasks.atomic.megamcp import megamcp_client

    return megamcp_client(
        settings.megamcp_url,
        settings.megamcp_admin_token,
        data_dir=out / ".megamcp",
        workers=host_workers(settings),
        groups_on_tmpfs=settings.host_groups_tmpfs,
        while_starting=load,
    )


async def _compose(
    args: argparse.Namespace,
    settings: TasksSettings,
    out: Path,
    loaded: dict[str, Any],
    client: Any,
) -> int:
    from weft_core.console import ProgressTracker, progress
    from weft_tasks.compose.pipeline import Composer

    composer = Composer(
        loaded["libraries"],
        client,
        out,
        profiles=loaded["profiles"],
        llm=loaded["llm"],
        settings=settings,
    )
    bar: ProgressTracker[Any]
    with progress(total=args.n, description="compose") as bar:
        report = await composer.run(args.n, on_progress=bar.advance)
    if args.json:
        _print_json(report.model_dump(mode="json"))
    elif report.stats is not None:
        from weft_tasks.compose.stats import show

        show(report.stats, report.rejections)
        if report.diagnostics:
            print(f"why {len(report.diagnostics)} candidates were rejected: {out / 'corpus.json'}")
    return 0 if report.tasks else 1


def _harness_parser(sub: Any) -> None:
    from weft_tasks.harness.external.install import HARNESSES

    h = sub.add_parser("harness", help="install the external harnesses (Hermes, OpenClaw)")
    h.set_defaults(quiet=False, json=False)
    actions = h.add_subparsers(dest="action", required=True)
    i = actions.add_parser("install", help="install harnesses where Weft finds them")
    i.add_argument("names", nargs="+", choices=HARNESSES, help="harnesses to install")
    i.add_argument("--force", action="store_true", help="reinstall when already there")
    st = actions.add_parser("status", help="which harnesses are installed")
    for p in (i, st):
        p.add_argument("--home", type=Path, default=None, help="install folder (WEFT_HARNESS_HOME)")


def run_harness(args: argparse.Namespace) -> int:
    from weft_tasks.harness.external import HARNESSES, HarnessSettings, install, installed

    home = args.home or HarnessSettings().home
    if args.action == "status":
        for name in HARNESSES:
            path = installed(name, home)
            print(f"{name}: {path if path else 'not installed'}")
        return 0
    for name in args.names:
        print(f"{name}: {install(name, home, force=args.force)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from weft_core.console import get_console, set_quiet

    if args.quiet or args.json:
        set_quiet(True)
    try:
        if args.command == "harness":
            return run_harness(args)
        settings = _settings(args)
        if args.command == "atomic":
            return asyncio.run(run_atomic(args, settings))
        return asyncio.run(run_compose(args, settings))
    except UserError as exc:
        get_console().error(f"weft-tasks {args.command}: {exc}")
        return 2
    except WeftRuntimeError as exc:
        get_console().error(f"weft-tasks {args.command}: failed: {exc}")
        return 1
    except KeyboardInterrupt:
        get_console().error("weft-tasks: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
