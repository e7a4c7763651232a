//! Ledger entries in runs.db: origins, incumbents, review states and the revert commits that
//! take rejected entries off a branch.

use super::{EntryRow, ReviewRow, Store, now};
use crate::record::kinds::ReviewState;
use anyhow::{Result, bail};

impl Store {
    pub async fn insert_origin(
        &self,
        task: &str,
        context_id: &str,
        branch: &str,
        commit: &str,
        params: Option<&str>,
    ) -> Result<i64> {
        Ok(sqlx::query_scalar::<_, i64>(
            "INSERT INTO ledger_entries (kind, task, context_id, branch, commit_sha, params, review_state, created_at)
             VALUES ('origin', $1, $2, $3, $4, $5, 'approved', $6) RETURNING id",
        )
        .bind(task)
        .bind(context_id)
        .bind(branch)
        .bind(commit)
        .bind(params)
        .bind(now())
        .fetch_one(&self.pool)
        .await?)
    }

    /// The incumbent of a branch: its newest entry not rejected by a reviewer.
    pub async fn incumbent(&self, branch: &str) -> Result<Option<EntryRow>> {
        Ok(sqlx::query_as("SELECT * FROM ledger_entries WHERE branch = $1 AND review_state != 'rejected' ORDER BY id DESC LIMIT 1")
            .bind(branch)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The newest entry of a branch a reviewer approved (the task as given counts as approved).
    pub async fn best_approved(&self, branch: &str) -> Result<Option<EntryRow>> {
        Ok(sqlx::query_as("SELECT * FROM ledger_entries WHERE branch = $1 AND review_state = 'approved' ORDER BY id DESC LIMIT 1")
            .bind(branch)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The newest entry of a branch, whatever its review state: where the git branch must point.
    pub async fn branch_tip(&self, branch: &str) -> Result<Option<EntryRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM ledger_entries WHERE branch = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(branch)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// The first entry of a branch: the task as given.
    pub async fn origin(&self, branch: &str) -> Result<Option<EntryRow>> {
        Ok(
            sqlx::query_as("SELECT * FROM ledger_entries WHERE branch = $1 AND kind = 'origin'")
                .bind(branch)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    pub async fn entries(&self, task: Option<&str>) -> Result<Vec<EntryRow>> {
        Ok(
            sqlx::query_as(
                "SELECT * FROM ledger_entries WHERE $1 IS NULL OR task = $1 ORDER BY id",
            )
            .bind(task)
            .fetch_all(&self.pool)
            .await?,
        )
    }

    pub async fn entry(&self, id: i64) -> Result<Option<EntryRow>> {
        Ok(sqlx::query_as("SELECT * FROM ledger_entries WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn entry_by_commit(&self, prefix: &str) -> Result<Vec<EntryRow>> {
        Ok(
            sqlx::query_as("SELECT * FROM ledger_entries WHERE commit_sha LIKE $1 || '%'")
                .bind(prefix)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    pub async fn entry_for_candidate(&self, candidate_id: i64) -> Result<Option<EntryRow>> {
        Ok(
            sqlx::query_as("SELECT * FROM ledger_entries WHERE candidate_id = $1")
                .bind(candidate_id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// Accepted entries, oldest first; only those in `state` (e.g. pending) when given.
    pub async fn reviews(
        &self,
        task: Option<&str>,
        state: Option<ReviewState>,
    ) -> Result<Vec<ReviewRow>> {
        Ok(sqlx::query_as(
            "SELECT l.id AS entry, l.review_state, l.reviewed_by, l.task, l.context_id, l.commit_sha, l.created_at,
                    c.id AS candidate, c.proposer, c.origin, e.reason, e.gain, e.gain_low, e.gain_high
             FROM ledger_entries l JOIN candidates c ON c.id = l.candidate_id JOIN evaluations e ON e.candidate_id = c.id
             WHERE l.kind = 'accepted' AND ($1 IS NULL OR l.task = $1) AND ($2 IS NULL OR l.review_state = $2)
             ORDER BY l.id",
        )
        .bind(task)
        .bind(state)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Approves an entry unless it was rejected meanwhile: the state is compared and set in one
    /// statement, so an approve racing a reject can never leave a rejected entry approved.
    pub async fn approve(&self, entry_id: i64, by: &str, note: Option<&str>) -> Result<()> {
        let done = sqlx::query("UPDATE ledger_entries SET review_state = 'approved', reviewed_by = $1, reviewed_at = $2, review_reason = $3 WHERE id = $4 AND review_state != 'rejected'")
            .bind(by)
            .bind(now())
            .bind(note)
            .bind(entry_id)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() != 1 {
            bail!("e{entry_id} was rejected meanwhile: not approved");
        }
        Ok(())
    }

    /// Rejects `entry` and every later entry of its branch (each was built on it), and records
    /// the revert commit that restores `restores`, in one transaction. Returns the ids rejected.
    pub async fn reject(
        &self,
        entry: &EntryRow,
        restores: i64,
        revert_commit: &str,
        by: &str,
        reason: &str,
    ) -> Result<Vec<i64>> {
        let mut tx = self.write_tx().await?;
        let ids: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM ledger_entries WHERE branch = $1 AND id >= $2 AND kind = 'accepted' AND review_state != 'rejected' ORDER BY id",
        )
        .bind(&entry.branch)
        .bind(entry.id)
        .fetch_all(&mut *tx)
        .await?;
        if ids.first() != Some(&entry.id) {
            // Another review rejected it since it was read: nothing is written twice.
            bail!("e{} was rejected meanwhile", entry.id);
        }
        let at = now();
        for id in &ids {
            let why = if *id == entry.id {
                reason.to_string()
            } else {
                format!("built on rejected e{}: {reason}", entry.id)
            };
            sqlx::query("UPDATE ledger_entries SET review_state = 'rejected', reviewed_by = $1, reviewed_at = $2, review_reason = $3 WHERE id = $4")
                .bind(by)
                .bind(&at)
                .bind(why)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        let newest: i64 =
            sqlx::query_scalar("SELECT MAX(id) FROM ledger_entries WHERE branch = $1")
                .bind(&entry.branch)
                .fetch_one(&mut *tx)
                .await?;
        sqlx::query(
            "INSERT INTO reverts (branch, commit_sha, reverted_entry_id, restores_entry_id, after_entry_id, reason, reviewed_by, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&entry.branch)
        .bind(revert_commit)
        .bind(entry.id)
        .bind(restores)
        .bind(newest)
        .bind(reason)
        .bind(by)
        .bind(&at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(ids)
    }

    /// Where the git branch must point: the newest of its entries and revert commits.
    pub async fn expected_head(&self, branch: &str) -> Result<Option<String>> {
        let tip = self.branch_tip(branch).await?;
        let revert: Option<(String, i64)> =
            sqlx::query_as("SELECT commit_sha, after_entry_id FROM reverts WHERE branch = $1 ORDER BY id DESC LIMIT 1")
                .bind(branch)
                .fetch_optional(&self.pool)
                .await?;
        Ok(match (tip, revert) {
            (Some(t), Some((sha, after))) if after >= t.id => Some(sha),
            (Some(t), _) => Some(t.commit_sha),
            (None, _) => None,
        })
    }
}
