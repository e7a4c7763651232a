//! The search's own cost per proposal, apart from any task: each strategy asked for its next
//! proposal with 1,000 measured assignments in the context (a 4-knob space of 3,072
//! assignments, two cases each), the median and 90th percentile of 200 calls.
//!
//! cargo bench --bench proposal [-- OBSERVATIONS]   (default 1,000)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polymorph::measure::median;
use proposers::{
    Goal, ModelProposer, Observation, ParamSpace, ProposalContext, Proposer, SearchProposer,
    TpeProposer, params_key,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Instant;

const CALLS: usize = 200;

fn space() -> ParamSpace {
    let values = BTreeMap::from([
        ("A".to_string(), (0..8).map(Value::from).collect()),
        ("B".to_string(), (0..8).map(Value::from).collect()),
        ("C".to_string(), (0..8).map(Value::from).collect()),
        ("D".to_string(), (0..6).map(Value::from).collect()),
    ]);
    ParamSpace::new(values, &BTreeMap::new()).unwrap()
}

/// `n` distinct assignments, each measured against the incumbent on two cases.
fn context(n: usize) -> ProposalContext {
    let all = space().all_valid();
    let step = all.len() / n;
    let mut ctx = ProposalContext {
        incumbent_params: Some(all[0].clone()),
        can_screen: true,
        screen_pairs: 2,
        remaining: Some(100),
        ..ProposalContext::default()
    };
    let observations = std::sync::Arc::make_mut(&mut ctx.observations);
    for (i, p) in all.iter().step_by(step.max(1)).take(n).enumerate() {
        let v = |k: &str| p[k].as_f64().unwrap();
        let x = 100.0 - (v("A") - 5.0).powi(2) - (v("B") - 2.0).powi(2) + (i % 7) as f64;
        ctx.tried_params.insert(params_key(p));
        observations.push(Observation {
            params: p.clone(),
            candidate: BTreeMap::from([("x".into(), x), ("y".into(), x * 0.9 + v("C"))]),
            incumbent: BTreeMap::from([("x".into(), 80.0), ("y".into(), 75.0)]),
            screened_only: true,
            pairs: 2,
            carried: false,
        });
    }
    ctx
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000);
    let ctx = context(n);
    let goal = Goal {
        maximize: true,
        min_gain: 0.02,
        case_tolerance: 0.05,
        weights: BTreeMap::new(),
    };
    println!(
        "{} observations in the context; {CALLS} calls each",
        ctx.observations.len()
    );
    let strategies: Vec<(&str, Box<dyn Proposer>)> = vec![
        ("tpe", Box::new(TpeProposer::new(space(), 1, goal.clone()))),
        (
            "model",
            Box::new(ModelProposer::new(space(), 1, goal.clone())),
        ),
        ("hill", Box::new(SearchProposer::new(space(), 1))),
        ("random", Box::new(SearchProposer::random(space(), 1))),
    ];
    for (name, mut proposer) in strategies {
        let mut ms = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let t = Instant::now();
            let p = proposer.next(&ctx).await.unwrap();
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(p.is_some(), "{name} proposed nothing");
        }
        ms.sort_by(f64::total_cmp);
        println!(
            "{name:<7} median {:.2} ms, p90 {:.2} ms",
            median(&ms),
            ms[CALLS * 9 / 10]
        );
    }
}
