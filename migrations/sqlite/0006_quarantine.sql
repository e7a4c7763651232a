-- Human decisions on quarantined candidates: released into the ledger (with the entry it
-- became) or dismissed, by whom, when and why. One decision per candidate.

CREATE TABLE quarantine_decisions (
    candidate_id INTEGER PRIMARY KEY REFERENCES candidates (id),
    decision     TEXT NOT NULL CHECK (decision IN ('released', 'dismissed')),
    entry_id     INTEGER REFERENCES ledger_entries (id),
    decided_by   TEXT NOT NULL,
    reason       TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
