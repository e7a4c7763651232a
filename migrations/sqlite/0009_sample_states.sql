-- What the machine was like when each bench process started (for a GPU task: its SM clock and
-- temperature, read, never set), one row per process, for the tasks that say how to read it.
CREATE TABLE sample_states (
    candidate_id INTEGER NOT NULL REFERENCES candidates (id),
    round        INTEGER NOT NULL,
    side         TEXT NOT NULL CHECK (side IN ('incumbent', 'candidate')),
    state        TEXT NOT NULL,
    PRIMARY KEY (candidate_id, round, side)
);
