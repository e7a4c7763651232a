//! Quarantine decisions in runs.db: a release (the candidate's approved ledger entry and the
//! decision, in one transaction) or a dismissal, and the candidates still waiting for one.

use super::{CandidateRow, EntryRow, Real, Store, now};
use anyhow::Result;

/// A quarantined candidate no human has decided on yet.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct QuarantinedRow {
    pub candidate: i64,
    pub task: String,
    pub context_id: String,
    pub origin: String,
    pub reason: String,
    pub created_at: String,
}

impl Store {
    /// The decision on a candidate, if any: (decision, by whom).
    pub async fn quarantine_decision(&self, candidate: i64) -> Result<Option<(String, String)>> {
        Ok(sqlx::query_as(
            "SELECT decision, decided_by FROM quarantine_decisions WHERE candidate_id = $1",
        )
        .bind(candidate)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Quarantined candidates without a decision, oldest first.
    pub async fn quarantined(&self, task: Option<&str>) -> Result<Vec<QuarantinedRow>> {
        Ok(sqlx::query_as(
            "SELECT c.id AS candidate, c.task, c.context_id, c.origin, e.reason, c.created_at
             FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
             WHERE e.verdict = 'quarantined' AND ($1 IS NULL OR c.task = $1)
               AND c.id NOT IN (SELECT candidate_id FROM quarantine_decisions)
             ORDER BY c.id",
        )
        .bind(task)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The released candidate's entry (approved by `by` in the same step) and the decision.
    pub async fn record_release(
        &self,
        c: &CandidateRow,
        parent: &EntryRow,
        commit: &str,
        by: &str,
        why: &str,
    ) -> Result<i64> {
        let at = now();
        let mut tx = self.write_tx().await?;
        let entry = sqlx::query_scalar::<_, i64>(
            "INSERT INTO ledger_entries (kind, candidate_id, task, context_id, branch, commit_sha, parent_entry_id, score, params,
                review_state, created_at, reviewed_by, reviewed_at, review_reason)
             VALUES ('accepted', $1, $2, $3, $4, $5, $6, $7, NULL, 'approved', $8, $9, $10, $11) RETURNING id",
        )
        .bind(c.id)
        .bind(&c.task)
        .bind(&c.context_id)
        .bind(&parent.branch)
        .bind(commit)
        .bind(parent.id)
        .bind(Real(c.candidate_score))
        .bind(&at)
        .bind(by)
        .bind(&at)
        .bind(format!("released from quarantine: {why}"))
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO quarantine_decisions (candidate_id, decision, entry_id, decided_by, reason, created_at)
             VALUES ($1, 'released', $2, $3, $4, $5)",
        )
        .bind(c.id)
        .bind(entry)
        .bind(by)
        .bind(why)
        .bind(&at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(entry)
    }

    pub async fn record_dismissal(&self, candidate: i64, by: &str, why: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO quarantine_decisions (candidate_id, decision, decided_by, reason, created_at)
             VALUES ($1, 'dismissed', $2, $3, $4)",
        )
        .bind(candidate)
        .bind(by)
        .bind(why)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
