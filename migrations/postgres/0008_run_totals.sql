-- Each run's verdict counts and model usage, kept by triggers (see
-- migrations/sqlite/0008_run_totals.sql).

ALTER TABLE runs ADD COLUMN n_accepted BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN n_rejected BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN n_failed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN n_quarantined BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN model_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN model_requests BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN prompt_tokens BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION runs_count_verdicts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE runs SET
        n_accepted = n_accepted + (NEW.verdict = 'accepted')::int,
        n_rejected = n_rejected + (NEW.verdict = 'rejected')::int,
        n_failed = n_failed + (NEW.verdict = 'failed')::int,
        n_quarantined = n_quarantined + (NEW.verdict = 'quarantined')::int
    WHERE id = (SELECT run_id FROM candidates WHERE id = NEW.candidate_id);
    RETURN NULL;
END;
$$;

CREATE TRIGGER runs_count_verdicts AFTER INSERT ON evaluations
    FOR EACH ROW EXECUTE FUNCTION runs_count_verdicts();

CREATE FUNCTION runs_count_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE runs SET
        model_tokens = model_tokens + COALESCE(NEW.prompt_tokens + NEW.completion_tokens, 0),
        model_requests = model_requests + COALESCE(NEW.model_requests, 0),
        prompt_tokens = prompt_tokens + COALESCE(NEW.prompt_tokens, 0)
    WHERE id = NEW.run_id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER runs_count_usage AFTER INSERT ON candidates
    FOR EACH ROW EXECUTE FUNCTION runs_count_usage();
