-- Scheduled runs: a task re-tuned on an interval or a cron pattern (UTC), and whenever its
-- context changes. The daemon records when it last ran each and in which context.

CREATE TABLE schedules (
    id               INTEGER PRIMARY KEY,
    task             TEXT NOT NULL,
    task_dir         TEXT NOT NULL,
    every_s          INTEGER,           -- --every, in seconds
    cron             TEXT,              -- --cron, five fields, UTC
    budget           INTEGER NOT NULL,
    proposer         TEXT NOT NULL,
    workload         TEXT,              -- --workload, when not the task's own
    created_at       TEXT NOT NULL,
    last_run_at      TEXT,              -- when the daemon last started a run for it
    last_context     TEXT,              -- the context id of that run
    last_fingerprint TEXT,              -- and its fingerprint (JSON), to say what changed
    last_status      TEXT,              -- finished | interrupted | failed: ...
    last_reason      TEXT,              -- why it was due
    CHECK ((every_s IS NULL) != (cron IS NULL))
);
