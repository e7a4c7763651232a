//! The pure layer: metric types, statistics, sample parsing, the judge and plots. It imports
//! nothing else of the crate and does no I/O (no file system, process, clock, sqlx or git2), so
//! every decision it makes is a function of its inputs and tested without a machine.

mod early;
mod guard;
pub mod judge;
mod limit;
mod mean_gain;
pub mod metric;
pub mod objective;
pub mod per_run;
pub mod plot;
pub mod power;
pub mod sample;
pub mod screen;
pub mod sequential;
mod settle;
pub mod stats;
pub mod student;
pub(crate) mod text_enum;

pub use judge::{Decision, Judge, Summary, Verdict};
pub use metric::{Direction, JudgeSettings, Metric, Rule, log_gain, pct, pct_interval};
pub use sample::{Sample, SampleSide, Series, parse_sample, same_cases, unverified_cases};
pub use screen::Spread;
pub use stats::{Interval, geomean, median, signed_rank_interval, signed_rank_interval_tails};
