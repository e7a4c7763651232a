-- A branch has one origin entry, even when two controllers sharing a database start it at
-- once: the second one's insert fails and it reads the first one's.
CREATE UNIQUE INDEX ledger_one_origin ON ledger_entries (branch) WHERE kind = 'origin';
