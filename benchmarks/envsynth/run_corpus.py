"""Benchmark: environment synthesis over the Toucan corpus (2,120 real MCP servers), no model.

Prints a table: specs loaded, MCPs fully certified, tools certified / total, failures by reason,
wall time and MCPs per minute; writes every per-spec result to OUT/corpus-report.json.

    uv run python benchmarks/envsynth/run_corpus.py --jobs 2 [--limit N] [--out /tmp/envsynth-corpus]
        [--json FIGURES.json]

To measure other code with this script (a before/after pair), put that code's `src` folders first
on PYTHONPATH; bundles written before `tool_semantics` existed are counted from their entities.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from collections import Counter
from pathlib import Path

from weft_envsynth.pipeline import SynthResult, synthesize_files

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "toucan-mcp-servers"


def reason_class(text: str | None) -> str:
    """Group a free-text reason into a short class for the failure table."""
    if not text:
        return "unknown"
    t = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", text)
    t = re.sub(r"\(.*?\)", "", t)
    return " ".join(t.split()[:7])[:70]


class BundleShape:
    """What the written bundles model: lookups vs state, relations, tools touching several entities."""

    def __init__(self) -> None:
        self.bundles = 0
        self.with_relation = 0
        self.tools = 0
        self.lookups = 0
        self.computed = 0
        self.multi_entity = 0
        self.transitions = 0
        self.lifecycle = 0  # transitions that leave fewer states than "any other value"
        self.fields = 0
        self.fields_with_examples = 0  # EntityField.examples: 0 for bundles from before it

    def count(self, bundle: Path) -> None:
        try:
            entities = json.loads((bundle / "entities.json").read_text())
            contracts = json.loads((bundle / "contracts.json").read_text())["contracts"]
            validation = json.loads((bundle / "validation.json").read_text())
        except (OSError, ValueError, KeyError):
            return
        stateless = {e["name"] for e in entities.get("entities", []) if e.get("reference_data")}
        has_fk = any(
            f.get("foreign_key") for e in entities.get("entities", []) for f in e.get("fields", [])
        )
        self.bundles += 1
        fields = [f for e in entities.get("entities", []) for f in e.get("fields", [])]
        self.fields += len(fields)
        self.fields_with_examples += sum(bool(f.get("examples")) for f in fields)
        self.with_relation += bool(entities.get("relations") or has_fk)
        enums = {
            (e["name"], f["name"]): f.get("enum") or []
            for e in entities.get("entities", [])
            for f in e.get("fields", [])
        }
        semantics = validation.get("tool_semantics")
        for c in contracts:
            self.tools += 1
            kind = (semantics or {}).get(c["tool"], {}).get("kind")
            if semantics is None:  # bundles from before tool_semantics: a stateless entity = lookup
                kind = "lookup" if c.get("entity") in stateless else "other"
            self.lookups += kind == "lookup"
            self.computed += kind == "compute"
            touched = {x.split(".")[0] for x in [*c.get("reads", []), *c.get("writes", [])]}
            self.multi_entity += len(touched - {"workspace"}) > 1
            for tr in c.get("transitions", []):
                states = enums.get((tr.get("entity"), tr.get("field")), [])
                self.transitions += 1
                self.lifecycle += 0 < len(tr.get("from_values") or states) < len(states) - 1

    def figures(self) -> dict[str, float]:
        t, b = max(1, self.tools), max(1, self.bundles)
        return {
            "tools_stateless_lookup_pct": round(100 * self.lookups / t, 1),
            "tools_computed_pct": round(100 * self.computed / t, 1),
            "bundles_with_relation_pct": round(100 * self.with_relation / b, 1),
            "tools_touching_several_entities_pct": round(100 * self.multi_entity / t, 1),
            "transitions": self.transitions,
            "transitions_with_lifecycle_pct": round(
                100 * self.lifecycle / max(1, self.transitions), 1
            ),
            "entity_fields": self.fields,
            "entity_fields_with_examples": self.fields_with_examples,
        }

    def rows(self) -> list[tuple[str, str]]:
        f = self.figures()
        return [
            ("tools served as stateless lookups", f"{f['tools_stateless_lookup_pct']}%"),
            ("tools computed from their arguments", f"{f['tools_computed_pct']}%"),
            ("bundles with at least one relation", f"{f['bundles_with_relation_pct']}%"),
            ("tools touching more than one entity", f"{f['tools_touching_several_entities_pct']}%"),
            (
                "status transitions refusing some other state",
                f"{f['transitions_with_lifecycle_pct']}% of {f['transitions']}",
            ),
            (
                "entity fields with examples from the definitions",
                f"{self.fields_with_examples} / {self.fields}",
            ),
        ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--out", default="/dev/shm/envsynth-corpus")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="only N files (0 = all)")
    ap.add_argument("--offset", type=int, default=0, help="skip the first N files")
    ap.add_argument(
        "--keep", action="store_true", help="keep the bundles (default: delete after counting)"
    )
    ap.add_argument("--json", help="also write the table's figures (no per-spec results) here")
    args = ap.parse_args()
    files = sorted(p for p in Path(args.corpus).glob("*.json"))
    files = files[args.offset :]
    if args.limit:
        files = files[: args.limit]
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    done = [0]
    shape = BundleShape()
    t0 = time.perf_counter()

    partial = (out / "results.jsonl").open("a", encoding="utf-8")

    def progress(r: SynthResult) -> None:
        partial.write(r.model_dump_json() + "\n")  # survives an interrupted run
        partial.flush()
        done[0] += 1
        if done[0] % 50 == 0 or done[0] == len(files):
            el = time.perf_counter() - t0
            print(
                f"  {done[0]}/{len(files)} specs, {el:.0f}s, {done[0] / el * 60:.1f} MCPs/min",
                flush=True,
            )
        if r.bundle:
            shape.count(Path(r.bundle))
        if not args.keep and r.bundle:
            shutil.rmtree(r.bundle, ignore_errors=True)

    results = synthesize_files(files, out, jobs=args.jobs, rounds=3, on_result=progress)
    partial.close()
    wall = time.perf_counter() - t0
    status = Counter(r.status for r in results)
    loaded = sum(1 for r in results if not (r.reason or "").startswith("spec not loadable"))
    tools_total = sum(r.tools_total for r in results)
    tools_cert = sum(r.tools_certified for r in results)
    spec_reasons = Counter(
        reason_class(r.reason) for r in results if r.status in {"rejected", "failed"}
    )
    tool_reasons = Counter(reason_class(v) for r in results for v in r.uncertified.values())
    report = {
        "files": len(files),
        "loaded": loaded,
        "status": dict(status),
        "tools_total": tools_total,
        "tools_certified": tools_cert,
        "bundle_shape": shape.figures(),
        "wall_seconds": round(wall, 1),
        "mcps_per_minute": round(len(files) / wall * 60, 1),
        "spec_failure_reasons": spec_reasons.most_common(),
        "tool_failure_reasons": tool_reasons.most_common(),
        "results": [r.model_dump(mode="json") for r in results],
    }
    (out / "corpus-report.json").write_text(json.dumps(report, indent=1))
    if args.json:
        figures = {k: v for k, v in report.items() if k != "results"}
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    rows = [
        ("spec files", len(files)),
        ("specs loaded", loaded),
        ("MCPs fully certified", status.get("certified", 0)),
        ("MCPs partially certified", status.get("partial", 0)),
        ("MCPs rejected (with reason)", status.get("rejected", 0)),
        ("MCPs crashed (failed)", status.get("failed", 0)),
        (
            "tools certified / total (of loaded specs)",
            f"{tools_cert} / {tools_total} ({tools_cert / max(1, tools_total):.1%})",
        ),
        *shape.rows(),
        ("wall time", f"{wall:.0f} s with --jobs {args.jobs}"),
        ("MCPs per minute", f"{len(files) / wall * 60:.1f}"),
    ]
    w = max(len(k) for k, _ in rows)
    print("\nweft-envsynth corpus benchmark (programmatic strategies, no model)")
    for k, v in rows:
        print(f"  {k:<{w}}  {v}")
    print("\nspec rejections / failures by reason:")
    for k, v in spec_reasons.most_common(12):
        print(f"  {v:6d}  {k}")
    print("\nuncertified tools by reason:")
    for k, v in tool_reasons.most_common(15):
        print(f"  {v:6d}  {k}")
    print(f"\nper-spec results: {out / 'corpus-report.json'}")


if __name__ == "__main__":
    main()
