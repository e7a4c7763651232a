//! runs.db: SQLite through sqlx (WAL, foreign keys, embedded append-only migrations). Each
//! evaluation is written in one transaction with its candidate, samples and ledger entry, so a
//! run killed at any moment leaves either all of an evaluation or none of it.

use anyhow::{Context as _, Result, bail};
use serde_json::Value;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
};
use sqlx::{Column, FromRow, Row, TypeInfo, ValueRef};
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[derive(Debug, Clone, FromRow)]
pub struct RunRow {
    pub id: i64,
    pub task: String,
    pub task_dir: String,
    pub context_id: String,
    pub proposer: String,
    pub budget: i64,
    pub seed: i64,
    pub status: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub start_score: Option<f64>,
    pub hand_tuned_score: Option<f64>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, FromRow)]
pub struct EntryRow {
    pub id: i64,
    pub kind: String,
    pub candidate_id: Option<i64>,
    pub task: String,
    pub context_id: String,
    pub branch: String,
    pub commit_sha: String,
    pub parent_entry_id: Option<i64>,
    pub score: Option<f64>,
    pub params: Option<String>,
    pub review_state: String,
    pub created_at: String,
    pub reviewed_by: Option<String>,
    pub reviewed_at: Option<String>,
    pub review_reason: Option<String>,
}

/// An accepted entry with its review state and the numbers that got it accepted.
#[derive(Debug, Clone, FromRow, serde::Serialize)]
pub struct ReviewRow {
    pub entry: i64,
    pub review_state: String,
    pub reviewed_by: Option<String>,
    pub task: String,
    pub context_id: String,
    pub commit_sha: String,
    pub created_at: String,
    pub candidate: i64,
    pub proposer: String,
    pub origin: String,
    pub reason: String,
    pub gain: Option<f64>,
    pub gain_low: Option<f64>,
    pub gain_high: Option<f64>,
}

#[derive(Debug, Clone, FromRow)]
pub struct CandidateRow {
    pub id: i64,
    pub run_id: i64,
    pub seq: i64,
    pub task: String,
    pub context_id: String,
    pub proposer: String,
    pub origin: String,
    pub note: Option<String>,
    pub kind: String,
    pub payload: String,
    pub diff: Option<String>,
    pub parent_entry_id: Option<i64>,
    pub created_at: String,
    pub verdict: String,
    pub reason: String,
    pub stage: String,
    pub gain: Option<f64>,
    pub gain_low: Option<f64>,
    pub gain_high: Option<f64>,
    pub confidence: Option<f64>,
    pub incumbent_score: Option<f64>,
    pub candidate_score: Option<f64>,
    pub pairs: i64,
    pub bench_seconds: f64,
    pub process_seconds: f64,
    pub overhead_ms: f64,
    pub log: Option<String>,
    pub model: Option<String>,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
}

#[derive(Debug, Clone, FromRow, serde::Serialize)]
pub struct ScheduleRow {
    pub id: i64,
    pub task: String,
    pub task_dir: String,
    pub every_s: Option<i64>,
    pub cron: Option<String>,
    pub budget: i64,
    pub proposer: String,
    pub workload: Option<String>,
    pub created_at: String,
    pub last_run_at: Option<String>,
    pub last_context: Option<String>,
    pub last_fingerprint: Option<String>,
    pub last_status: Option<String>,
    pub last_reason: Option<String>,
}

#[derive(Debug, Clone, FromRow)]
pub struct SampleRow {
    pub round: i64,
    pub side: String,
    pub case_name: String,
    pub value: f64,
}

/// A candidate and its evaluation, as written in one transaction.
#[derive(Debug, Clone)]
pub struct NewEvaluation {
    pub run_id: i64,
    pub seq: i64,
    pub task: String,
    pub context_id: String,
    pub proposer: String,
    pub origin: String,
    pub note: Option<String>,
    pub kind: &'static str,
    pub payload: String,
    pub params_key: Option<String>,
    pub diff: Option<String>,
    pub parent_entry_id: Option<i64>,
    pub verdict: &'static str,
    pub reason: String,
    pub stage: &'static str,
    pub gain: Option<(f64, f64, f64, f64)>,
    pub incumbent_score: Option<f64>,
    pub candidate_score: Option<f64>,
    pub pairs: i64,
    pub bench_seconds: f64,
    pub process_seconds: f64,
    pub overhead_ms: f64,
    pub log: Option<String>,
    /// (round, side, case, value)
    pub samples: Vec<(i64, &'static str, String, f64)>,
    pub usage: Option<agent::Usage>,
}

/// The ledger entry of an accepted candidate, written with its evaluation.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub branch: String,
    pub commit_sha: String,
    pub score: Option<f64>,
    pub params: Option<String>,
}

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    path: std::path::PathBuf,
}

