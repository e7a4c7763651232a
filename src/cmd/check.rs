//! `polymorph check`: validate a task, then build, test and benchmark its starting source, its
//! hand-tuned baseline and any ledger entries named, interleaved, and print them side by side.

use super::output::print_json;
use crate::cli::{CheckArgs, Cli};
use anyhow::{Context as _, Result};
use polymorph::engine::{Built, Harness, runner};
use polymorph::measure::metric::Bound;
use polymorph::measure::objective::Weights;
use polymorph::measure::{Metric, Sample, log_gain, median};
use polymorph::record::{Ledger, Store};
use polymorph::task::{Resolved, resolve};
use polymorph::view::resolve_entry;
use sandbox::{CancelFlag, FileTree};
use serde_json::{Value, json};
use std::path::Path;

pub async fn check(cli: &Cli, a: CheckArgs, cancel: CancelFlag) -> Result<()> {
    let extra = if a.entries.is_empty() {
        Vec::new()
    } else {
        entry_trees(&cli.db(), &cli.ledger(), &a.entries).await?
    };
    let r = resolve(&a.task_dir, a.workload.as_deref())?;
    r.check_requirements()?;
    let rounds = a.rounds.max(1);
    let runner = runner(&[&cli.db(), &cli.ledger()]);
    let (names, samples, unverified) = measure(&r, &runner, rounds, extra, cancel)?;
    let isolation = format!(
        "{}; limits: {}",
        runner.isolation().describe(),
        runner.describe_limits()
    );
    let table = Table::new(&names, &samples, &r.task.metric.weights);
    if !unverified.is_empty() {
        eprintln!(
            "warning: the bench verifies nothing of its timed calls for {} (no positive \"verified\" count on the metric line): a kernel that does less work when it is timed would pass; docs/writing-a-task.md says how a bench checks them",
            unverified.join(", ")
        );
    }
    if a.json {
        let mut out = table.json(&r, &isolation);
        out["unverified_cases"] = json!(unverified);
        return print_json(&out);
    }
    table.print(&r, &isolation, rounds);
    Ok(())
}

/// Ledger entries by id, as (name, tree); their editable files go onto the checked task.
async fn entry_trees(
    db: &Path,
    ledger_path: &Path,
    ids: &[String],
) -> Result<Vec<(String, FileTree)>> {
    let store = Store::open_existing(db).await?;
    let ledger = Ledger::open_or_init(ledger_path)?;
    let mut out = Vec::new();
    for id in ids {
        let e = resolve_entry(&store, id)
            .await?
            .with_context(|| format!("no ledger entry {id} (give e7 or a commit prefix)"))?;
        out.push((format!("e{}", e.id), ledger.read_tree(e.commit()?)?));
    }
    Ok(out)
}

/// Each tree's name, its samples, and the cases a bench process verified nothing of.
type Measured = (Vec<String>, Vec<Vec<Sample>>, Vec<String>);

/// Builds and tests every tree, then benchmarks them interleaved, `rounds` samples each.
fn measure(
    r: &Resolved,
    runner: &sandbox::Runner,
    rounds: usize,
    extra: Vec<(String, FileTree)>,
    cancel: CancelFlag,
) -> Result<Measured> {
    let mut h = Harness::of(r, runner, cancel)?;
    let mut names = vec!["start".to_string()];
    let mut built: Vec<Built> = vec![
        h.prepare(r.source.clone())
            .map_err(|f| anyhow::anyhow!("the task as given: {}", f.reason))?,
    ];
    if let Some(hand) = r.hand_tuned.clone() {
        built.push(
            h.prepare(hand)
                .map_err(|f| anyhow::anyhow!("the hand-tuned baseline: {}", f.reason))?,
        );
        names.push("hand_tuned".to_string());
    }
    for (name, tree) in extra {
        let mut t = r.source.clone();
        for (p, b) in tree.iter().filter(|(p, _)| r.task.is_editable(p)) {
            t.insert(p.clone(), b.clone());
        }
        built.push(
            h.prepare(t)
                .map_err(|f| anyhow::anyhow!("entry {name}: {}", f.reason))?,
        );
        names.push(name);
    }
    let refs: Vec<&Built> = built.iter().collect();
    let samples = h.measure(&refs, rounds)?;
    let unverified = h.unverified_cases().iter().cloned().collect();
    Ok((names, samples, unverified))
}

/// Per tree and case, the median of its samples.
struct Table<'a> {
    names: &'a [String],
    cases: Vec<String>,
    /// [tree][case]
    medians: Vec<Vec<f64>>,
    scores: Vec<f64>,
    /// [tree]: the median of the hardware limit each tree's bench processes measured.
    limits: Vec<Option<f64>>,
}

