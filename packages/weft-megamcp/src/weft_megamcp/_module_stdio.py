"""Dedicated-tier entry: serve one registered module over stdio for one session.

`python -m weft_megamcp._module_stdio FOLDER ENTRY MCP_ID VERSION TAG`. The session's DB and
workspace come from WEFT_DB_PATH / WEFT_WORKSPACE (weft_core.binding.default_binding), which
the host sets for this process only.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    folder, entry, mcp_id, version, tag = argv
    from weft_megamcp.loader import load_server

    server, _ = load_server(mcp_id, int(version), Path(folder), entry, tag)
    server.run(transport="stdio", show_banner=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
