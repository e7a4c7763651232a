//! The search bench's tables: per landscape, each strategy's and peer's score against random
//! search at each budget (mean, its 95% interval, the 10th percentile over seeds), and the
//! summary over the test half with the targets.

use super::landscape::Landscape;
use polymorph::engine::simulate::score::against_random;
use polymorph::measure::student;
use std::collections::BTreeMap;

/// The budgets, in bench processes, at which what each would ship is scored.
pub const BUDGETS: [usize; 5] = [25, 50, 100, 200, 400];
/// The targets hold from this budget up.
const TARGET_FROM: usize = 50;
/// The quality a seed should reach, and by which budget.
const GOOD: f64 = 0.95;
const GOOD_BY: usize = 200;

pub const LEGEND: &str = "Score against random search at 25 / 50 / 100 / 200 / 400 bench processes \
(0: random search's expectation, 1: the best): mean ±95% interval, (10th percentile); \
>=0.95: seeds whose shipped configuration is at 0.95 of the best or better by 200 processes.";

/// One strategy's qualities per seed at each budget.
#[derive(Clone)]
pub struct Row {
    quality: BTreeMap<usize, Vec<f64>>,
}

impl Row {
    pub fn from_seeds(quality: BTreeMap<usize, Vec<f64>>) -> Self {
        Row { quality }
    }

    fn good_share(&self) -> Option<f64> {
        let q = self.quality.get(&GOOD_BY)?;
        Some(q.iter().filter(|x| **x >= GOOD).count() as f64 / q.len().max(1) as f64)
    }
}

/// Mean, half-width of its 95% interval (Student's t) and 10th percentile of `xs`.
fn describe(xs: &[f64]) -> (f64, f64, f64) {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n.max(1) as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n.max(2) - 1) as f64;
    let half = if n > 1 {
        student::quantile(0.025, (n - 1) as f64) * (var / n as f64).sqrt()
    } else {
        f64::NAN
    };
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let at = 0.1 * (n.max(1) - 1) as f64;
    let (lo, frac) = (at.floor() as usize, at.fract());
    let p10 = s.get(lo).copied().unwrap_or(f64::NAN) * (1.0 - frac)
        + s.get(lo + 1).copied().unwrap_or(0.0) * frac;
    (mean, half, p10)
}

/// One landscape's rows.
pub struct Table {
    name: String,
    train: bool,
    kernel_tuner: bool,
    /// Random search's expected quality at each budget (one-pair evaluations, 2 processes).
    random: BTreeMap<usize, f64>,
    configurations: usize,
    start: f64,
    rows: Vec<(String, Row)>,
}

impl Table {
    pub fn new(l: &Landscape, train: bool) -> Self {
        Table {
            name: l.name.clone(),
            train,
            kernel_tuner: !l.name.ends_with(".json"),
            random: BUDGETS
                .iter()
                .map(|b| (*b, l.random_expectation(b / 2)))
                .collect(),
            configurations: l.truth.len(),
            start: l.start / l.best,
            rows: Vec::new(),
        }
    }

    fn scores(&self, row: &Row, budget: usize) -> Option<Vec<f64>> {
        let e = self.random[&budget];
        Some(
            row.quality
                .get(&budget)?
                .iter()
                .map(|q| against_random(*q, e))
                .collect(),
        )
    }

    pub fn print_header(&self) {
        let half = if self.train { "train" } else { "test" };
        let random: Vec<String> = self.random.values().map(|e| format!("{e:.3}")).collect();
        println!(
            "\n{} ({half} half): {} measured configurations; the start at {:.3} of the best; random search's expected quality {}",
            self.name,
            self.configurations,
            self.start,
            random.join(" / ")
        );
    }

