-- Human decisions on quarantined candidates (see migrations/sqlite/0006_quarantine.sql).

CREATE TABLE quarantine_decisions (
    candidate_id BIGINT PRIMARY KEY REFERENCES candidates (id),
    decision     TEXT NOT NULL CHECK (decision IN ('released', 'dismissed')),
    entry_id     BIGINT REFERENCES ledger_entries (id),
    decided_by   TEXT NOT NULL,
    reason       TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
