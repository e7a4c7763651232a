//! Schedules: when a task is due for a run. Pure functions of a schedule, the task's current
//! context and an injected clock, so the logic is tested without sleeping; the daemon does the IO.

use crate::task::Fingerprint;
use anyhow::{Result, bail};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// How often a schedule fires, besides on a change of context.
#[derive(Debug, Clone)]
pub enum When {
    Every(Duration),
    /// A five-field cron pattern, evaluated in UTC.
    Cron(Box<croner::Cron>, String),
}

impl When {
    pub fn parse_cron(pattern: &str) -> Result<When> {
        let cron: croner::Cron = pattern
            .parse()
            .map_err(|e| anyhow::anyhow!("--cron {pattern:?}: {e}"))?;
        Ok(When::Cron(Box::new(cron), pattern.to_string()))
    }

    pub fn describe(&self) -> String {
        match self {
            When::Every(d) => format!("every {}", format_duration(*d)),
            When::Cron(_, p) => format!("cron {p:?} (UTC)"),
        }
    }
}

/// What the scheduler needs to know about one schedule.
#[derive(Debug, Clone)]
pub struct ScheduleState {
    pub when: When,
    pub last_run_at: Option<DateTime<Utc>>,
    pub last_context: Option<String>,
    pub last_fingerprint: Option<Fingerprint>,
}

/// Parses `90s`, `15m`, `6h`, `1d` (a positive whole number and one unit).
pub fn parse_every(s: &str) -> Result<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        anyhow::anyhow!("--every {s:?}: expected a number and a unit, e.g. 30m or 6h")
    })?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => bail!("--every {s:?}: the unit must be s, m, h or d"),
    };
    if secs == 0 {
        bail!("--every {s:?}: the interval must be positive");
    }
    Ok(Duration::from_secs(secs))
}

pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// What changed between two fingerprints, in words.
pub fn describe_change(old: &Fingerprint, new: &Fingerprint) -> String {
    let mut what = Vec::new();
    if old.workload_sha256 != new.workload_sha256 || old.workload != new.workload {
        what.push(format!("workload changed ({})", new.workload));
    }
    if old.cpu_model != new.cpu_model || old.cpu_cores != new.cpu_cores || old.gpus != new.gpus {
        what.push("hardware changed".to_string());
    }
    if old.toolchain != new.toolchain {
        what.push("compiler or toolchain changed".to_string());
    }
    if old.model != new.model {
        what.push(format!(
            "model id changed ({:?} -> {:?})",
            old.model, new.model
        ));
    }
    if old.harness_sha256 != new.harness_sha256 {
        what.push("harness files changed".to_string());
    }
    if what.is_empty() {
        "context changed".to_string()
    } else {
        what.join(", ")
    }
}

/// Why the schedule is due now, or `None`.
pub fn due(
    s: &ScheduleState,
    now: DateTime<Utc>,
    context_id: &str,
    fingerprint: &Fingerprint,
) -> Option<String> {
    let Some(last) = s.last_run_at else {
        return Some("first run".to_string());
    };
    if s.last_context.as_deref() != Some(context_id) {
        let what = match &s.last_fingerprint {
            Some(old) => describe_change(old, fingerprint),
            None => "context changed".to_string(),
        };
        return Some(format!(
            "{what}: context {} -> {context_id}",
            s.last_context.as_deref().unwrap_or("?")
        ));
    }
    match &s.when {
        When::Every(d) => {
            let next = last + chrono::Duration::from_std(*d).ok()?;
            (now >= next).then(|| format!("{} since the last run", s.when.describe()))
        }
        When::Cron(cron, _) => {
            let next = cron.find_next_occurrence(&last, false).ok()?;
            (now >= next).then(|| format!("{} was due at {}", s.when.describe(), next.to_rfc3339()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn fp(workload: &str) -> Fingerprint {
        Fingerprint {
            cpu_model: "cpu".into(),
            cpu_cores: 2,
            gpus: vec![],
            toolchain: vec!["cc 12".into()],
            workload: "w.json".into(),
            workload_sha256: workload.into(),
            model: String::new(),
            harness_sha256: "h".into(),
            simulation: String::new(),
        }
    }

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, h, m, 0)
            .single()
            .unwrap_or_default()
    }

    fn state(when: When, last: Option<DateTime<Utc>>) -> ScheduleState {
        ScheduleState {
            when,
            last_run_at: last,
            last_context: Some(fp("a").id()),
            last_fingerprint: Some(fp("a")),
        }
    }

    #[test]
    fn intervals() {
        let s = state(When::Every(Duration::from_secs(6 * 3600)), Some(at(1, 0)));
        let f = fp("a");
        assert_eq!(due(&s, at(6, 59), &f.id(), &f), None);
        assert!(due(&s, at(7, 0), &f.id(), &f).is_some_and(|w| w.contains("every 6h")));
        let never = ScheduleState {
            last_run_at: None,
            ..s
        };
        assert_eq!(
            due(&never, at(1, 0), &f.id(), &f).as_deref(),
            Some("first run")
        );
    }

    #[test]
    fn cron_patterns_in_utc() {
        let s = state(
            When::parse_cron("0 3 * * *").unwrap_or_else(|e| panic!("{e}")),
            Some(at(3, 0)),
        );
        let f = fp("a");
        assert_eq!(due(&s, at(23, 59), &f.id(), &f), None);
        let next_day = at(3, 0) + chrono::Duration::days(1);
        assert!(due(&s, next_day, &f.id(), &f).is_some());
        assert!(When::parse_cron("not a cron").is_err());
    }

    #[test]
    fn a_changed_workload_is_due_at_once_and_says_why() {
        let s = state(When::Every(Duration::from_secs(86_400)), Some(at(1, 0)));
        let f = fp("b");
        let why = due(&s, at(1, 1), &f.id(), &f).unwrap_or_default();
        assert!(why.starts_with("workload changed (w.json)"), "{why}");
    }

    #[test]
    fn parses_intervals() {
        assert_eq!(parse_every("90s").ok(), Some(Duration::from_secs(90)));
        assert_eq!(parse_every("6h").ok(), Some(Duration::from_secs(21_600)));
        for bad in ["", "6", "h", "0m", "5w", "-1h"] {
            assert!(parse_every(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(Duration::from_secs(21_600)), "6h");
    }
}
