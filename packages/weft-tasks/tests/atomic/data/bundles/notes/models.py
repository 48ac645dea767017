"""The notes MCP keeps files in the session workspace and has no tables."""

DDL: list[str] = []
SEED: list[str] = []
