-- Each run's count of contenders held by the model search's race after their screen. They are
-- recorded with the verdict 'rejected' (never judged in full), and their reason begins with
-- measure::HELD; `n_rejected` still counts them, `n_held` says how many of those they are.

ALTER TABLE runs ADD COLUMN n_held INTEGER NOT NULL DEFAULT 0;

UPDATE runs SET
    n_held = (SELECT COUNT(*) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
              WHERE c.run_id = runs.id AND e.verdict = 'rejected'
                AND e.reason LIKE 'held after screening%');

CREATE TRIGGER runs_count_held AFTER INSERT ON evaluations
WHEN NEW.verdict = 'rejected' AND NEW.reason LIKE 'held after screening%'
BEGIN
    UPDATE runs SET n_held = n_held + 1
    WHERE id = (SELECT run_id FROM candidates WHERE id = NEW.candidate_id);
END;
