-- The views of migrations/sqlite/0005_views.sql, with the same columns. Counts and sums are
-- BIGINT and the rate DOUBLE PRECISION, as SQLite returns them.

CREATE VIEW candidate_results AS
SELECT c.id AS candidate, c.run_id, c.seq, c.task, c.context_id, c.proposer, c.origin, c.note,
       e.verdict, e.stage, e.reason, e.gain, e.gain_low, e.gain_high, e.pairs, e.bench_seconds,
       e.overhead_ms, c.model, c.prompt_tokens, c.completion_tokens, c.created_at
FROM candidates c JOIN evaluations e ON e.candidate_id = c.id;

CREATE VIEW proposer_stats AS
SELECT task, proposer, COUNT(*) AS candidates,
       COUNT(*) FILTER (WHERE verdict = 'accepted') AS accepted,
       COUNT(*) FILTER (WHERE verdict = 'rejected') AS rejected,
       COUNT(*) FILTER (WHERE verdict = 'failed') AS failed,
       COUNT(*) FILTER (WHERE verdict = 'quarantined') AS quarantined,
       ROUND((100.0 * COUNT(*) FILTER (WHERE verdict = 'accepted') / COUNT(*))::numeric, 1)::double precision AS accept_rate_pct,
       SUM(COALESCE(prompt_tokens, 0) + COALESCE(completion_tokens, 0))::bigint AS model_tokens
FROM candidate_results GROUP BY task, proposer;

CREATE VIEW last_improvement AS
SELECT task, context_id, branch, COUNT(*) AS entries, MAX(created_at) AS last_accepted_at
FROM ledger_entries WHERE kind = 'accepted' AND review_state <> 'rejected'
GROUP BY task, context_id, branch;