impl Store {
    /// Opens (creating if missing) runs.db at `path` and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<Store> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts)
            .await
            .with_context(|| format!("opening {} (is it an SQLite database?)", path.display()))?;
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )
        .fetch_all(&pool)
        .await
        .with_context(|| format!("{} is not an SQLite database", path.display()))?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
            bail!(
                "{} is not a polymorph database (it has other tables: {}); pass --db elsewhere",
                path.display(),
                tables.join(", ")
            );
        }
        MIGRATOR
            .run(&pool)
            .await
            .with_context(|| format!("migrating {}", path.display()))?;
        Ok(Store {
            pool,
            path: path.to_path_buf(),
        })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

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
        proposer: &str,
    ) -> Result<Option<RunRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM runs WHERE task = ? AND context_id = ? AND proposer = ? AND status IN ('running', 'interrupted')
             ORDER BY id DESC LIMIT 1",
        )
        .bind(task)
        .bind(context_id)
        .bind(proposer)
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn create_run(
        &self,
        task: &str,
        task_dir: &str,
        context_id: &str,
        proposer: &str,
        budget: i64,
        seed: i64,
    ) -> Result<i64> {
        let id = sqlx::query(
            "INSERT INTO runs (task, task_dir, context_id, proposer, budget, seed, status, started_at) VALUES (?, ?, ?, ?, ?, ?, 'running', ?)",
        )
        .bind(task)
        .bind(task_dir)
        .bind(context_id)
        .bind(proposer)
        .bind(budget)
        .bind(seed)
        .bind(now())
        .execute(&self.pool)
        .await?
        .last_insert_rowid();
        Ok(id)
    }

    pub async fn mark_running(&self, run_id: i64) -> Result<()> {
        sqlx::query(
            "UPDATE runs SET status = 'running', finished_at = NULL, message = NULL WHERE id = ?",
        )
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

    pub async fn finish_run(&self, run_id: i64, status: &str, message: Option<&str>) -> Result<()> {
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

    /// Model tokens (prompt + completion) and requests spent by a run.
    pub async fn run_usage(&self, run_id: i64) -> Result<(i64, i64)> {
        Ok(sqlx::query_as(
            "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0), COALESCE(SUM(model_requests), 0) FROM candidates WHERE run_id = ?",
        )
        .bind(run_id)
        .fetch_one(&self.pool)
        .await?)
    }

    /// The candidates of some runs in evaluation order, for `history --plot`.
    pub async fn plot_points(&self, run_ids: &[i64]) -> Result<Vec<crate::plot::Point>> {
        let mut out = Vec::new();
        for id in run_ids {
            let rows: Vec<(String, Option<f64>)> = sqlx::query_as(
                "SELECT e.verdict, e.gain FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = ? ORDER BY c.seq",
            )
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
            out.extend(
                rows.into_iter()
                    .map(|(verdict, gain)| crate::plot::Point { verdict, gain }),
            );
        }
        Ok(out)
    }

    /// Verdict counts of a run: (verdict, count).
    pub async fn verdict_counts(&self, run_id: i64) -> Result<Vec<(String, i64)>> {
        Ok(sqlx::query_as(
            "SELECT e.verdict, COUNT(*) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = ? GROUP BY e.verdict",
        )
        .bind(run_id)
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

    pub async fn insert_origin(
        &self,
        task: &str,
        context_id: &str,
        branch: &str,
        commit: &str,
        params: Option<&str>,
    ) -> Result<i64> {
        Ok(sqlx::query(
            "INSERT INTO ledger_entries (kind, task, context_id, branch, commit_sha, params, review_state, created_at)
             VALUES ('origin', ?, ?, ?, ?, ?, 'approved', ?)",
        )
        .bind(task)
        .bind(context_id)
        .bind(branch)
        .bind(commit)
        .bind(params)
        .bind(now())
        .execute(&self.pool)
        .await?
        .last_insert_rowid())
    }

    /// The incumbent of a branch: its newest entry not rejected by a reviewer.
    pub async fn incumbent(&self, branch: &str) -> Result<Option<EntryRow>> {
        Ok(sqlx::query_as("SELECT * FROM ledger_entries WHERE branch = ? AND review_state != 'rejected' ORDER BY id DESC LIMIT 1")
            .bind(branch)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The newest entry of a branch, whatever its review state: where the git branch must point.
    pub async fn branch_tip(&self, branch: &str) -> Result<Option<EntryRow>> {
        Ok(
            sqlx::query_as(
                "SELECT * FROM ledger_entries WHERE branch = ? ORDER BY id DESC LIMIT 1",
            )
            .bind(branch)
            .fetch_optional(&self.pool)
            .await?,
        )
    }

    /// The first entry of a branch: the task as given.
    pub async fn origin(&self, branch: &str) -> Result<Option<EntryRow>> {
        Ok(
            sqlx::query_as("SELECT * FROM ledger_entries WHERE branch = ? AND kind = 'origin'")
                .bind(branch)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    pub async fn entries(&self, task: Option<&str>) -> Result<Vec<EntryRow>> {
        Ok(
            sqlx::query_as(
                "SELECT * FROM ledger_entries WHERE ?1 IS NULL OR task = ?1 ORDER BY id",
            )
            .bind(task)
            .fetch_all(&self.pool)
            .await?,
        )
    }

    pub async fn entry(&self, id: i64) -> Result<Option<EntryRow>> {
        Ok(sqlx::query_as("SELECT * FROM ledger_entries WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn entry_by_commit(&self, prefix: &str) -> Result<Vec<EntryRow>> {
        Ok(
            sqlx::query_as("SELECT * FROM ledger_entries WHERE commit_sha LIKE ? || '%'")
                .bind(prefix)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    pub async fn entry_for_candidate(&self, candidate_id: i64) -> Result<Option<EntryRow>> {
        Ok(
            sqlx::query_as("SELECT * FROM ledger_entries WHERE candidate_id = ?")
                .bind(candidate_id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    pub async fn candidate(&self, id: i64) -> Result<Option<CandidateRow>> {
        Ok(sqlx::query_as(
            "SELECT c.id, c.run_id, c.seq, c.task, c.context_id, c.proposer, c.origin, c.note, c.kind, c.payload, c.diff,
                    c.parent_entry_id, c.created_at, e.verdict, e.reason, e.stage, e.gain, e.gain_low, e.gain_high, e.confidence,
                    e.incumbent_score, e.candidate_score, e.pairs, e.bench_seconds, e.process_seconds, e.overhead_ms, e.log,
                    c.model, c.prompt_tokens, c.completion_tokens
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

    /// Records a candidate, its evaluation, its samples and (when accepted) its ledger entry
    /// in one transaction. Returns (candidate id, entry id).
    pub async fn record(
        &self,
        ev: &NewEvaluation,
        entry: Option<&NewEntry>,
    ) -> Result<(i64, Option<i64>)> {
        let mut tx = self.pool.begin().await?;
        let candidate_id = sqlx::query(
            "INSERT INTO candidates (run_id, seq, task, context_id, proposer, origin, note, kind, payload, params_key, diff, parent_entry_id, created_at,
                model, prompt_tokens, completion_tokens, model_requests, model_latency_ms)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(ev.run_id)
        .bind(ev.seq)
        .bind(&ev.task)
        .bind(&ev.context_id)
        .bind(&ev.proposer)
        .bind(&ev.origin)
        .bind(&ev.note)
        .bind(ev.kind)
        .bind(&ev.payload)
        .bind(&ev.params_key)
        .bind(&ev.diff)
        .bind(ev.parent_entry_id)
        .bind(now())
        .bind(ev.usage.as_ref().map(|u| u.model.clone()))
        .bind(ev.usage.as_ref().map(|u| u.prompt_tokens as i64))
        .bind(ev.usage.as_ref().map(|u| u.completion_tokens as i64))
        .bind(ev.usage.as_ref().map(|u| u.requests as i64))
        .bind(ev.usage.as_ref().map(|u| u.latency_ms as i64))
        .execute(&mut *tx)
        .await?
        .last_insert_rowid();
        let (gain, low, high, conf) = match ev.gain {
            Some((g, l, h, c)) => (Some(g), Some(l), Some(h), Some(c)),
            None => (None, None, None, None),
        };
        sqlx::query(
            "INSERT INTO evaluations (candidate_id, verdict, reason, stage, gain, gain_low, gain_high, confidence, incumbent_score,
                candidate_score, pairs, bench_seconds, process_seconds, overhead_ms, log, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(candidate_id)
        .bind(ev.verdict)
        .bind(&ev.reason)
        .bind(ev.stage)
        .bind(gain)
        .bind(low)
        .bind(high)
        .bind(conf)
        .bind(ev.incumbent_score)
        .bind(ev.candidate_score)
        .bind(ev.pairs)
        .bind(ev.bench_seconds)
        .bind(ev.process_seconds)
        .bind(ev.overhead_ms)
        .bind(&ev.log)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        for (round, side, case, value) in &ev.samples {
            sqlx::query("INSERT INTO samples (candidate_id, round, side, case_name, value) VALUES (?, ?, ?, ?, ?)")
                .bind(candidate_id)
                .bind(round)
                .bind(*side)
                .bind(case)
                .bind(value)
                .execute(&mut *tx)
                .await?;
        }
        let entry_id = match entry {
            Some(e) => Some(
                sqlx::query(
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
                .execute(&mut *tx)
                .await?
                .last_insert_rowid(),
            ),
            None => None,
        };
        tx.commit().await?;
        Ok((candidate_id, entry_id))
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn add_schedule(
        &self,
        task: &str,
        task_dir: &str,
        every_s: Option<i64>,
        cron: Option<&str>,
        budget: i64,
        proposer: &str,
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

    /// Accepted entries, oldest first; only those in `state` (e.g. pending) when given.
    pub async fn reviews(&self, task: Option<&str>, state: Option<&str>) -> Result<Vec<ReviewRow>> {
        Ok(sqlx::query_as(
            "SELECT l.id AS entry, l.review_state, l.reviewed_by, l.task, l.context_id, l.commit_sha, l.created_at,
                    c.id AS candidate, c.proposer, c.origin, e.reason, e.gain, e.gain_low, e.gain_high
             FROM ledger_entries l JOIN candidates c ON c.id = l.candidate_id JOIN evaluations e ON e.candidate_id = c.id
             WHERE l.kind = 'accepted' AND (?1 IS NULL OR l.task = ?1) AND (?2 IS NULL OR l.review_state = ?2)
             ORDER BY l.id",
        )
        .bind(task)
        .bind(state)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn approve(&self, entry_id: i64, by: &str, note: Option<&str>) -> Result<()> {
        sqlx::query("UPDATE ledger_entries SET review_state = 'approved', reviewed_by = ?, reviewed_at = ?, review_reason = ? WHERE id = ?")
            .bind(by)
            .bind(now())
            .bind(note)
            .bind(entry_id)
            .execute(&self.pool)
            .await?;
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
        let mut tx = self.pool.begin().await?;
        let ids: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM ledger_entries WHERE branch = ? AND id >= ? AND kind = 'accepted' AND review_state != 'rejected' ORDER BY id",
        )
        .bind(&entry.branch)
        .bind(entry.id)
        .fetch_all(&mut *tx)
        .await?;
        let at = now();
        for id in &ids {
            let why = if *id == entry.id {
                reason.to_string()
            } else {
                format!("built on rejected e{}: {reason}", entry.id)
            };
            sqlx::query("UPDATE ledger_entries SET review_state = 'rejected', reviewed_by = ?, reviewed_at = ?, review_reason = ? WHERE id = ?")
                .bind(by)
                .bind(&at)
                .bind(why)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        let newest: i64 = sqlx::query_scalar("SELECT MAX(id) FROM ledger_entries WHERE branch = ?")
            .bind(&entry.branch)
            .fetch_one(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO reverts (branch, commit_sha, reverted_entry_id, restores_entry_id, after_entry_id, reason, reviewed_by, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
            sqlx::query_as("SELECT commit_sha, after_entry_id FROM reverts WHERE branch = ? ORDER BY id DESC LIMIT 1")
                .bind(branch)
                .fetch_optional(&self.pool)
                .await?;
        Ok(match (tip, revert) {
            (Some(t), Some((sha, after))) if after >= t.id => Some(sha),
            (Some(t), _) => Some(t.commit_sha),
            (None, _) => None,
        })
    }

    /// Runs one read-only statement on a separate read-only connection; rows as JSON objects.
    pub async fn query_readonly(&self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Value>>)> {
        let opts = SqliteConnectOptions::new()
            .filename(&self.path)
            .read_only(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(opts)
            .await?;
        let rows: Vec<SqliteRow> = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
            .fetch_all(&pool)
            .await
            .map_err(|e| {
                let msg = e.to_string();
                if msg.contains("readonly") {
                    anyhow::anyhow!("query is read-only: the statement tried to write ({msg})")
                } else {
                    anyhow::anyhow!("query failed: {msg}")
                }
            })?;
        pool.close().await;
        let columns: Vec<String> = rows
            .first()
            .map(|r| r.columns().iter().map(|c| c.name().to_string()).collect())
            .unwrap_or_default();
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut vals = Vec::with_capacity(columns.len());
            for i in 0..row.columns().len() {
                let raw = row.try_get_raw(i)?;
                let v = if raw.is_null() {
                    Value::Null
                } else {
                    match raw.type_info().name() {
                        "INTEGER" => Value::from(row.try_get::<i64, _>(i)?),
                        "REAL" => Value::from(row.try_get::<f64, _>(i)?),
                        "BLOB" => {
                            Value::from(format!("<{} bytes>", row.try_get::<Vec<u8>, _>(i)?.len()))
                        }
                        _ => Value::from(row.try_get::<String, _>(i)?),
                    }
                };
                vals.push(v);
            }
            out.push(vals);
        }
        Ok((columns, out))
    }
}
