"""The `weft` command.

    weft run CONFIG [--model SPEC] [--out DIR] [--quiet] [--replay CALLS]
                                                           run the pipeline a TOML config describes
    weft demo [--model SPEC] [--out DIR] [--quiet]         run it on examples/ (no model needed)
    weft verify PATH                                       check a traces JSONL (or a run's OUT folder)
    weft report RUN_DIR [-o report.html]                   write the run's HTML report

`weft demo` ends by writing OUT/report.html and printing its path.

Errors of the input (a bad config, a spec that matches nothing) and of the run are printed as one
line; the exit code is 2 for input errors, 1 for runtime failures.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from weft.config import PipelineConfig, load_config
from weft.errors import ConfigError
from weft_core.exceptions import UserError, WeftError

DEMO_CONFIG = Path("examples") / "pipeline.toml"


def find_demo_config() -> Path:
    """examples/pipeline.toml in the current folder or any parent, else next to this checkout."""
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / DEMO_CONFIG).exists():
            return folder / DEMO_CONFIG
    checkout = Path(__file__).resolve().parents[4] / DEMO_CONFIG
    if checkout.exists():
        return checkout
    raise ConfigError(
        f"no {DEMO_CONFIG} here or above {here}; run `weft demo` inside a Weft checkout"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="weft",
        description="Weft: specs -> environments -> tasks -> rollouts -> verified traces.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_ in (
        ("run", "run the pipeline of a TOML config"),
        ("demo", "run the pipeline on examples/ with no model"),
    ):
        p = sub.add_parser(name, help=help_)
        if name == "run":
            p.add_argument("config", type=Path, help="pipeline TOML file")
        p.add_argument(
            "--model",
            default=None,
            help="chat model, e.g. 'openai:gpt-4o-mini' or 'vllm:Qwen/Qwen3-8B@http://host:8000/v1'",
        )
        p.add_argument(
            "--out", type=Path, default=None, help="output folder (overrides the config)"
        )
        p.add_argument("--quiet", action="store_true", help="no progress bars or tables")
        p.add_argument(
            "--replay",
            type=Path,
            default=None,
            metavar="CALLS",
            help="answer the model's calls from a recording (a run's OUT/model-calls.jsonl)",
        )
    v = sub.add_parser("verify", help="check traces: hashes, ledger agreement, verifier outcomes")
    v.add_argument("path", type=Path, help="traces.jsonl, or the OUT folder of a run")
    r = sub.add_parser("report", help="write one self-contained HTML report of a run folder")
    r.add_argument("run_dir", type=Path, help="the OUT folder of `weft run` / `weft demo`")
    r.add_argument(
        "-o", "--out", type=Path, default=None, help="HTML file (default RUN_DIR/report.html)"
    )
    return parser


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    from weft.report import load_run
    from weft.report.page import write_report_of

    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such run folder")
    run = load_run(run_dir)
    path = write_report_of(run, out)
    print(f"report: {path}")
    if run.problems:
        print(
            f"weft report: {len(run.problems)} thing(s) in {run_dir} could not be read; "
            "the report lists them",
            file=sys.stderr,
        )
    return path


def verify_traces(path: Path) -> int:
    """Print what a traces file holds and whether every trace verifies; 0 when all do. A run's
    OUT folder (a corpus, wherever it has been moved) is first checked as a whole: every
    reference resolves and every hash is re-checked (`weft.verify`)."""
    from weft.errors import ConfigError as _ConfigError
    from weft_core.console import summary_table
    from weft_tasks.rollout import TraceSink, trace_ledger_problems

    corpus_ok = True
    if path.is_dir():
        from weft.verify import traces_file, verify_corpus

        check = verify_corpus(path)
        if not check.checked:
            raise _ConfigError(f"{path}: not a Weft corpus (no weft-corpus.json, no stages/)")
        print(f"corpus: {check.root}")
        summary_table(
            "Corpus",
            ["artifacts", "checked"],
            [[k, n] for k, n in sorted(check.checked.items())],
        )
        for p in check.problems:
            print(p, file=sys.stderr)
        print(f"corpus: {len(check.problems)} problem(s) in references and hashes")
        corpus_ok = check.ok
        found = traces_file(check.root)
        if found is None:
            print("no traces yet")
            return 0 if corpus_ok else 1
        path = found
    if not path.exists():
        raise _ConfigError(f"{path}: no such traces file")
    traces, problems = TraceSink(path).load()
    rows = []
    bad = len(problems)
    for t in traces:
        issues = [] if t.failed_on_infrastructure else trace_ledger_problems(t.messages, t.ledger)
        verified = t.final is not None and all(s.outcome is not None for s in t.segments)
        if issues or not verified:
            bad += 1
        rows.append(
            [
                t.id,
                t.view,
                t.harness,
                f"{t.reward:.2f}",
                "yes" if verified else "no",
                len(issues),
                (t.error or "")[:60],
            ]
        )
    summary_table(
        "Traces", ["id", "view", "harness", "reward", "verified", "ledger issues", "error"], rows
    )
    from weft.summary import print_capture
    from weft_tasks.gateway import capture_stats

    print_capture(capture_stats(traces))
    for p in problems:
        print(p, file=sys.stderr)
    print(
        f"{len(traces) - (bad - len(problems))}/{len(traces)} traces verified; {len(problems)} unreadable line(s)"
    )
    return 0 if bad == 0 and corpus_ok else 1


def _configure(args: argparse.Namespace) -> PipelineConfig:
    path = args.config if args.command == "run" else find_demo_config()
    config = load_config(path)
    if args.out is not None:
        config.pipeline.out = str(args.out.resolve())
    elif args.command == "demo":
        config.pipeline.out = str((Path.cwd() / ".weft" / "demo").resolve())
    return config


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from weft_core.console import set_quiet

    if getattr(args, "quiet", False):
        set_quiet(True)

    def fail(message: str) -> None:
        # One unwrapped line, whatever the terminal width (rich would wrap it).
        print(" ".join(message.split()), file=sys.stderr)

    try:
        if args.command == "verify":
            return verify_traces(args.path)
        if args.command == "report":
            write_report(args.run_dir, args.out)
            return 0
        config = _configure(args)
        from weft.pipeline import run_pipeline
        from weft.summary import print_summary

        summary = asyncio.run(run_pipeline(config, model=args.model, replay=args.replay))
        print_summary(summary)
        if args.command == "demo":
            write_report(config.out_dir)
    except UserError as exc:
        fail(f"weft: {exc}")
        return 2
    except WeftError as exc:
        fail(f"weft: {exc}")
        return 1
    except Exception as exc:
        from weft_tasks.rollout import is_infrastructure_error

        if not is_infrastructure_error(exc):
            raise  # a bug: keep the traceback
        fail(f"weft: infrastructure failure ({type(exc).__name__}: {exc}); rerun to resume")
        return 1
    except KeyboardInterrupt:
        fail("weft: interrupted; rerun the same command to resume")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
