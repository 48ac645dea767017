"""CRM tables."""

DDL = [
    "CREATE TABLE customer (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
    " email TEXT UNIQUE NOT NULL, tier TEXT NOT NULL DEFAULT 'bronze', city TEXT)",
]
SEED = [
    "INSERT INTO customer (name, email, tier, city) VALUES ('Ada Lovelace', 'ada@example.com', 'silver', 'London')",
    "INSERT INTO customer (name, email, tier, city) VALUES ('Alan Turing', 'alan@example.com', 'bronze', 'Wilmslow')",
    "INSERT INTO customer (name, email, tier, city) VALUES ('Grace Hopper', 'grace@example.com', 'gold', 'Arlington')",
    "INSERT INTO customer (name, email, tier, city) VALUES ('Edsger Dijkstra', 'edsger@example.com', 'bronze', 'Austin')",
]
