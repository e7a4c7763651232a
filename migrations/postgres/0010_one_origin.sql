-- A branch has one origin entry, even when two controllers start it at once (see
-- migrations/sqlite/0010_one_origin.sql).
CREATE UNIQUE INDEX ledger_one_origin ON ledger_entries (branch) WHERE kind = 'origin';
