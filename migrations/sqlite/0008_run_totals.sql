-- Each run's verdict counts and model usage, kept by triggers as candidates and evaluations are
-- written (both tables are append-only), so `history` reads one row per run instead of
-- counting a million candidates.

ALTER TABLE runs ADD COLUMN n_accepted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN n_rejected INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN n_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN n_quarantined INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN model_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN model_requests INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;

UPDATE runs SET
    n_accepted = (SELECT COUNT(*) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
                  WHERE c.run_id = runs.id AND e.verdict = 'accepted'),
    n_rejected = (SELECT COUNT(*) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
                  WHERE c.run_id = runs.id AND e.verdict = 'rejected'),
    n_failed = (SELECT COUNT(*) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
                WHERE c.run_id = runs.id AND e.verdict = 'failed'),
    n_quarantined = (SELECT COUNT(*) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
                     WHERE c.run_id = runs.id AND e.verdict = 'quarantined'),
    model_tokens = (SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM candidates
                    WHERE run_id = runs.id),
    model_requests = (SELECT COALESCE(SUM(model_requests), 0) FROM candidates WHERE run_id = runs.id),
    prompt_tokens = (SELECT COALESCE(SUM(prompt_tokens), 0) FROM candidates WHERE run_id = runs.id);

CREATE TRIGGER runs_count_verdicts AFTER INSERT ON evaluations
BEGIN
    UPDATE runs SET
        n_accepted = n_accepted + (NEW.verdict = 'accepted'),
        n_rejected = n_rejected + (NEW.verdict = 'rejected'),
        n_failed = n_failed + (NEW.verdict = 'failed'),
        n_quarantined = n_quarantined + (NEW.verdict = 'quarantined')
    WHERE id = (SELECT run_id FROM candidates WHERE id = NEW.candidate_id);
END;

CREATE TRIGGER runs_count_usage AFTER INSERT ON candidates
BEGIN
    UPDATE runs SET
        model_tokens = model_tokens + COALESCE(NEW.prompt_tokens + NEW.completion_tokens, 0),
        model_requests = model_requests + COALESCE(NEW.model_requests, 0),
        prompt_tokens = prompt_tokens + COALESCE(NEW.prompt_tokens, 0)
    WHERE id = NEW.run_id;
END;
