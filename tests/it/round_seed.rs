//! `POLYMORPH_ROUND_SEED`: both bench processes of one of the judge's pairs get the same seed,
//! and each pair a fresh one, so a task that draws its workload from it (a serving trace's
//! arrivals) compares incumbent and candidate on the same draw and many draws across the pairs.

use crate::common::replay::run_replay;
use crate::common::{Env, edit, files_line};

#[test]
fn both_sides_of_a_pair_share_its_round_seed_and_pairs_differ() {
    let env = Env::new();
    let task = env.task("frozen");
    // The figure is the round's seed (1 to 1000) times the tree's factor: shared seeds give every
    // pair a gain of exactly 2x; seeds drawn per process would give gains from 1/500x to 2000x.
    std::fs::write(
        task.join("bench.sh"),
        ". ./impl.sh\necho \"{\\\"metric\\\": \\\"ops\\\", \\\"value\\\": $(( (POLYMORPH_ROUND_SEED % 1000 + 1) * ${factor:-1} ))}\"\necho \"round $POLYMORPH_ROUND_SEED\" >&2\n",
    )
    .unwrap();
    edit(
        &task.join("task.toml"),
        "min_gain = 0.02",
        "min_gain = 0.02\nplausible_factor = 3",
    );
    let doubled = format!(
        "{}factor=2\n",
        std::fs::read_to_string(task.join("impl.sh")).unwrap()
    );
    let r = run_replay(&env, &task, &[files_line("impl.sh", &doubled, "x2")], &[]);
    assert_eq!(r[0].0, "accepted", "{:?}", r[0]);
    assert!(r[0].1.contains("+100.0%"), "{:?}", r[0]);
    // The pairs' figures (the judge's series and the confirmation's): each pair's two are 1:2,
    // and the pairs' seeds differ (a repeat among 1,000 values is allowed once).
    let pairs = env.json(&[
        "query",
        "SELECT series, round, side, value FROM samples ORDER BY candidate_id, series, round, side",
    ]);
    let rows = pairs.as_array().unwrap();
    assert!(rows.len() >= 6, "{pairs}");
    let mut incumbents = Vec::new();
    for pair in rows.chunks(2) {
        let score = |r: &serde_json::Value| r["value"].as_f64().unwrap();
        let (a, b) = (score(&pair[0]), score(&pair[1]));
        assert_eq!(a.max(b), 2.0 * a.min(b), "{pairs}");
        incumbents.push(a.min(b) as i64);
    }
    incumbents.sort();
    incumbents.dedup();
    assert!(incumbents.len() >= rows.len() / 2 - 1, "{pairs}");
}
