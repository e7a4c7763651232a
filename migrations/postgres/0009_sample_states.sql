-- The machine's state when each bench process started (see
-- migrations/sqlite/0009_sample_states.sql).
CREATE TABLE sample_states (
    candidate_id BIGINT NOT NULL REFERENCES candidates (id),
    round        BIGINT NOT NULL,
    side         TEXT NOT NULL CHECK (side IN ('incumbent', 'candidate')),
    state        TEXT NOT NULL,
    PRIMARY KEY (candidate_id, round, side)
);
