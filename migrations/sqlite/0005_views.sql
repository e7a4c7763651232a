-- Views for the questions people ask of the history (see README, "How to read the results").

-- Every candidate with its evaluation: "what did last night's run try?"
CREATE VIEW candidate_results AS
SELECT c.id AS candidate, c.run_id, c.seq, c.task, c.context_id, c.proposer, c.origin, c.note,
       e.verdict, e.stage, e.reason, e.gain, e.gain_low, e.gain_high, e.pairs, e.bench_seconds,
       e.overhead_ms, c.model, c.prompt_tokens, c.completion_tokens, c.created_at
FROM candidates c JOIN evaluations e ON e.candidate_id = c.id;

-- Per task and proposer: "which proposer finds the most?"
CREATE VIEW proposer_stats AS
SELECT task, proposer, COUNT(*) AS candidates,
       SUM(verdict = 'accepted') AS accepted, SUM(verdict = 'rejected') AS rejected,
       SUM(verdict = 'failed') AS failed, SUM(verdict = 'quarantined') AS quarantined,
       ROUND(100.0 * SUM(verdict = 'accepted') / COUNT(*), 1) AS accept_rate_pct,
       SUM(COALESCE(prompt_tokens, 0) + COALESCE(completion_tokens, 0)) AS model_tokens
FROM candidate_results GROUP BY task, proposer;

-- Per task and context: "when did this kernel last improve?"
CREATE VIEW last_improvement AS
SELECT task, context_id, branch, COUNT(*) AS entries, MAX(created_at) AS last_accepted_at
FROM ledger_entries WHERE kind = 'accepted' AND review_state != 'rejected'
GROUP BY task, context_id, branch;
