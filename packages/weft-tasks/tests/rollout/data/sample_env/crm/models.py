"""Tables of the sample CRM (plain sqlite3 DDL; the seed is built from it)."""

DDL = [
    "CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE NOT NULL, tier TEXT NOT NULL)",
]
SEED = [
    "INSERT INTO customer VALUES (1, 'Ada Lovelace', 'ada@example.com', 'silver')",
    "INSERT INTO customer VALUES (2, 'Alan Turing', 'alan@example.com', 'bronze')",
]