    pub fn add(&mut self, name: &str, row: Row, extra: &str) {
        let cells: Vec<String> = BUDGETS
            .iter()
            .map(|b| match self.scores(&row, *b) {
                Some(s) => {
                    let (m, h, p) = describe(&s);
                    format!("{m:>6.3} ±{h:.3} ({p:>6.3})")
                }
                None => format!("{:>22}", "-"),
            })
            .collect();
        let good = row
            .good_share()
            .map_or("-".into(), |g| format!("{:.0}%", 100.0 * g));
        println!("{name:<22} {}  {good:>5}  {extra}", cells.join(" "));
        self.rows.push((name.to_string(), row));
    }

    fn row(&self, name: &str) -> Option<&Row> {
        self.rows.iter().find(|(n, _)| n == name).map(|(_, r)| r)
    }
}

/// Means over landscapes, per half and kind, and the targets on the test half.
pub fn summary(tables: &[Table], default: &str) {
    for (train, half) in [(false, "test"), (true, "train")] {
        for (kt, kind) in [
            (true, "Kernel Tuner landscapes"),
            (false, "polymorph's recorded caches"),
        ] {
            let group: Vec<&Table> = tables
                .iter()
                .filter(|t| t.train == train && t.kernel_tuner == kt)
                .collect();
            if group.is_empty() {
                continue;
            }
            println!(
                "\n{half} half, {kind} ({}): mean over landscapes of each one's mean score ±95% (10th percentile over every seed); landscapes with >=90% of seeds at {GOOD} by {GOOD_BY}",
                group
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for (name, _) in &group[0].rows {
                let cells: Vec<String> = BUDGETS
                    .iter()
                    .map(|b| {
                        let per: Vec<(f64, f64, Vec<f64>)> = group
                            .iter()
                            .filter_map(|t| {
                                let s = t.scores(t.row(name)?, *b)?;
                                let (m, h, _) = describe(&s);
                                Some((m, h, s))
                            })
                            .collect();
                        if per.is_empty() {
                            return format!("{:>22}", "-");
                        }
                        let l = per.len() as f64;
                        let mean = per.iter().map(|p| p.0).sum::<f64>() / l;
                        let half = per.iter().map(|p| p.1 * p.1).sum::<f64>().sqrt() / l;
                        let all: Vec<f64> = per.iter().flat_map(|p| p.2.clone()).collect();
                        format!("{mean:>6.3} ±{half:.3} ({:>6.3})", describe(&all).2)
                    })
                    .collect();
                let good = group
                    .iter()
                    .filter(|t| {
                        t.row(name)
                            .and_then(Row::good_share)
                            .is_some_and(|g| g >= 0.9)
                    })
                    .count();
                println!("{name:<22} {}  {good}/{}", cells.join(" "), group.len());
            }
        }
    }
    for t in tables.iter().filter(|t| !t.train) {
        let Some(mine) = t.row(default) else { return };
        for b in BUDGETS.iter().filter(|b| **b >= TARGET_FROM) {
            let ours = describe(&t.scores(mine, *b).unwrap_or_default()).0;
            // Against the peers as they ship, and against their picks once verified.
            for verified in [false, true] {
                let best_peer = t
                    .rows
                    .iter()
                    .filter(|(n, _)| !n.starts_with("polymorph"))
                    .filter(|(n, _)| n.ends_with(" verified") == verified)
                    .filter_map(|(n, r)| Some((n, describe(&t.scores(r, *b)?).0)))
                    .max_by(|a, c| a.1.total_cmp(&c.1));
                if let Some((peer, s)) = best_peer
                    && ours < s
                {
                    println!(
                        "target missed: {} at {b} processes, {default} {ours:.3} < {peer} {s:.3}",
                        t.name
                    );
                }
            }
        }
        if mine.good_share().is_some_and(|g| g < 0.9) {
            println!(
                "target missed: {}: {default} at {GOOD} of the best by {GOOD_BY} processes in {:.0}% of seeds (< 90%)",
                t.name,
                100.0 * mine.good_share().unwrap_or(0.0)
            );
        }
    }
}
