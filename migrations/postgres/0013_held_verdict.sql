-- A contender the model search's race held after its screen gets a verdict of its own, 'held'
-- (see migrations/sqlite/0013_held_verdict.sql). `runs.n_rejected` no longer counts the held.

ALTER TABLE evaluations DROP CONSTRAINT evaluations_verdict_check;
ALTER TABLE evaluations ADD CONSTRAINT evaluations_verdict_check
    CHECK (verdict IN ('accepted', 'rejected', 'held', 'failed', 'quarantined'));

UPDATE evaluations SET verdict = 'held'
WHERE verdict = 'rejected' AND reason LIKE 'held after screening%';

UPDATE runs SET n_rejected = n_rejected - n_held;

DROP TRIGGER runs_count_held ON evaluations;
DROP FUNCTION runs_count_held();

CREATE OR REPLACE FUNCTION runs_count_verdicts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE runs SET
        n_accepted = n_accepted + (NEW.verdict = 'accepted')::int,
        n_rejected = n_rejected + (NEW.verdict = 'rejected')::int,
        n_held = n_held + (NEW.verdict = 'held')::int,
        n_failed = n_failed + (NEW.verdict = 'failed')::int,
        n_quarantined = n_quarantined + (NEW.verdict = 'quarantined')::int
    WHERE id = (SELECT run_id FROM candidates WHERE id = NEW.candidate_id);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE VIEW proposer_stats AS
SELECT task, proposer, COUNT(*) AS candidates,
       COUNT(*) FILTER (WHERE verdict = 'accepted') AS accepted,
       COUNT(*) FILTER (WHERE verdict = 'rejected') AS rejected,
       COUNT(*) FILTER (WHERE verdict = 'failed') AS failed,
       COUNT(*) FILTER (WHERE verdict = 'quarantined') AS quarantined,
       ROUND((100.0 * COUNT(*) FILTER (WHERE verdict = 'accepted') / COUNT(*))::numeric, 1)::double precision AS accept_rate_pct,
       SUM(COALESCE(prompt_tokens, 0) + COALESCE(completion_tokens, 0))::bigint AS model_tokens,
       COUNT(*) FILTER (WHERE verdict = 'held') AS held
FROM candidate_results GROUP BY task, proposer;
