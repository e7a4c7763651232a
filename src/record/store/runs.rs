//! Runs and contexts in runs.db: creating, resuming and finishing runs, their counts and usage.

use super::{RunRow, Store, now};
use crate::measure::{Verdict, plot::Point};
use crate::record::kinds::{RunProposer, RunStatus};
use anyhow::Result;

impl Store {
    pub async fn upsert_context(&self, task: &str, id: &str, fingerprint: &str) -> Result<()> {
        sqlx::query("INSERT INTO contexts (task, id, fingerprint, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING")
            .bind(task)
            .bind(id)
            .bind(fingerprint)
            .bind(now())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The most recent unfinished run of the same task, context and proposer, if any.
    pub async fn resumable_run(
        &self,
        task: &str,
        context_id: &str,
        proposer: &RunProposer,
    ) -> Result<Option<RunRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM runs WHERE task = ? AND context_id = ? AND proposer = ? AND status IN (?, ?)
             ORDER BY id DESC LIMIT 1",
        )
        .bind(task)
        .bind(context_id)
        .bind(proposer)
        .bind(RunStatus::Running)
        .bind(RunStatus::Interrupted)
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn create_run(
        &self,
        task: &str,
        task_dir: &str,
        context_id: &str,
        proposer: &RunProposer,
        budget: i64,
        seed: i64,
    ) -> Result<i64> {
        let id = sqlx::query(
            "INSERT INTO runs (task, task_dir, context_id, proposer, budget, seed, status, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(task)
        .bind(task_dir)
        .bind(context_id)
        .bind(proposer)
        .bind(budget)
        .bind(seed)
        .bind(RunStatus::Running)
        .bind(now())
        .execute(&self.pool)
        .await?
        .last_insert_rowid();
        Ok(id)
    }

    pub async fn mark_running(&self, run_id: i64) -> Result<()> {
        sqlx::query("UPDATE runs SET status = ?, finished_at = NULL, message = NULL WHERE id = ?")
            .bind(RunStatus::Running)
            .bind(run_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn set_references(
        &self,
        run_id: i64,
        start: Option<f64>,
        hand_tuned: Option<f64>,
    ) -> Result<()> {
        sqlx::query("UPDATE runs SET start_score = ?, hand_tuned_score = ? WHERE id = ?")
            .bind(start)
            .bind(hand_tuned)
            .bind(run_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn finish_run(
        &self,
        run_id: i64,
        status: RunStatus,
        message: Option<&str>,
    ) -> Result<()> {
        sqlx::query("UPDATE runs SET status = ?, finished_at = ?, message = ? WHERE id = ?")
            .bind(status)
            .bind(now())
            .bind(message)
            .bind(run_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn run(&self, run_id: i64) -> Result<Option<RunRow>> {
        Ok(sqlx::query_as("SELECT * FROM runs WHERE id = ?")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn runs(&self, task: Option<&str>) -> Result<Vec<RunRow>> {
        Ok(
            sqlx::query_as("SELECT * FROM runs WHERE ?1 IS NULL OR task = ?1 ORDER BY id")
                .bind(task)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    /// Candidates ever recorded in a context (zero for a context never tuned).
    pub async fn candidates_in_context(&self, task: &str, context_id: &str) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT COUNT(*) FROM candidates WHERE task = ? AND context_id = ?")
                .bind(task)
                .bind(context_id)
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Every context of a task: (id, fingerprint JSON).
    pub async fn contexts(&self, task: &str) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as(
            "SELECT id, fingerprint FROM contexts WHERE task = ? ORDER BY created_at",
        )
        .bind(task)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Candidates already recorded for a run.
    pub async fn candidates_in_run(&self, run_id: i64) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT COUNT(*) FROM candidates WHERE run_id = ?")
                .bind(run_id)
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// The candidates of some runs in evaluation order, for `history --plot`.
    pub async fn plot_points(&self, run_ids: &[i64]) -> Result<Vec<Point>> {
        let mut out = Vec::new();
        for id in run_ids {
            let rows: Vec<(Verdict, Option<f64>)> = sqlx::query_as(
                "SELECT e.verdict, e.gain FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = ? ORDER BY c.seq",
            )
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
            out.extend(
                rows.into_iter()
                    .map(|(verdict, gain)| Point { verdict, gain }),
            );
        }
        Ok(out)
    }
}
