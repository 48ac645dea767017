"""Load the whole Toucan MCP server corpus with weft_core.loaders and print what happened.

    uv run python benchmarks/core/load_corpus.py [FOLDER] [--repeat N]

FOLDER defaults to <repo>/../shared/data/toucan-mcp-servers. Prints the files loaded and
rejected (by reason), tools kept and rejected (by reason), the repairs made (by kind) and the
wall time of a full load (best and median of --repeat runs), next to the time spent only
reading and parsing the JSON, so the cost of normalization itself is visible.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from weft_core.loaders import SpecBatch, load_spec_files


def _repo_root() -> Path:
    for parent in Path(__file__).resolve().parents:
        if (parent / "uv.lock").exists() and (parent / "packages").is_dir():
            return parent
    return Path.cwd()


DEFAULT_CORPUS = _repo_root().parent / "shared" / "data" / "toucan-mcp-servers"


def _kind(message: str) -> str:
    """A message with its names, paths and numbers blanked, so equal kinds count together."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "…", message)
    text = re.sub(r"\[[^\]]*\]", "[…]", text)
    text = re.sub(r"\(root\)[^:]*:", "(root)…:", text)
    text = re.sub(r"#\d+", "#n", text)
    text = re.sub(r"\(\d+\)", "(n)", text)
    return text.removeprefix("tool …: ")


def _timed_load(folder: Path) -> tuple[SpecBatch, float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    batch = load_spec_files(folder)
    return batch, time.perf_counter() - start, time.process_time() - cpu


def _timed_parse(files: list[Path]) -> float:
    start = time.perf_counter()
    for f in files:
        json.loads(f.read_bytes())
    return time.perf_counter() - start


def _source_tools(path: Path) -> int:
    meta = json.loads(path.read_bytes()).get("metadata") or {}
    tools = (meta.get("server_info_crawled") or {}).get("tools") or []
    if not tools:
        tools = (meta.get("remote_server_response") or {}).get("tools") or []
    return len(tools) if isinstance(tools, list) else 0


def _counter_table(title: str, counts: Counter[str], limit: int) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("count", justify="right")
    table.add_column("reason")
    if not counts:
        table.add_row("0", "(none)")
    for reason, n in counts.most_common(limit):
        table.add_row(str(n), reason)
    if len(counts) > limit:
        table.add_row("…", f"{len(counts) - limit} more kinds")
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repeat", type=int, default=3, help="Full loads to time (default 3).")
    args = parser.parse_args(argv)
    console = Console()
    folder: Path = args.folder
    if not folder.is_dir():
        console.print(f"[red]error:[/] {folder} is not a folder (pass the corpus folder)")
        return 2
    files = sorted(folder.glob("*.json"))

    times: list[float] = []
    cpu_times: list[float] = []
    batch = SpecBatch()
    for _ in range(max(1, args.repeat)):
        batch, seconds, cpu_seconds = _timed_load(folder)
        times.append(seconds)
        cpu_times.append(cpu_seconds)
    parse_times = [_timed_parse(files) for _ in range(max(1, args.repeat))]

    source_tools = sum(_source_tools(f) for f in files)
    kept = sum(len(item.spec.tools) for item in batch.loaded)
    rejected_tools = Counter(_kind(r.reason) for item in batch.loaded for r in item.rejected_tools)
    failed = Counter(_kind(e.reason) for e in batch.failed)
    tools_in_failed = sum(_source_tools(Path(e.source)) for e in batch.failed if e.source)
    warnings = Counter(_kind(w) for item in batch.loaded for w in item.warnings)
    repeats = sum(1 for item in batch.loaded for w in item.warnings if "identical repeat" in w)
    renamed = sum(1 for item in batch.loaded for t in item.spec.tools if t.original_name)
    domains = Counter(item.spec.domain for item in batch.loaded)

    summary = Table(title=f"Spec loading: {folder}", title_justify="left")
    summary.add_column("measure")
    summary.add_column("value", justify="right")
    rows = [
        ("files", len(files)),
        ("loaded", len(batch.loaded)),
        ("rejected files", len(batch.failed)),
        ("tools in source files", source_tools),
        ("tools kept", kept),
        ("tools rejected (in loaded files)", sum(rejected_tools.values())),
        ("tools in rejected files", tools_in_failed),
        ("identical repeats dropped", repeats),
        ("tools renamed (original_name kept)", renamed),
        ("repairs reported (warnings)", sum(warnings.values())),
        ("domains", len(domains)),
        (f"wall time, full load (best of {len(times)})", f"{min(times):.2f} s"),
        ("wall time, full load (median)", f"{statistics.median(times):.2f} s"),
        ("CPU time, full load (best)", f"{min(cpu_times):.2f} s"),
        ("  of which read + json.loads only (best)", f"{min(parse_times):.2f} s"),
        ("files per second (best)", f"{len(files) / min(times):.0f}"),
    ]
    for name, value in rows:
        summary.add_row(name, str(value))
    console.print(summary)
    console.print(_counter_table("Rejected files by reason", failed, 10))
    console.print(_counter_table("Rejected tools by reason", rejected_tools, 10))
    console.print(_counter_table("Repairs by kind", warnings, 15))
    return 0


if __name__ == "__main__":
    sys.exit(main())
