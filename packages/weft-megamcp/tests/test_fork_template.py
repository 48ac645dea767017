"""The fork server's template: a worker imports nothing the template did not already import,
so those modules' pages stay shared instead of being copied into every worker."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from weft_megamcp._fork_template import WORKER_IMPORTS

# Builds what `worker_main` builds before serving, in a fresh interpreter that has imported the
# fork server's preload list, and prints the modules that setup imported on top of it.
SCRIPT = """
import gc, importlib, json, sys
from weft_megamcp._fork_server import PRELOAD
for name in PRELOAD:
    importlib.import_module(name)
frozen = gc.get_freeze_count()
before = set(sys.modules)
import uvicorn
from weft_megamcp.app import HostASGI, HostCore
from weft_megamcp.guards import guard_app
from weft_megamcp.host import uvicorn_options
from weft_megamcp.settings import MegaMCPSettings
from weft_megamcp.worker import MasterFallback
settings = MegaMCPSettings(data_dir=sys.argv[1], admin_token="t" * 32, workers=2)
settings = MegaMCPSettings.model_validate_json(settings.model_dump_json())
core = HostCore(settings, run_reaper=False)
app = guard_app(MasterFallback(HostASGI(core), "http://127.0.0.1:9"), settings.allowed_hosts)
config = uvicorn.Config(app, **uvicorn_options(settings))
config.load()
heavy = [m for m in ("aiohttp", "fastmcp.client", "beartype") if m in sys.modules]
print(json.dumps({"frozen": frozen, "new": sorted(set(sys.modules) - before), "heavy": heavy}))
"""


def test_worker_setup_imports_nothing_new(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["new"] == [], "import these in _fork_template.WORKER_IMPORTS"
    assert report["frozen"] > 100_000  # the template froze what it imported
    # In every serving process's RSS if imported: aiohttp ~8 MiB (a worker forwards only a moved
    # session's request), fastmcp's client stack ~8 MiB (only the command tier starts clients).
    assert report["heavy"] == []


def test_worker_imports_all_exist() -> None:
    # suppress(ImportError) in the template would hide a renamed module: the list must not rot.
    import importlib

    for name in WORKER_IMPORTS:
        importlib.import_module(name)
