-- Human review of ledger entries: who decided and when, and the revert commits that take a
-- rejected entry (and every entry built on it) off its branch without rewriting history.

ALTER TABLE ledger_entries ADD COLUMN reviewed_by TEXT;
ALTER TABLE ledger_entries ADD COLUMN reviewed_at TEXT;
ALTER TABLE ledger_entries ADD COLUMN review_reason TEXT;

CREATE TABLE reverts (
    id                INTEGER PRIMARY KEY,
    branch            TEXT NOT NULL,
    commit_sha        TEXT NOT NULL UNIQUE,  -- the revert commit on the branch
    reverted_entry_id INTEGER NOT NULL REFERENCES ledger_entries (id),
    restores_entry_id INTEGER NOT NULL REFERENCES ledger_entries (id),  -- whose tree it restores
    after_entry_id    INTEGER NOT NULL,      -- newest entry of the branch when it was made
    reason            TEXT NOT NULL,
    reviewed_by       TEXT NOT NULL,
    created_at        TEXT NOT NULL
);
CREATE INDEX reverts_branch ON reverts (branch, id);
