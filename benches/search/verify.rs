//! The peers' second column: what a user of a peer would ship after verifying its pick with
//! polymorph's judge. The pick at each point of a fine grid of budgets is proposed alone (a
//! replay proposer) in a replayed run against the task as given; its pairs are charged on top
//! of the peer's search. At budget B a seed ships the verified pick of the largest grid budget b
//! whose b plus its verification fit in B (the task as given if it was refused, or if nothing
//! fits).

use super::landscape::Landscape;
use super::peers::Picks;
use super::replay;
use std::collections::{BTreeMap, HashMap};

/// The budgets at which a peer's pick is taken for verification.
pub const GRID: [usize; 19] = [
    6, 10, 14, 20, 26, 32, 40, 50, 60, 76, 100, 126, 150, 176, 200, 250, 300, 350, 400,
];

/// Whether polymorph's judge accepted `pick` over the task as given, and the bench processes
/// it spent deciding.
async fn verify(l: &Landscape, pick: &serde_json::Value, seed: u64) -> (bool, usize) {
    let dir = tempfile::tempdir().unwrap();
    let rows = replay::propose_one(dir.path(), l, pick, seed).await;
    let pairs: usize = rows.iter().map(|r| r.pairs).sum();
    let accepted = rows.iter().any(|r| r.verdict == "accepted");
    (accepted, 2 * pairs)
}

/// Each peer's verified qualities per seed at each of `budgets`.
pub async fn verified(
    l: &Landscape,
    picks: &Picks,
    budgets: &[usize],
) -> BTreeMap<String, BTreeMap<usize, Vec<f64>>> {
    let start = l.start / l.best;
    let mut out: BTreeMap<String, BTreeMap<usize, Vec<f64>>> = BTreeMap::new();
    for (peer, seeds) in picks {
        let row = out.entry(format!("{peer} verified")).or_default();
        for (seed, at) in seeds {
            // (budget spent in all, quality shipped) for each grid point with a pick.
            let mut done: HashMap<String, (bool, usize)> = HashMap::new();
            let mut shipped: Vec<(usize, f64)> = Vec::new();
            for (b, pick) in at.iter().filter(|(b, p)| GRID.contains(b) && !p.is_null()) {
                let key = pick.to_string();
                if !done.contains_key(&key) {
                    done.insert(key.clone(), verify(l, pick, *seed).await);
                }
                let (accepted, cost) = done[&key];
                let truth = serde_json::from_value::<proposers::Params>(pick.clone())
                    .ok()
                    .and_then(|p| l.truth.get(&proposers::params_key(&p)).copied())
                    .map_or(0.0, |t| t / l.best);
                shipped.push((b + cost, if accepted { truth } else { start }));
            }
            for &budget in budgets {
                let q = shipped
                    .iter()
                    .rfind(|(spent, _)| *spent <= budget)
                    .map_or(start, |(_, q)| *q);
                row.entry(budget).or_default().push(q);
            }
        }
    }
    out
}
