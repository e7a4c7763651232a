//! Candidates in runs.db: recording an evaluation (candidate, evaluation, samples and entry) in
//! one transaction, reading one back, and what the proposers and the digest learn from them.

use super::{
    CandidateRow, LossRow, NewEntry, NewEvaluation, ParamsSampleRow, SampleRow, StateRow, Store,
    Tx, WinRow, now,
};
use anyhow::Result;
use std::collections::HashSet;

impl Store {
    pub async fn candidate(&self, id: i64) -> Result<Option<CandidateRow>> {
        Ok(sqlx::query_as(
            "SELECT c.id, c.run_id, c.seq, c.task, c.context_id, c.proposer, c.origin, c.note, c.kind, c.payload, c.diff,
                    c.parent_entry_id, c.created_at, e.verdict, e.reason, e.stage, e.gain, e.gain_low, e.gain_high, e.confidence,
                    e.incumbent_score, e.candidate_score, e.pairs, e.bench_seconds, e.process_seconds, e.overhead_ms, e.log,
                    c.model, c.prompt_tokens, c.completion_tokens, c.agent_protocol
             FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn samples(&self, candidate_id: i64) -> Result<Vec<SampleRow>> {
        Ok(sqlx::query_as("SELECT round, side, case_name, value FROM samples WHERE candidate_id = ? ORDER BY round, side, case_name")
            .bind(candidate_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// The machine states of a candidate's bench processes, pair by pair, incumbent first.
    pub async fn sample_states(&self, candidate_id: i64) -> Result<Vec<StateRow>> {
        Ok(sqlx::query_as(
            "SELECT round, side, state FROM sample_states WHERE candidate_id = ? ORDER BY round, side DESC",
        )
        .bind(candidate_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Assignments already measured in a context (never measured twice).
    pub async fn tried_params(&self, task: &str, context_id: &str) -> Result<HashSet<String>> {
        let keys: Vec<String> =
            sqlx::query_scalar("SELECT params_key FROM candidates WHERE task = ? AND context_id = ? AND params_key IS NOT NULL")
                .bind(task)
                .bind(context_id)
                .fetch_all(&self.pool)
                .await?;
        Ok(keys.into_iter().collect())
    }

    /// Every sample of every parameter assignment measured in a context, oldest candidate first:
    /// (candidate id, payload, side, case, value); one row with no sample for an assignment
    /// that never reached the bench.
    pub async fn params_samples(
        &self,
        task: &str,
        context_id: &str,
    ) -> Result<Vec<ParamsSampleRow>> {
        Ok(sqlx::query_as(
            "SELECT c.id, c.payload, s.side, s.case_name, s.value
             FROM candidates c LEFT JOIN samples s ON s.candidate_id = c.id
             WHERE c.task = ? AND c.context_id = ? AND c.params_key IS NOT NULL
             ORDER BY c.id",
        )
        .bind(task)
        .bind(context_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Accepted entries of a task not rejected by a reviewer, biggest gain first.
    pub async fn wins(&self, task: &str, limit: i64) -> Result<Vec<WinRow>> {
        Ok(sqlx::query_as(
            "SELECT l.id, l.context_id, e.gain, e.gain_low, e.gain_high, c.origin, c.note, c.diff
             FROM ledger_entries l JOIN candidates c ON c.id = l.candidate_id JOIN evaluations e ON e.candidate_id = c.id
             WHERE l.task = ? AND l.kind = 'accepted' AND l.review_state != 'rejected' ORDER BY e.gain DESC LIMIT ?",
        )
        .bind(task)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The newest failed or rejected candidates of a task.
    pub async fn losses(&self, task: &str, limit: i64) -> Result<Vec<LossRow>> {
        Ok(sqlx::query_as(
            "SELECT c.id, e.verdict, e.stage, e.reason, c.origin FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
             WHERE c.task = ? AND e.verdict IN ('failed', 'rejected') ORDER BY c.id DESC LIMIT ?",
        )
        .bind(task)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Records a candidate, its evaluation, its samples and (when accepted) its ledger entry
    /// in one transaction. Returns (candidate id, entry id).
    pub async fn record(
        &self,
        ev: &NewEvaluation,
        entry: Option<&NewEntry>,
    ) -> Result<(i64, Option<i64>)> {
        let mut tx = self.begin().await?;
        let ids = tx.record(ev, entry).await?;
        tx.commit().await?;
        Ok(ids)
    }
}

impl Tx {
    /// The steps of `Store::record` inside this transaction, for callers that batch many.
    pub async fn record(
        &mut self,
        ev: &NewEvaluation,
        entry: Option<&NewEntry>,
    ) -> Result<(i64, Option<i64>)> {
        let candidate_id = self.insert_candidate(ev).await?;
        self.insert_evaluation(candidate_id, ev).await?;
        self.insert_samples(candidate_id, ev).await?;
        let entry_id = match entry {
            Some(e) => Some(self.insert_entry(candidate_id, ev, e).await?),
            None => None,
        };
        Ok((candidate_id, entry_id))
    }

    async fn insert_candidate(&mut self, ev: &NewEvaluation) -> Result<i64> {
        let usage = ev.usage.as_ref();
        Ok(sqlx::query(
            "INSERT INTO candidates (run_id, seq, task, context_id, proposer, origin, note, kind, payload, params_key, diff, parent_entry_id, created_at,
                model, prompt_tokens, completion_tokens, model_requests, model_latency_ms, agent_protocol)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(ev.run_id)
        .bind(ev.seq)
        .bind(&ev.task)
        .bind(&ev.context_id)
        .bind(ev.proposer)
        .bind(&ev.origin)
        .bind(&ev.note)
        .bind(ev.kind)
        .bind(&ev.payload)
        .bind(&ev.params_key)
        .bind(&ev.diff)
        .bind(ev.parent_entry_id)
        .bind(now())
        .bind(usage.map(|u| u.model.clone()))
        .bind(usage.map(|u| u.prompt_tokens as i64))
        .bind(usage.map(|u| u.completion_tokens as i64))
        .bind(usage.map(|u| u.requests as i64))
        .bind(usage.map(|u| u.latency_ms as i64))
        .bind(usage.map(|u| u.protocol.clone()).filter(|p| !p.is_empty()))
        .execute(&mut *self.0)
        .await?
        .last_insert_rowid())
    }

    async fn insert_evaluation(&mut self, candidate_id: i64, ev: &NewEvaluation) -> Result<()> {
        let gain = ev.gain.as_ref();
        sqlx::query(
            "INSERT INTO evaluations (candidate_id, verdict, reason, stage, gain, gain_low, gain_high, confidence, incumbent_score,
                candidate_score, pairs, bench_seconds, process_seconds, overhead_ms, log, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(candidate_id)
        .bind(ev.verdict)
        .bind(&ev.reason)
        .bind(ev.stage)
        .bind(gain.map(|g| g.estimate))
        .bind(gain.map(|g| g.low))
        .bind(gain.map(|g| g.high))
        .bind(gain.map(|g| g.confidence))
        .bind(ev.incumbent_score)
        .bind(ev.candidate_score)
        .bind(ev.pairs)
        .bind(ev.bench_seconds)
        .bind(ev.process_seconds)
        .bind(ev.overhead_ms)
        .bind(&ev.log)
        .bind(now())
        .execute(&mut *self.0)
        .await?;
        Ok(())
    }

    async fn insert_samples(&mut self, candidate_id: i64, ev: &NewEvaluation) -> Result<()> {
        for s in &ev.samples {
            sqlx::query("INSERT INTO samples (candidate_id, round, side, case_name, value) VALUES (?, ?, ?, ?, ?)")
                .bind(candidate_id)
                .bind(s.round)
                .bind(s.side)
                .bind(&s.case)
                .bind(s.value)
                .execute(&mut *self.0)
                .await?;
        }
        for s in &ev.states {
            sqlx::query(
                "INSERT INTO sample_states (candidate_id, round, side, state) VALUES (?, ?, ?, ?)",
            )
            .bind(candidate_id)
            .bind(s.round)
            .bind(s.side)
            .bind(&s.state)
            .execute(&mut *self.0)
            .await?;
        }
        Ok(())
    }

    async fn insert_entry(
        &mut self,
        candidate_id: i64,
        ev: &NewEvaluation,
        e: &NewEntry,
    ) -> Result<i64> {
        Ok(sqlx::query(
            "INSERT INTO ledger_entries (kind, candidate_id, task, context_id, branch, commit_sha, parent_entry_id, score, params, created_at)
             VALUES ('accepted', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(candidate_id)
        .bind(&ev.task)
        .bind(&ev.context_id)
        .bind(&e.branch)
        .bind(&e.commit_sha)
        .bind(ev.parent_entry_id)
        .bind(e.score)
        .bind(&e.params)
        .bind(now())
        .execute(&mut *self.0)
        .await?
        .last_insert_rowid())
    }
}
