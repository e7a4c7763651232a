//! Runs and contexts in runs.db: creating, resuming and finishing runs, their counts and usage.

use super::{Real, RunRow, Simulations, Store, now};
use crate::measure::{Verdict, plot::Point};
use crate::record::kinds::{RunProposer, RunStatus};
use anyhow::Result;

impl Store {
    pub async fn upsert_context(&self, task: &str, id: &str, fingerprint: &str) -> Result<()> {
        sqlx::query("INSERT INTO contexts (task, id, fingerprint, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING")
            .bind(task)
            .bind(id)
            .bind(fingerprint)
            .bind(now())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The unfinished runs of the same task, context and proposer, newest first.
    pub async fn resumable_runs(
        &self,
        task: &str,
        context_id: &str,
        proposer: &RunProposer,
    ) -> Result<Vec<RunRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM runs WHERE task = $1 AND context_id = $2 AND proposer = $3 AND status IN ($4, $5)
             ORDER BY id DESC",
        )
        .bind(task)
        .bind(context_id)
        .bind(proposer)
        .bind(RunStatus::Running)
        .bind(RunStatus::Interrupted)
        .fetch_all(&self.pool)
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
        let id = sqlx::query_scalar::<_, i64>(
            "INSERT INTO runs (task, task_dir, context_id, proposer, budget, seed, status, started_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .bind(task)
        .bind(task_dir)
        .bind(context_id)
        .bind(proposer)
        .bind(budget)
        .bind(seed)
        .bind(RunStatus::Running)
        .bind(now())
        .fetch_one(&self.pool)
        .await?;
        Ok(id)
    }

    pub async fn mark_running(&self, run_id: i64) -> Result<()> {
        sqlx::query(
            "UPDATE runs SET status = $1, finished_at = NULL, message = NULL WHERE id = $2",
        )
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
        sqlx::query("UPDATE runs SET start_score = $1, hand_tuned_score = $2 WHERE id = $3")
            .bind(Real(start))
            .bind(Real(hand_tuned))
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
        sqlx::query("UPDATE runs SET status = $1, finished_at = $2, message = $3 WHERE id = $4")
            .bind(status)
            .bind(now())
            .bind(message)
            .bind(run_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn run(&self, run_id: i64) -> Result<Option<RunRow>> {
        Ok(sqlx::query_as("SELECT * FROM runs WHERE id = $1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn runs(&self, task: Option<&str>) -> Result<Vec<RunRow>> {
        Ok(
            sqlx::query_as("SELECT * FROM runs WHERE $1 IS NULL OR task = $1 ORDER BY id")
                .bind(task)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    /// Candidates ever recorded in a context (zero for a context never tuned).
    pub async fn candidates_in_context(&self, task: &str, context_id: &str) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM candidates WHERE task = $1 AND context_id = $2",
        )
        .bind(task)
        .bind(context_id)
        .fetch_one(&self.pool)
        .await?)
    }

    /// Every context of a task: (id, fingerprint JSON).
    pub async fn contexts(&self, task: &str) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as(
            "SELECT id, fingerprint FROM contexts WHERE task = $1 ORDER BY created_at",
        )
        .bind(task)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The simulated contexts (`run --simulate`), each with the sha256 of the cache it replays:
    /// every reader labels what was measured in them as simulated.
    pub async fn simulations(&self) -> Result<Simulations> {
        let rows: Vec<(String, String, String)> =
            sqlx::query_as("SELECT task, id, fingerprint FROM contexts")
                .fetch_all(&self.pool)
                .await?;
        let mut out = Simulations::default();
        for (task, id, fingerprint) in rows {
            let v: serde_json::Value = serde_json::from_str(&fingerprint).unwrap_or_default();
            if let Some(sha) = v["simulation"].as_str().filter(|s| !s.is_empty()) {
                out.0.insert((task, id), sha.to_string());
            }
        }
        Ok(out)
    }

    /// Minutes a run's candidates spent waiting for the model.
    pub async fn model_minutes(&self, run_id: i64) -> Result<f64> {
        let ms: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(model_latency_ms), 0) AS BIGINT) FROM candidates WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(ms as f64 / 60_000.0)
    }

    /// `model_minutes` of every run that has candidates, in one query (for `history`).
    pub async fn model_minutes_by_run(&self) -> Result<std::collections::HashMap<i64, f64>> {
        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT run_id, CAST(COALESCE(SUM(model_latency_ms), 0) AS BIGINT) FROM candidates GROUP BY run_id",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(run, ms)| (run, ms as f64 / 60_000.0))
            .collect())
    }

    /// Candidates already recorded for a run.
    pub async fn candidates_in_run(&self, run_id: i64) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT COUNT(*) FROM candidates WHERE run_id = $1")
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
                "SELECT e.verdict, e.gain FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = $1 ORDER BY c.seq",
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
