"""Tables of the sample helpdesk."""

DDL = [
    "CREATE TABLE ticket (id INTEGER PRIMARY KEY AUTOINCREMENT, customer_email TEXT NOT NULL, subject TEXT NOT NULL, priority TEXT NOT NULL, status TEXT NOT NULL)",
]
SEED = [
    "INSERT INTO ticket (customer_email, subject, priority, status) VALUES ('alan@example.com', 'Login issue', 'low', 'closed')",
]
