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
    ) -> Result<i64> {
        Ok(sqlx::query(
            "INSERT INTO schedules (task, task_dir, every_s, cron, budget, proposer, workload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(task)
        .bind(task_dir)
        .bind(every_s)
        .bind(cron)
        .bind(budget)
        .bind(proposer)
        .bind(workload)
        .bind(now())
        .execute(&self.pool)
        .await?
        .last_insert_rowid())
    }

    pub async fn schedules(&self) -> Result<Vec<ScheduleRow>> {
        Ok(sqlx::query_as("SELECT * FROM schedules ORDER BY id")
            .fetch_all(&self.pool)
            .await?)
    }

    /// Removes a schedule; false when there was none with that id.
    pub async fn remove_schedule(&self, id: i64) -> Result<bool> {
        Ok(sqlx::query("DELETE FROM schedules WHERE id = ?")
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
            "UPDATE schedules SET last_run_at = ?, last_context = ?, last_fingerprint = ?, last_reason = ?, last_status = 'running' WHERE id = ?",
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

    pub async fn schedule_finished(&self, id: i64, status: &str) -> Result<()> {
        sqlx::query("UPDATE schedules SET last_status = ? WHERE id = ?")
            .bind(status)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