impl<'a> Table<'a> {
    fn new(names: &'a [String], samples: &[Vec<Sample>], weights: &Weights) -> Self {
        let cases: Vec<String> = samples[0][0].cases.keys().cloned().collect();
        let medians = samples
            .iter()
            .map(|s| {
                cases
                    .iter()
                    .map(|c| median(&s.iter().map(|x| x.cases[c]).collect::<Vec<_>>()))
                    .collect()
            })
            .collect();
        let scores = samples.iter().map(|s| weights.median_score(s)).collect();
        let limits = samples
            .iter()
            .map(|s| {
                let l: Vec<f64> = s.iter().filter_map(|x| x.limit).collect();
                (!l.is_empty()).then(|| median(&l))
            })
            .collect();
        Table {
            names,
            cases,
            medians,
            scores,
            limits,
        }
    }

    fn json(&self, r: &Resolved, isolation: &str) -> Value {
        let trees: Vec<Value> = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let c: serde_json::Map<String, Value> = self
                    .cases
                    .iter()
                    .zip(&self.medians[i])
                    .map(|(c, m)| (c.clone(), json!(m)))
                    .collect();
                let fractions: serde_json::Map<String, Value> = match self.limits[i] {
                    Some(l) => self
                        .cases
                        .iter()
                        .zip(&self.medians[i])
                        .map(|(c, m)| (c.clone(), json!(m / l)))
                        .collect(),
                    None => serde_json::Map::new(),
                };
                let of_bound: serde_json::Map<String, Value> = self
                    .of_bound(&r.task.metric, i)
                    .into_iter()
                    .map(|(c, f)| (c, json!(f)))
                    .collect();
                json!({ "name": n, "score": self.scores[i], "cases": c, "limit": self.limits[i], "fraction_of_limit": fractions, "fraction_of_bound": of_bound })
            })
            .collect();
        json!({
            "task": r.task.name, "context_id": r.context_id, "metric": r.task.metric.name,
            "direction": r.task.metric.direction.as_str(), "isolation": isolation, "trees": trees,
        })
    }

    fn print(&self, r: &Resolved, isolation: &str, rounds: usize) {
        let metric = &r.task.metric;
        println!(
            "task {} ok: builds, passes its test, benchmarks ({rounds} rounds each, interleaved)",
            r.task.name
        );
        println!("context {}  isolation: {isolation}", r.context_id);
        print!(
            "{:<24}",
            format!("{} ({})", metric.name, metric.direction.as_str())
        );
        for n in self.names {
            print!("{n:>14}");
        }
        println!();
        for (k, c) in self.cases.iter().enumerate() {
            print!("{c:<24}");
            for m in &self.medians {
                print!("{:>14.4}", m[k]);
            }
            println!();
        }
        print!("{:<24}", "score (geomean)");
        for s in &self.scores {
            print!("{s:>14.4}");
        }
        println!();
        if let Some(limit) = &metric.limit {
            self.print_fractions(limit);
        }
        let of_bound: Vec<_> = (0..self.names.len())
            .map(|i| self.of_bound(metric, i))
            .collect();
        for (k, c) in self
            .cases
            .iter()
            .enumerate()
            .filter(|_| metric.bound.is_some())
        {
            print!("{:<24}", format!("{c} / bound"));
            for tree in &of_bound {
                let f = tree[k].1;
                print!(
                    "{:>14}",
                    f.map_or("-".into(), |f| format!("{:.1}%", f * 100.0))
                );
            }
            println!();
        }
        for (name, score) in self.names.iter().zip(&self.scores).skip(1) {
            let g = log_gain(metric.direction, self.scores[0], *score).exp();
            println!("{name} is {g:.2}x the start");
        }
    }

    /// Tree `i`'s median of each case as a fraction of the machine's bound the task declares
    /// (1.0 = the bound reached); `None` for a case without a bound.
    fn of_bound(&self, metric: &Metric, i: usize) -> Vec<(String, Option<f64>)> {
        let Some(bound) = &metric.bound else {
            return Vec::new();
        };
        self.cases
            .iter()
            .zip(&self.medians[i])
            .map(|(c, m)| {
                let f = bound
                    .of(c)
                    .map(|b| Bound::fraction(metric.direction, *m, b));
                (c.clone(), f)
            })
            .collect()
    }

    /// Each case as a share of the hardware's limit its own processes measured.
    fn print_fractions(&self, limit: &str) {
        print!("{:<24}", format!("{limit} (measured)"));
        for l in &self.limits {
            print!("{:>14}", l.map_or("-".to_string(), |l| format!("{l:.1}")));
        }
        println!();
        for (k, c) in self.cases.iter().enumerate() {
            print!("{:<24}", format!("{c} / {limit}"));
            for (m, l) in self.medians.iter().zip(&self.limits) {
                print!(
                    "{:>14}",
                    l.map_or("-".to_string(), |l| format!("{:.1}%", m[k] / l * 100.0))
                );
            }
            println!();
        }
    }
}
