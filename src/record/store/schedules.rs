//! Schedules in runs.db: what the daemon runs, and when it last did.

use super::{ScheduleRow, Store, now};
use crate::record::kinds::ProposerChoice;
use anyhow::Result;

impl Store {
    #[allow(clippy::too_many_arguments)]
    pub async fn add_schedule(
        &self,
        task: &str,
        task_dir: &str,
        every_s: Option<i64>,
        cron: Option<&str>,
        budget: i64,
        proposer: &ProposerChoice,
        workload: Option<&str>,
        remote: Option<&str>,
    ) -> Result<i64> {
        Ok(sqlx::query_scalar::<_, i64>(
            "INSERT INTO schedules (task, task_dir, every_s, cron, budget, proposer, workload, created_at, remote) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(task)
        .bind(task_dir)
        .bind(every_s)
        .bind(cron)
        .bind(budget)
        .bind(proposer)
        .bind(workload)
        .bind(now())
        .bind(remote)
        .fetch_one(&self.pool)
        .await?)
    }

    pub async fn schedules(&self) -> Result<Vec<ScheduleRow>> {
        Ok(sqlx::query_as("SELECT * FROM schedules ORDER BY id")
            .fetch_all(&self.pool)
            .await?)
    }

    /// Removes a schedule; false when there was none with that id.
    pub async fn remove_schedule(&self, id: i64) -> Result<bool> {
        Ok(sqlx::query("DELETE FROM schedules WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected()
            == 1)
    }

    /// Records that the daemon started a run for a schedule (before the run, so a crash in it
    /// does not make the schedule fire again at once).
    pub async fn schedule_started(
        &self,
        id: i64,
        at: &str,
        context: &str,
        fingerprint: &str,
        reason: &str,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE schedules SET last_run_at = $1, last_context = $2, last_fingerprint = $3, last_reason = $4, last_status = 'running' WHERE id = $5",
        )
        .bind(at)
        .bind(context)
        .bind(fingerprint)
        .bind(reason)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The context a schedule's run found (remote targets' nodes are probed only by the run).
    pub async fn schedule_context(&self, id: i64, context: &str, fingerprint: &str) -> Result<()> {
        sqlx::query("UPDATE schedules SET last_context = $1, last_fingerprint = $2 WHERE id = $3")
            .bind(context)
            .bind(fingerprint)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn schedule_finished(&self, id: i64, status: &str) -> Result<()> {
        sqlx::query("UPDATE schedules SET last_status = $1 WHERE id = $2")
            .bind(status)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
