//! Candidates in runs.db: recording an evaluation (candidate, evaluation, samples and entry) in
//! one transaction, reading one back, and what the proposers and the digest learn from them.

use super::{
    CandidateRow, LossRow, NewEntry, NewEvaluation, ParamsSampleRow, Real, SampleRow, StateRow,
    Store, Tx, WinRow, now,
};
use anyhow::Result;
use std::collections::HashSet;

/// The advisory lock space of the per-branch queue (the first of the two lock keys).
const BRANCH_LOCKS: i32 = 0x706d_6272; // "pmbr"

/// An accepted candidate whose incumbent is no longer its branch's: another controller (or a
/// reviewer) moved the branch while it was measured. Nothing of it was written.
#[derive(Debug)]
pub struct Superseded {
    pub branch: String,
    pub judged: Option<i64>,
    pub now: Option<i64>,
}

impl std::fmt::Display for Superseded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = |id: Option<i64>| id.map_or("nothing".to_string(), |i| format!("e{i}"));
        write!(
            f,
            "the incumbent of {} is {} now, not {} it was judged against",
            self.branch,
            e(self.now),
            e(self.judged)
        )
    }
}

impl std::error::Error for Superseded {}

impl Store {
    pub async fn candidate(&self, id: i64) -> Result<Option<CandidateRow>> {
        Ok(sqlx::query_as(
            "SELECT c.id, c.run_id, c.seq, c.task, c.context_id, c.proposer, c.origin, c.note, c.kind, c.payload, c.diff,
                    c.parent_entry_id, c.created_at, e.verdict, e.reason, e.stage, e.gain, e.gain_low, e.gain_high, e.confidence,
                    e.incumbent_score, e.candidate_score, e.pairs, e.bench_seconds, e.process_seconds, e.overhead_ms, e.log,
                    c.model, c.prompt_tokens, c.completion_tokens, c.agent_protocol
             FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn samples(&self, candidate_id: i64) -> Result<Vec<SampleRow>> {
        Ok(sqlx::query_as("SELECT round, series, side, case_name, value FROM samples WHERE candidate_id = $1 ORDER BY round, side, case_name")
            .bind(candidate_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// The machine states of a candidate's bench processes, pair by pair, incumbent first.
    pub async fn sample_states(&self, candidate_id: i64) -> Result<Vec<StateRow>> {
        Ok(sqlx::query_as(
            "SELECT round, side, state FROM sample_states WHERE candidate_id = $1 ORDER BY round, side DESC",
        )
        .bind(candidate_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Assignments already measured in a context (never measured twice).
    pub async fn tried_params(&self, task: &str, context_id: &str) -> Result<HashSet<String>> {
        let keys: Vec<String> =
            sqlx::query_scalar("SELECT params_key FROM candidates WHERE task = $1 AND context_id = $2 AND params_key IS NOT NULL")
                .bind(task)
                .bind(context_id)
                .fetch_all(&self.pool)
                .await?;
        Ok(keys.into_iter().collect())
    }

    /// The candidate, if any, that proposed the same tree against the same incumbent in a
    /// context (the same diff from that incumbent's tree) and was judged and not accepted
    /// (rejected, failed or quarantined; a race's contender held after its screen was not
    /// judged): (run id, seq, verdict, reason).
    pub async fn judged_tree(
        &self,
        task: &str,
        context_id: &str,
        parent_entry_id: i64,
        diff: &str,
    ) -> Result<Option<(i64, i64, String, String)>> {
        Ok(sqlx::query_as(
            "SELECT c.run_id, c.seq, e.verdict, e.reason FROM candidates c
             JOIN evaluations e ON e.candidate_id = c.id
             WHERE c.task = $1 AND c.context_id = $2 AND c.parent_entry_id = $3 AND c.diff = $4
               AND e.verdict NOT IN ('accepted', 'held')
             ORDER BY c.id LIMIT 1",
        )
        .bind(task)
        .bind(context_id)
        .bind(parent_entry_id)
        .bind(diff)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Every sample of every parameter assignment measured in a context after candidate
    /// `after` (0: all), oldest candidate first: (candidate id, payload, side, case, value); one
    /// row with no sample for an assignment that never reached the bench.
    pub async fn params_samples(
        &self,
        task: &str,
        context_id: &str,
        after: i64,
    ) -> Result<Vec<ParamsSampleRow>> {
        Ok(sqlx::query_as(
            "SELECT c.id, c.payload, c.origin, s.side, s.case_name, s.value
             FROM candidates c LEFT JOIN samples s ON s.candidate_id = c.id
             WHERE c.task = $1 AND c.context_id = $2 AND c.params_key IS NOT NULL AND c.id > $3
             ORDER BY c.id",
        )
        .bind(task)
        .bind(context_id)
        .bind(after)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Accepted entries of a task not rejected by a reviewer, biggest gain first.
    pub async fn wins(&self, task: &str, limit: i64) -> Result<Vec<WinRow>> {
        Ok(sqlx::query_as(
            "SELECT l.id, l.context_id, e.gain, e.gain_low, e.gain_high, c.origin, c.note, c.diff
             FROM ledger_entries l JOIN candidates c ON c.id = l.candidate_id JOIN evaluations e ON e.candidate_id = c.id
             WHERE l.task = $1 AND l.kind = 'accepted' AND l.review_state != 'rejected' ORDER BY e.gain DESC LIMIT $2",
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
             WHERE c.task = $1 AND e.verdict IN ('failed', 'rejected') ORDER BY c.id DESC LIMIT $2",
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
        if let Some(e) = entry {
            self.check_incumbent(ev, e).await?;
        }
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
        Ok(sqlx::query_scalar::<_, i64>(
            "INSERT INTO candidates (run_id, seq, task, context_id, proposer, origin, note, kind, payload, params_key, diff, parent_entry_id, created_at,
                model, prompt_tokens, completion_tokens, model_requests, model_latency_ms, agent_protocol)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) RETURNING id",
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
        .fetch_one(&mut *self.tx)
        .await?)
    }

    async fn insert_evaluation(&mut self, candidate_id: i64, ev: &NewEvaluation) -> Result<()> {
        let gain = ev.gain.as_ref();
        sqlx::query(
            "INSERT INTO evaluations (candidate_id, verdict, reason, stage, gain, gain_low, gain_high, confidence, incumbent_score,
                candidate_score, pairs, bench_seconds, process_seconds, overhead_ms, log, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind(candidate_id)
        .bind(ev.verdict)
        .bind(&ev.reason)
        .bind(ev.stage)
        .bind(Real(gain.map(|g| g.estimate)))
        .bind(Real(gain.map(|g| g.low)))
        .bind(Real(gain.map(|g| g.high)))
        .bind(Real(gain.map(|g| g.confidence)))
        .bind(Real(ev.incumbent_score))
        .bind(Real(ev.candidate_score))
        .bind(ev.pairs)
        .bind(ev.bench_seconds)
        .bind(ev.process_seconds)
        .bind(ev.overhead_ms)
        .bind(&ev.log)
        .bind(now())
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn insert_samples(&mut self, candidate_id: i64, ev: &NewEvaluation) -> Result<()> {
        for s in &ev.samples {
            sqlx::query("INSERT INTO samples (candidate_id, round, series, side, case_name, value) VALUES ($1, $2, $3, $4, $5, $6)")
                .bind(candidate_id)
                .bind(s.round)
                .bind(s.series)
                .bind(s.side)
                .bind(&s.case)
                .bind(s.value)
                .execute(&mut *self.tx)
                .await?;
        }
        for s in &ev.states {
            sqlx::query(
                "INSERT INTO sample_states (candidate_id, round, side, state) VALUES ($1, $2, $3, $4)",
            )
            .bind(candidate_id)
            .bind(s.round)
            .bind(s.side)
            .bind(&s.state)
            .execute(&mut *self.tx)
            .await?;
        }
        Ok(())
    }

    /// An accepted candidate moves its branch only from the incumbent it was judged against.
    /// Controllers sharing a PostgreSQL database queue here per branch (a transaction-scoped
    /// advisory lock) so that only the first of two candidates judged against one incumbent
    /// lands; the second gets `Superseded`.
    async fn check_incumbent(&mut self, ev: &NewEvaluation, e: &NewEntry) -> Result<()> {
        if self.shared {
            sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                .bind(BRANCH_LOCKS)
                .bind(&e.branch)
                .execute(&mut *self.tx)
                .await?;
        }
        let now: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM ledger_entries WHERE branch = $1 AND review_state != 'rejected' ORDER BY id DESC LIMIT 1",
        )
        .bind(&e.branch)
        .fetch_optional(&mut *self.tx)
        .await?;
        if now != ev.parent_entry_id {
            return Err(Superseded {
                branch: e.branch.clone(),
                judged: ev.parent_entry_id,
                now,
            }
            .into());
        }
        Ok(())
    }

    async fn insert_entry(
        &mut self,
        candidate_id: i64,
        ev: &NewEvaluation,
        e: &NewEntry,
    ) -> Result<i64> {
        Ok(sqlx::query_scalar::<_, i64>(
            "INSERT INTO ledger_entries (kind, candidate_id, task, context_id, branch, commit_sha, parent_entry_id, score, params, created_at)
             VALUES ('accepted', $1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(candidate_id)
        .bind(&ev.task)
        .bind(&ev.context_id)
        .bind(&e.branch)
        .bind(&e.commit_sha)
        .bind(ev.parent_entry_id)
        .bind(Real(e.score))
        .bind(&e.params)
        .bind(now())
        .fetch_one(&mut *self.tx)
        .await?)
    }
}
