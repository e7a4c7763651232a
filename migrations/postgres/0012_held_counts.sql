-- Each run's count of contenders held by the model search's race after their screen (see
-- migrations/sqlite/0012_held_counts.sql).

ALTER TABLE runs ADD COLUMN n_held BIGINT NOT NULL DEFAULT 0;

UPDATE runs SET
    n_held = (SELECT COUNT(*) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
              WHERE c.run_id = runs.id AND e.verdict = 'rejected'
                AND e.reason LIKE 'held after screening%');

CREATE FUNCTION runs_count_held() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE runs SET n_held = n_held + 1
    WHERE id = (SELECT run_id FROM candidates WHERE id = NEW.candidate_id);
    RETURN NULL;
END;
$$;

CREATE TRIGGER runs_count_held AFTER INSERT ON evaluations
    FOR EACH ROW
    WHEN (NEW.verdict = 'rejected' AND NEW.reason LIKE 'held after screening%')
    EXECUTE FUNCTION runs_count_held();
