"""Billing tables."""

DDL = [
    "CREATE TABLE invoice (id INTEGER PRIMARY KEY AUTOINCREMENT, customer_email TEXT NOT NULL,"
    " amount REAL NOT NULL, status TEXT NOT NULL DEFAULT 'unpaid', memo TEXT)",
]
SEED = [
    "INSERT INTO invoice (customer_email, amount, status, memo) VALUES ('ada@example.com', 120.0, 'unpaid', 'Analytical engine rental')",
    "INSERT INTO invoice (customer_email, amount, status, memo) VALUES ('grace@example.com', 80.5, 'paid', 'Compiler licence')",
    "INSERT INTO invoice (customer_email, amount, status, memo) VALUES ('alan@example.com', 42.0, 'unpaid', 'Bombe maintenance')",
]
