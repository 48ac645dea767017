"""Benchmark: behavioural fidelity of synthesized environments against a public benchmark's real tools.

Input nobody here wrote: the Berkeley Function Calling Leaderboard's multi-turn suite (PyPI
`bfcl-eval`, Apache-2.0): per tool set its function docs (`multi_turn_func_doc/*.json`), the 200
`multi_turn_base` entries with their initial state (`initial_config`) and gold tool calls
(`possible_answer`), and the real Python backends the leaderboard executes them on
(`func_source_code/*.py`).

Per tool set, the function docs are the only input to `weft_envsynth.synthesize_spec` (no model).
Each entry's gold calls of that tool set then run twice from the same initial state: on the real
backend (loaded with `initial_config`) and on the synthesized bundle (its seed, plus the entry's
`initial_config` imported as a state document when `weft_envsynth.import_state` exists). Per tool
set the table reports, over gold calls:

* accepted: the synthesized tool returned no error, of the calls the real tool answered without one;
* state changes reproduced: the synthesized DB or workspace changed, of the calls that changed the
  real backend's state;
* non-empty: the synthesized result is not empty (not `[]`, `{}`, `""`, null), of accepted calls;
* values matching: the share of the real result's values (leaves: strings, numbers) that also
  occur in the synthesized result, averaged over accepted calls whose real result has values.

    uv run python benchmarks/envsynth/fidelity.py [--limit N] [--json FILE] [--bfcl WHEEL_OR_DIR]

The wheel is fetched once with `pip download bfcl-eval==2026.3.23 --no-deps` into
`~/.cache/weft/bfcl` (or pass `--bfcl`); it is read, never installed (its own dependencies are
heavy). The classes run here need only the standard library and mpmath.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import copy
import inspect
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BFCL_VERSION = "2026.3.23"
CACHE = Path.home() / ".cache" / "weft" / "bfcl"
PREFIX = "bfcl_eval/eval_checker/multi_turn_eval/func_source_code"
# Tool set (BFCL class) -> (function doc file, backend module).
TOOL_SETS = {
    "GorillaFileSystem": ("gorilla_file_system.json", "gorilla_file_system"),
    "MathAPI": ("math_api.json", "math_api"),
    "MessageAPI": ("message_api.json", "message_api"),
    "TwitterAPI": ("posting_api.json", "posting_api"),
    "TicketAPI": ("ticket_api.json", "ticket_api"),
    "TradingBot": ("trading_bot.json", "trading_bot"),
    "TravelAPI": ("travel_booking.json", "travel_booking"),
    "VehicleControlAPI": ("vehicle_control.json", "vehicle_control"),
}


# ---------------------------------------------------------------------------------------- data


def bfcl_root(given: str | None) -> Path:
    """The extracted bfcl-eval wheel (fetched into the cache with pip when nothing is given)."""
    if given:
        p = Path(given)
        if p.is_dir():
            return p
        if p.suffix == ".whl":
            return _extract(p)
        raise SystemExit(f"--bfcl {given}: not a bfcl-eval wheel or extracted folder")
    wheels = sorted(CACHE.glob(f"bfcl_eval-{BFCL_VERSION}-*.whl"))
    if not wheels:
        CACHE.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip"] if _has_pip() else ["pip"]
        cmd = [*pip, "download", f"bfcl-eval=={BFCL_VERSION}", "--no-deps", "-d", str(CACHE)]
        if subprocess.run(cmd, check=False).returncode != 0:
            raise SystemExit(
                f"could not fetch bfcl-eval: run `{' '.join(cmd[-6:])}` or pass --bfcl"
            )
        wheels = sorted(CACHE.glob(f"bfcl_eval-{BFCL_VERSION}-*.whl"))
    return _extract(wheels[0])


def _has_pip() -> bool:
    return (
        subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode
        == 0
    )


def _extract(wheel: Path) -> Path:
    dest = CACHE / wheel.stem
    if not (dest / PREFIX).is_dir():
        with zipfile.ZipFile(wheel) as z:
            z.extractall(dest)
    return dest


def load_entries(root: Path) -> list[dict[str, Any]]:
    data = root / "bfcl_eval" / "data"
    questions = [
        json.loads(line)
        for line in (data / "BFCL_v4_multi_turn_base.json").read_text().splitlines()
        if line.strip()
    ]
    answers = {
        a["id"]: a["ground_truth"]
        for a in (
            json.loads(line)
            for line in (data / "possible_answer" / "BFCL_v4_multi_turn_base.json")
            .read_text()
            .splitlines()
            if line.strip()
        )
    }
    for q in questions:
        q["ground_truth"] = answers[q["id"]]
    return questions


def func_docs(root: Path, tool_set: str) -> list[dict[str, Any]]:
    path = root / "bfcl_eval" / "data" / "multi_turn_func_doc" / TOOL_SETS[tool_set][0]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain call: {text}")
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    return node.func.id, args, kwargs


# -------------------------------------------------------------------------------- real backend


def real_class(root: Path, tool_set: str) -> type:
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    import importlib

    mod = importlib.import_module(f"{PREFIX.replace('/', '.')}.{TOOL_SETS[tool_set][1]}")
    cls: type = getattr(mod, tool_set)
    return cls


def canon(obj: Any, depth: int = 0) -> Any:
    """A comparable picture of a backend's state (object graphs without parent back-links)."""
    if depth > 40:
        return "..."
    if isinstance(obj, dict):
        return {str(k): canon(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [canon(v, depth + 1) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if hasattr(obj, "__dict__"):
        return {k: canon(v, depth + 1) for k, v in vars(obj).items() if k != "parent"}
    return repr(obj)


def is_error_result(result: Any) -> bool:
    return isinstance(result, dict) and set(result) == {"error"}


# ------------------------------------------------------------------------------------ metrics


def leaves(obj: Any) -> list[str]:
    """The values a caller reads in a result: strings and numbers, normalized for comparison."""
    out: list[str] = []
    if isinstance(obj, dict):
        for v in obj.values():
            out += leaves(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            out += leaves(v)
    elif isinstance(obj, bool) or obj is None:
        pass
    elif isinstance(obj, (int, float)):
        out.append(f"{round(float(obj), 2):g}")
    elif isinstance(obj, str) and obj.strip():
        out.append(" ".join(obj.split()).lower())
    return out


def value_recall(real: Any, synth: Any) -> float | None:
    want = leaves(real)
    if not want:
        return None
    have = set(leaves(synth))
    joined = " | ".join(have)
    hit = sum(1 for w in want if w in have or (len(w) >= 4 and w in joined))
    return hit / len(want)


def is_empty(obj: Any) -> bool:
    """No content: null, "", [], {}, a one-field wrapper of those, or a page whose lists are all
    empty and whose other fields are only counts (`{"items": [], "count": 0}`)."""
    if obj is None or obj == "" or obj == [] or obj == {}:
        return True
    if isinstance(obj, dict):
        if len(obj) == 1:
            return is_empty(next(iter(obj.values())))
        lists = [v for v in obj.values() if isinstance(v, list)]
        rest = [v for v in obj.values() if not isinstance(v, list)]
        return bool(lists) and not any(lists) and all(not isinstance(v, str) or not v for v in rest)
    return False


@dataclass
class Tally:
    calls: int = 0
    real_ok: int = 0
    accepted: int = 0
    real_changes: int = 0
    changes_reproduced: int = 0
    nonempty: int = 0
    recall_sum: float = 0.0
    recall_n: int = 0
    per_tool: dict[str, list[int]] = field(default_factory=dict)  # tool -> [real_ok, accepted]
    errors: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        def pct(a: float, b: int) -> float | None:
            return round(100.0 * a / b, 1) if b else None

        return {
            "gold_calls": self.calls,
            "real_ok": self.real_ok,
            "accepted_pct": pct(self.accepted, self.real_ok),
            "real_state_changes": self.real_changes,
            "state_changes_reproduced_pct": pct(self.changes_reproduced, self.real_changes),
            "nonempty_pct": pct(self.nonempty, self.accepted),
            "values_matching_pct": pct(self.recall_sum, self.recall_n),
        }


# ------------------------------------------------------------------------------- synthesized


def synthesize(tool_set: str, docs: list[dict[str, Any]], out: Path) -> Path:
    from weft_core.loaders import load_spec_file
    from weft_envsynth import synthesize_spec

    src = out / f"{tool_set}.json"
    src.write_text(json.dumps(docs))
    spec = load_spec_file(src, name=tool_set).spec
    res = synthesize_spec(spec, out, bundle_name=tool_set.lower())
    if res.bundle is None:
        raise SystemExit(f"{tool_set}: synthesis produced no bundle ({res.reason})")
    return Path(res.bundle)


def _state_importer() -> Any:
    try:
        from weft_envsynth import import_state  # type: ignore[attr-defined]
    except ImportError:
        return None
    return import_state


def read_tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of the session DB (a bundle may keep session state, e.g. the current
    directory, outside its entity tables)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith(("sqlite_", "alembic_"))
        ]
        return {
            n: sorted(map(tuple, conn.execute(f'SELECT * FROM "{n}"')), key=repr) for n in names
        }
    finally:
        conn.close()


async def replay_entry(
    bundle: Path,
    server_mod: Any,
    model: Any,
    calls: list[tuple[str, dict[str, Any]]],
    initial: dict[str, Any],
    real_outcomes: list[tuple[bool, bool, Any]],
    tally: Tally,
) -> None:
    """Run `calls` on a fresh session of the bundle and score them against the real outcomes."""
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth._internal.dbstate import read_workspace

    tmp = Path(
        tempfile.mkdtemp(
            prefix="weft-fidelity-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None
        )
    )
    sid = f"fidelity-{tmp.name}"
    try:
        db = tmp / "state.sqlite"
        shutil.copyfile(bundle / "seed.sqlite", db)
        ws = tmp / "workspace"
        if (bundle / "seed_workspace").is_dir():
            shutil.copytree(bundle / "seed_workspace", ws)
        else:
            ws.mkdir()
        importer = _state_importer()
        if importer is not None and initial:
            importer(bundle, initial, db_path=db, workspace=ws)
        with bind_session(SessionBinding(session_id=sid, db_path=db, workspace=ws)):
            server = server_mod.create_server()
            async with Client(server) as client:
                for (name, args), (real_ok, real_changed, real_result) in zip(
                    calls, real_outcomes, strict=True
                ):
                    before = (read_tables(db), read_workspace(ws))
                    try:
                        res = await client.call_tool(name, args, raise_on_error=False)
                        err = bool(res.is_error)
                        data = res.structured_content
                        if data is None:
                            text = " ".join(getattr(c, "text", "") for c in res.content or [])
                            try:
                                data = json.loads(text)
                            except ValueError:
                                data = text
                    except Exception as exc:  # an unknown tool or a refused schema
                        err, data = True, f"{type(exc).__name__}: {exc}"
                    after = (read_tables(db), read_workspace(ws))
                    tally.calls += 1
                    per = tally.per_tool.setdefault(name, [0, 0])
                    if not real_ok:
                        continue
                    tally.real_ok += 1
                    per[0] += 1
                    if real_changed:
                        tally.real_changes += 1
                        if after != before:
                            tally.changes_reproduced += 1
                    if err:
                        if len(tally.errors) < 400:
                            tally.errors.append(f"{name}({args}) -> {str(data)[:160]}")
                        continue
                    tally.accepted += 1
                    per[1] += 1
                    if not is_empty(data):
                        tally.nonempty += 1
                    r = value_recall(real_result, data)
                    if r is not None:
                        tally.recall_sum += r
                        tally.recall_n += 1
    finally:
        release_session(sid)
        shutil.rmtree(tmp, ignore_errors=True)


def run_tool_set(
    root: Path, tool_set: str, entries: list[dict[str, Any]], out: Path
) -> tuple[Tally, dict[str, Any]]:
    from weft_core.models import EntityModel
    from weft_envsynth.loader import import_bundle, unload_bundle

    docs = func_docs(root, tool_set)
    names = {d["name"] for d in docs}
    t0 = time.perf_counter()
    bundle = synthesize(tool_set, docs, out)
    synth_s = time.perf_counter() - t0
    manifest = json.loads((bundle / "manifest.json").read_text())
    model = EntityModel.model_validate(json.loads((bundle / "entities.json").read_text()))
    cls = real_class(root, tool_set)
    server_mod = import_bundle(bundle)
    tally = Tally()
    try:
        for e in entries:
            if tool_set not in e["involved_classes"]:
                continue
            inst = cls()
            initial = copy.deepcopy(e["initial_config"].get(tool_set, {}))
            if hasattr(inst, "_load_scenario"):
                inst._load_scenario(copy.deepcopy(initial), long_context=False)
            calls: list[tuple[str, dict[str, Any]]] = []
            outcomes: list[tuple[bool, bool, Any]] = []
            for turn in e["ground_truth"]:
                for text in turn:
                    fname, pos, kw = parse_call(text)
                    if fname not in names:
                        continue
                    method = getattr(inst, fname)
                    params = list(inspect.signature(method).parameters)
                    kwargs = {**dict(zip(params, pos, strict=False)), **kw}
                    before = canon(inst)
                    try:
                        result = method(**copy.deepcopy(kwargs))
                        ok = not is_error_result(result)
                    except Exception as exc:  # a real tool raising is a real error
                        result, ok = {"error": str(exc)}, False
                    changed = canon(inst) != before
                    calls.append((fname, kwargs))
                    outcomes.append((ok, changed, canon(result)))
            if calls:
                asyncio.run(
                    replay_entry(bundle, server_mod, model, calls, initial, outcomes, tally)
                )
    finally:
        unload_bundle(server_mod)
    info = {
        "tools": len(docs),
        "tools_certified": sum(1 for t in manifest.get("tools", []) if t.get("certified")),
        "synthesis_s": round(synth_s, 2),
    }
    return tally, info


# -------------------------------------------------------------------------------------- main


COLS = [
    ("tool set", 18),
    ("gold", 5),
    ("real ok", 7),
    ("accepted%", 9),
    ("changes", 7),
    ("reprod.%", 8),
    ("nonempty%", 9),
    ("values%", 7),
]
KEYS = [
    "gold_calls",
    "real_ok",
    "accepted_pct",
    "real_state_changes",
    "state_changes_reproduced_pct",
    "nonempty_pct",
    "values_matching_pct",
]


def measure(root: Path, entries: list[dict[str, Any]], sets: list[str]) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="weft-fidelity-bundles-"))
    rows: dict[str, dict[str, Any]] = {}
    errors: dict[str, list[str]] = {}
    total = Tally()
    t0 = time.perf_counter()
    try:
        for ts in sets:
            tally, info = run_tool_set(root, ts, entries, out)
            rows[ts] = {**info, **tally.row()}
            errors[ts] = tally.errors
            for k in ("calls", "real_ok", "accepted", "real_changes", "changes_reproduced"):
                setattr(total, k, getattr(total, k) + getattr(tally, k))
            total.nonempty += tally.nonempty
            total.recall_sum += tally.recall_sum
            total.recall_n += tally.recall_n
            print(f"  {ts}: done", file=sys.stderr)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    rows["ALL"] = total.row()
    return {"tool_sets": rows, "errors": errors, "wall_s": round(time.perf_counter() - t0, 1)}


def print_table(title: str, rows: dict[str, dict[str, Any]]) -> None:
    print(title)
    print(" ".join(f"{c:>{w}}" for c, w in COLS))
    for ts, r in rows.items():
        vals = [ts, *(r[k] for k in KEYS)]
        print(
            " ".join(
                f"{'-' if v is None else v!s:>{w}}" for v, (_, w) in zip(vals, COLS, strict=True)
            )
        )


def print_side_by_side(before: dict[str, Any], after: dict[str, Any]) -> None:
    cols = ["accepted_pct", "state_changes_reproduced_pct", "nonempty_pct", "values_matching_pct"]
    heads = ["accepted%", "reprod.%", "nonempty%", "values%"]
    print(f"{'tool set':>18} {'gold':>5} " + " ".join(f"{h + ' before->after':>22}" for h in heads))
    for ts, a in after.items():
        b = before.get(ts, {})
        cells = []
        for k in cols:
            bv, av = b.get(k), a.get(k)
            cells.append(f"{'-' if bv is None else bv!s:>9} -> {'-' if av is None else av!s:<9}")
        print(f"{ts:>18} {a['gold_calls']!s:>5} " + " ".join(f"{c:>22}" for c in cells))


def run_before(ref: str, argv: list[str]) -> dict[str, Any]:
    """Measure weft_envsynth as it was at git `ref`, in a worker whose import path puts that
    version's sources first (the benchmark itself, the data and weft_core stay the same)."""
    repo = Path(__file__).resolve().parents[2]
    src = Path(tempfile.mkdtemp(prefix="weft-fidelity-before-"))
    try:
        arch = subprocess.run(
            ["git", "-C", str(repo), "archive", ref, "packages/weft-envsynth/src"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=arch, check=True)
        out = src / "before.json"
        env = {
            **os.environ,
            "PYTHONPATH": str(src / "packages/weft-envsynth/src"),
            "WEFT_FIDELITY_LABEL": f"weft-envsynth at {ref}",
        }
        subprocess.run([sys.executable, __file__, *argv, "--json", str(out)], env=env, check=True)
        data: dict[str, Any] = json.loads(out.read_text())
        return data
    finally:
        shutil.rmtree(src, ignore_errors=True)


def main() -> None:
    if "--real-servers" in sys.argv[1:]:
        # The benchmark against the four real offline MCP servers lives in its own module.
        sys.path.insert(0, str(Path(__file__).parent))
        import fidelity_real

        fidelity_real.main(sys.argv[1:])
        return
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--bfcl", default=None, help="bfcl-eval wheel or extracted folder")
    ap.add_argument("--limit", type=int, default=0, help="only the first N entries (0 = all 200)")
    ap.add_argument("--tool-set", action="append", default=[], help="only these tool sets")
    ap.add_argument("--json", default=None, help="also write the figures as JSON to FILE")
    ap.add_argument("--errors", default=None, help="write refused gold calls per tool set to FILE")
    ap.add_argument(
        "--before",
        default=None,
        metavar="GIT_REF",
        help="also measure weft-envsynth at GIT_REF in the same run and print both side by side",
    )
    args = ap.parse_args()
    root = bfcl_root(args.bfcl)
    entries = load_entries(root)
    if args.limit:
        entries = entries[: args.limit]
    sets = args.tool_set or list(TOOL_SETS)
    import weft_envsynth

    before = None
    if args.before:
        passthrough = ["--bfcl", str(root), "--limit", str(args.limit)]
        for ts in args.tool_set:
            passthrough += ["--tool-set", ts]
        before = run_before(args.before, passthrough)
    now = measure(root, entries, sets)
    title = f"BFCL multi_turn_base ({len(entries)} entries), bfcl-eval {BFCL_VERSION}, no model"
    if before is not None:
        print_table(f"\n{title}: weft-envsynth at {args.before}", before["tool_sets"])
    print_table(
        f"\n{title}: {os.environ.get('WEFT_FIDELITY_LABEL', 'weft-envsynth now')} "
        f"({Path(weft_envsynth.__file__).parent})",
        now["tool_sets"],
    )
    if before is not None:
        print("\nside by side (before -> after)")
        print_side_by_side(before["tool_sets"], now["tool_sets"])
    print(f"wall {now['wall_s']:.0f} s")
    if args.json:
        doc = {
            "bfcl_eval": BFCL_VERSION,
            "entries": len(entries),
            "wall_s": now["wall_s"],
            "tool_sets": now["tool_sets"],
        }
        if before is not None:
            doc["before"] = {"ref": args.before, "tool_sets": before["tool_sets"]}
        Path(args.json).write_text(json.dumps(doc, indent=1))
    if args.errors:
        Path(args.errors).write_text(json.dumps(now["errors"], indent=1))


if __name__ == "__main__":
    main()
