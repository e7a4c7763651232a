-- A contender the model search's race held after its screen gets a verdict of its own, 'held',
-- where it was 'rejected' with a reason beginning "held after screening" (the last time that
-- prose is matched). SQLite cannot change a CHECK constraint in place: the table is rebuilt,
-- with the views and triggers that name it dropped first and made again after.
-- `runs.n_rejected` no longer counts the held; `runs.n_held` counts them by their verdict.

DROP VIEW proposer_stats;
DROP VIEW candidate_results;
DROP TRIGGER runs_count_verdicts;
DROP TRIGGER runs_count_held;

CREATE TABLE evaluations_held (
    candidate_id     INTEGER PRIMARY KEY REFERENCES candidates (id),
    verdict          TEXT NOT NULL CHECK (verdict IN ('accepted', 'rejected', 'held', 'failed', 'quarantined')),
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

INSERT INTO evaluations_held
SELECT candidate_id,
       CASE WHEN verdict = 'rejected' AND reason LIKE 'held after screening%' THEN 'held'
            ELSE verdict END,
       reason, stage, gain, gain_low, gain_high, confidence, incumbent_score, candidate_score,
       pairs, bench_seconds, process_seconds, overhead_ms, log, created_at
FROM evaluations;

DROP TABLE evaluations;
ALTER TABLE evaluations_held RENAME TO evaluations;
CREATE INDEX evaluations_verdict ON evaluations (verdict);

UPDATE runs SET n_rejected = n_rejected - n_held;

CREATE TRIGGER runs_count_verdicts AFTER INSERT ON evaluations
BEGIN
    UPDATE runs SET
        n_accepted = n_accepted + (NEW.verdict = 'accepted'),
        n_rejected = n_rejected + (NEW.verdict = 'rejected'),
        n_held = n_held + (NEW.verdict = 'held'),
        n_failed = n_failed + (NEW.verdict = 'failed'),
        n_quarantined = n_quarantined + (NEW.verdict = 'quarantined')
    WHERE id = (SELECT run_id FROM candidates WHERE id = NEW.candidate_id);
END;

CREATE VIEW candidate_results AS
SELECT c.id AS candidate, c.run_id, c.seq, c.task, c.context_id, c.proposer, c.origin, c.note,
       e.verdict, e.stage, e.reason, e.gain, e.gain_low, e.gain_high, e.pairs, e.bench_seconds,
       e.overhead_ms, c.model, c.prompt_tokens, c.completion_tokens, c.created_at
FROM candidates c JOIN evaluations e ON e.candidate_id = c.id;

CREATE VIEW proposer_stats AS
SELECT task, proposer, COUNT(*) AS candidates,
       SUM(verdict = 'accepted') AS accepted, SUM(verdict = 'rejected') AS rejected,
       SUM(verdict = 'failed') AS failed, SUM(verdict = 'quarantined') AS quarantined,
       ROUND(100.0 * SUM(verdict = 'accepted') / COUNT(*), 1) AS accept_rate_pct,
       SUM(COALESCE(prompt_tokens, 0) + COALESCE(completion_tokens, 0)) AS model_tokens,
       SUM(verdict = 'held') AS held
FROM candidate_results GROUP BY task, proposer;
