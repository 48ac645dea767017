"""Regenerate notes_bundle/seed.sqlite (two contacts)."""

import sqlite3
from pathlib import Path

path = Path(__file__).parent / "notes_bundle" / "seed.sqlite"
path.unlink(missing_ok=True)
con = sqlite3.connect(path)
con.execute(
    "CREATE TABLE contact (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, email VARCHAR NOT NULL, tier VARCHAR NOT NULL)"
)
con.executemany(
    "INSERT INTO contact (id, name, email, tier) VALUES (?, ?, ?, ?)",
    [
        (1, "Ada Lovelace", "ada@example.com", "gold"),
        (2, "Alan Turing", "alan@example.com", "basic"),
    ],
)
con.commit()
con.close()
