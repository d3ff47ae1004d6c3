CREATE TABLE closed (
    note_id TEXT NOT NULL,
    closed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
