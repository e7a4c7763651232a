-- polymorph's history: runs, candidates, their evaluations and raw samples, ledger entries and
-- contexts. Append-only: never edit a shipped migration, add a new one.

CREATE TABLE contexts (
    task        TEXT NOT NULL,
    id          TEXT NOT NULL,
    fingerprint TEXT NOT NULL,          -- JSON: hardware, toolchain, workload hash, model
    created_at  TEXT NOT NULL,
    PRIMARY KEY (task, id)
);

CREATE TABLE runs (
    id               INTEGER PRIMARY KEY,
    task             TEXT NOT NULL,
    task_dir         TEXT NOT NULL,
    context_id       TEXT NOT NULL,
    proposer         TEXT NOT NULL,     -- search | replay:FILE | agent
    budget           INTEGER NOT NULL,  -- candidates
    seed             INTEGER NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('running', 'finished', 'interrupted', 'failed')),
    started_at       TEXT NOT NULL,
    finished_at      TEXT,
    start_score      REAL,              -- the task as given, measured at run start
    hand_tuned_score REAL,              -- the hand-tuned baseline, measured at run start
    message          TEXT               -- why it stopped, when not simply finished
);
CREATE INDEX runs_task ON runs (task, context_id);

CREATE TABLE candidates (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs (id),
    seq             INTEGER NOT NULL,   -- 1-based position within its run
    task            TEXT NOT NULL,
    context_id      TEXT NOT NULL,
    proposer        TEXT NOT NULL,
    origin          TEXT NOT NULL,      -- e.g. search(local), replay:file.jsonl:3
    note            TEXT,
    kind            TEXT NOT NULL CHECK (kind IN ('diff', 'files', 'params')),
    payload         TEXT NOT NULL,      -- the change as proposed (JSON)
    params_key      TEXT,               -- canonical assignment, for never measuring one twice
    diff            TEXT,               -- what it changes against the incumbent, when it applied
    parent_entry_id INTEGER REFERENCES ledger_entries (id),
    created_at      TEXT NOT NULL,
    UNIQUE (run_id, seq)
);
CREATE INDEX candidates_context ON candidates (task, context_id);
CREATE INDEX candidates_params ON candidates (task, context_id, params_key);

CREATE TABLE evaluations (
    candidate_id     INTEGER PRIMARY KEY REFERENCES candidates (id),
    verdict          TEXT NOT NULL CHECK (verdict IN ('accepted', 'rejected', 'failed', 'quarantined')),
    reason           TEXT NOT NULL,
    stage            TEXT NOT NULL,     -- verify | build | test | bench | judge | retest
    gain             REAL,              -- paired log-ratio estimate (positive = better)
    gain_low         REAL,
    gain_high        REAL,
    confidence       REAL,
    incumbent_score  REAL,
    candidate_score  REAL,
    pairs            INTEGER NOT NULL DEFAULT 0,
    bench_seconds    REAL NOT NULL DEFAULT 0,   -- wall time spent in bench processes
    process_seconds  REAL NOT NULL DEFAULT 0,   -- wall time spent in all task processes
    overhead_ms      REAL NOT NULL DEFAULT 0,   -- polymorph's own time for this candidate
    log              TEXT,                      -- capped tail of the failing command's output
    created_at       TEXT NOT NULL
);
CREATE INDEX evaluations_verdict ON evaluations (verdict);

CREATE TABLE samples (
    id           INTEGER PRIMARY KEY,
    candidate_id INTEGER NOT NULL REFERENCES candidates (id),
    round        INTEGER NOT NULL,
    side         TEXT NOT NULL CHECK (side IN ('incumbent', 'candidate')),
    case_name    TEXT NOT NULL,
    value        REAL NOT NULL
);
CREATE INDEX samples_candidate ON samples (candidate_id);

CREATE TABLE ledger_entries (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('origin', 'accepted')),
    candidate_id    INTEGER UNIQUE REFERENCES candidates (id),
    task            TEXT NOT NULL,
    context_id      TEXT NOT NULL,
    branch          TEXT NOT NULL,
    commit_sha      TEXT NOT NULL UNIQUE,
    parent_entry_id INTEGER REFERENCES ledger_entries (id),
    score           REAL,               -- median candidate score when accepted
    params          TEXT,               -- the assignment, for tasks with [params]
    review_state    TEXT NOT NULL DEFAULT 'pending' CHECK (review_state IN ('pending', 'approved', 'rejected')),
    created_at      TEXT NOT NULL
);
CREATE INDEX ledger_branch ON ledger_entries (branch, id);
