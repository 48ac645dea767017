"""Helpdesk tables."""

DDL = [
    "CREATE TABLE requester (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT UNIQUE NOT NULL, name TEXT NOT NULL)",
    "CREATE TABLE ticket (id INTEGER PRIMARY KEY AUTOINCREMENT, requester_id INTEGER NOT NULL"
    " REFERENCES requester(id), subject TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'open',"
    " priority TEXT NOT NULL DEFAULT 'normal')",
]
SEED = [
    "INSERT INTO requester (email, name) VALUES ('ada@example.com', 'Ada Lovelace')",
    "INSERT INTO requester (email, name) VALUES ('grace@example.com', 'Grace Hopper')",
    "INSERT INTO requester (email, name) VALUES ('linus@example.com', 'Linus Torvalds')",
    "INSERT INTO ticket (requester_id, subject, status, priority) VALUES (1, 'Invoice missing', 'open', 'high')",
    "INSERT INTO ticket (requester_id, subject, status, priority) VALUES (2, 'Login fails', 'open', 'normal')",
    "INSERT INTO ticket (requester_id, subject, status, priority) VALUES (3, 'Kernel panic', 'closed', 'low')",
]
