//! The judge's unit tests: verdicts, reasons and quarantines on hand-made pairs.
use super::*;
use std::collections::BTreeMap;

fn metric() -> Metric {
    crate::measure::metric::test_metric()
}

fn settings() -> JudgeSettings {
    JudgeSettings {
        screen_pairs: 0,
        min_pairs: 6,
        max_pairs: 20,
        confidence: 0.95,
        floor: crate::measure::objective::Floor::Incumbent,
        rule: Default::default(),
    }
}

/// No floor: every case stands at the incumbent.
static NO_FLOOR: BTreeMap<String, f64> = BTreeMap::new();

/// A judge with no reference, spread or floor.
fn plain<'a>(metric: &'a Metric, settings: &'a JudgeSettings) -> Judge<'a> {
    Judge {
        metric,
        settings,
        reference: None,
        spread: None,
        floor: &NO_FLOOR,
    }
}

/// The reason of a quarantine decision; any other decision fails the test.
fn quarantined(d: Decision) -> String {
    match d {
        Decision::Done {
            verdict: Verdict::Quarantined,
            reason,
            ..
        } => reason,
        other => panic!("{other:?}"),
    }
}

fn sample(a: f64, b: f64) -> Sample {
    Sample {
        cases: BTreeMap::from([("a".to_string(), a), ("b".to_string(), b)]),
        limit: None,
        state: None,
    }
}

/// Pairs with a deterministic wobble of +-1% around the given case ratios.
fn pairs(n: usize, ra: f64, rb: f64) -> Vec<(Sample, Sample)> {
    (0..n)
        .map(|i| {
            let w = 1.0 + 0.01 * (((i * 7) % 5) as f64 - 2.0) / 2.0;
            (sample(100.0, 100.0), sample(100.0 * ra * w, 100.0 * rb * w))
        })
        .collect()
}

fn decide(p: &[(Sample, Sample)], reference: Option<f64>) -> (Option<Verdict>, String) {
    let (m, s) = (metric(), settings());
    let judge = Judge {
        reference,
        ..plain(&m, &s)
    };
    outcome(judge.decide(p))
}

#[test]
fn waits_for_min_pairs() {
    assert_eq!(decide(&pairs(5, 1.5, 1.5), None).0, None);
}

#[test]
fn accepts_a_clear_gain_with_its_interval() {
    let (v, reason) = decide(&pairs(6, 1.10, 1.10), None);
    assert_eq!(v, Some(Verdict::Accepted), "{reason}");
    // The wobble averages -0.3%, so the estimate is just under +10%.
    assert!(reason.starts_with("faster: +9."), "{reason}");
}

#[test]
fn rejects_no_gain_and_slower() {
    assert!(
        decide(&pairs(6, 1.0, 1.0), None)
            .1
            .starts_with("no significant gain")
    );
    assert!(
        decide(&pairs(6, 0.9, 0.9), None)
            .1
            .starts_with("slower: -10.")
    );
}

#[test]
fn rejects_a_gain_bought_with_a_regressed_case() {
    let (v, reason) = decide(&pairs(6, 1.5, 0.9), None);
    assert_eq!(v, Some(Verdict::Rejected));
    assert!(reason.starts_with("case b regresses: -10."), "{reason}");
}

#[test]
fn quarantines_implausible_gains_unless_the_reference_makes_them_plausible() {
    assert_eq!(
        decide(&pairs(6, 20.0, 20.0), None).0,
        Some(Verdict::Quarantined)
    );
    // 20x a slow incumbent but only 1x the hand-tuned baseline: plausible.
    assert_eq!(
        decide(&pairs(6, 20.0, 20.0), Some(2000.0)).0,
        Some(Verdict::Accepted)
    );
}

#[test]
fn borderline_is_inconclusive_at_the_cap() {
    let (v, reason) = decide(&pairs(20, 1.02, 1.02), None);
    assert_eq!(v, Some(Verdict::Rejected));
    assert!(reason.starts_with("inconclusive"), "{reason}");
}

#[test]
fn an_inconclusive_gain_whose_95_percent_interval_clears_the_threshold_names_the_look_s_bound() {
    // Gains of about +3.8%, spread +-4%: the 95% interval clears +2%, the stricter level of
    // the last look does not.
    let p: Vec<_> = (0..20)
        .map(|i| {
            let r = 1.038 * (1.0 + 0.04 * (((i * 7) % 9) as f64 - 4.0) / 4.0);
            (sample(100.0, 100.0), sample(100.0 * r, 100.0 * r))
        })
        .collect();
    let (v, reason) = decide(&p, None);
    assert_eq!(v, Some(Verdict::Rejected), "{reason}");
    assert!(reason.starts_with("inconclusive: +"), "{reason}");
    let shown = reason
        .split('[')
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|low| low.trim_start_matches('+').parse::<f64>().ok());
    assert!(shown.is_some_and(|low| low >= 2.0), "{reason}");
    assert!(reason.contains("at this look's 99."), "{reason}");
}

#[test]
fn a_non_finite_or_absurd_ratio_is_an_invalid_sample_not_a_stall() {
    let mut m = metric();
    m.direction = crate::measure::Direction::Minimize;
    let s = settings();
    let judge = plain(&m, &s);
    // A subnormal time on a minimize task: incumbent / candidate overflows to infinity.
    let p = vec![(sample(100.0, 100.0), sample(5e-324, 5e-324)); 3];
    match judge.decide(&p) {
        Decision::Invalid { reason } => assert!(reason.contains("pair 1"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let absurd = vec![(sample(100.0, 100.0), sample(1e-300, 1e-300)); 6];
    assert!(matches!(judge.decide(&absurd), Decision::Invalid { .. }));
}

#[test]
fn max_pairs_always_ends_the_series() {
    let p = pairs(20, 1.03, 1.03);
    let (v, _) = decide(&p, None);
    assert!(v.is_some(), "a decision at max_pairs");
}

#[test]
fn a_case_past_the_declared_bound_or_the_measured_limit_is_quarantined_at_once() {
    let (mut m, s) = (metric(), settings());
    m.bound = Some(crate::measure::metric::Bound::Every(150.0));
    // 1.6x the incumbent: far under the plausibility factor, past the machine's bound.
    let pair = |c: f64| [(sample(100.0, 100.0), sample(c, 100.0))];
    let reason = quarantined(plain(&m, &s).decide(&pair(160.0)));
    assert!(reason.contains("past the machine's bound: case a at 160.0000 x"));
    // Under the bound the series goes on.
    assert_eq!(plain(&m, &s).decide(&pair(140.0)), Decision::Continue);
    (m.bound, m.limit) = (None, Some("copy".into()));
    let mut fast = sample(130.0, 101.0);
    fast.limit = Some(120.0);
    let mut inc = sample(100.0, 100.0);
    inc.limit = Some(120.0);
    let reason = quarantined(plain(&m, &s).decide(&[(inc.clone(), fast.clone())]));
    assert!(reason.contains("case a at 130.0000 x, over the 120.0000 copy"));
    // Within 5% of the limit is the two measurements' noise: the series goes on.
    fast.limit = Some(125.0);
    assert_eq!(plain(&m, &s).decide(&[(inc, fast)]), Decision::Continue);
}

/// The verdict and reason of a decision, `None` to go on.
fn outcome(d: Decision) -> (Option<Verdict>, String) {
    match d {
        Decision::Continue => (None, String::new()),
        Decision::Invalid { reason } => (Some(Verdict::Failed), reason),
        Decision::Done {
            verdict, reason, ..
        } => (Some(verdict), reason),
    }
}

#[test]
fn a_gain_many_spreads_clear_is_settled_at_two_pairs_once_the_spread_is_known() {
    let (m, s) = (metric(), settings());
    let with_spread = |spread| Judge {
        spread,
        ..plain(&m, &s)
    };
    // +50% with a spread of 2% a pair: about 25 spreads over the threshold.
    let two = pairs(2, 1.5, 1.5);
    let (v, reason) = outcome(with_spread(Some(0.02)).decide(&two));
    assert_eq!(v, Some(Verdict::Accepted), "{reason}");
    assert!(
        reason.contains("in 2 pairs, settled early: at least +"),
        "{reason}"
    );
    // With no spread known, or a spread that makes +50% only a few spreads, it goes on.
    assert_eq!(with_spread(None).decide(&two), Decision::Continue);
    assert_eq!(with_spread(Some(0.06)).decide(&two), Decision::Continue);
    // A screen-only contender is held, never accepted, however clear.
    let screen = Judge {
        spread: Some(0.02),
        ..plain(&m, &s)
    };
    let screening = JudgeSettings {
        screen_pairs: 2,
        ..settings()
    };
    let screen = Judge {
        settings: &screening,
        ..screen
    };
    assert_eq!(outcome(screen.screen(&two)).0, Some(Verdict::Held));
    // The rule before 2026-12-05 has no early look.
    let old = JudgeSettings {
        rule: Rule::PseudoMedian,
        ..settings()
    };
    let before = Judge {
        settings: &old,
        spread: Some(0.02),
        ..plain(&m, &s)
    };
    assert_eq!(before.decide(&two), Decision::Continue);
}

#[test]
fn slow_processes_that_pull_the_mean_under_the_threshold_are_refused_though_the_median_clears_it() {
    // 19 pairs at about +8% and one 3.3x slower: the pseudo-median's bound clears +2% at 20
    // pairs, the mean is +1.4%.
    let p: Vec<_> = (0..20)
        .map(|i| {
            let r = if i == 2 {
                0.3
            } else {
                1.08 * (1.0 + 0.002 * (i % 3) as f64)
            };
            (sample(100.0, 100.0), sample(100.0 * r, 100.0 * r))
        })
        .collect();
    let (v, reason) = decide(&p, None);
    assert_eq!(v, Some(Verdict::Rejected), "{reason}");
    assert!(reason.contains("the bound on its mean gain is"), "{reason}");
    let (m, old) = (
        metric(),
        JudgeSettings {
            rule: Rule::PseudoMedian,
            ..settings()
        },
    );
    let before = plain(&m, &old);
    let accepted_at = (6..=20).find(|&n| outcome(before.decide(&p[..n])).0.is_some());
    assert_eq!(
        accepted_at.map(|n| outcome(before.decide(&p[..n])).0),
        Some(Some(Verdict::Accepted)),
        "the rule before accepted it"
    );
}

#[test]
fn a_look_whose_level_no_pairs_can_reach_accepts_nothing() {
    // At 99% the level of the first look is 0.25%; six pairs all far ahead are only 1/64 sure.
    let (m, s) = (
        metric(),
        JudgeSettings {
            confidence: 0.99,
            ..settings()
        },
    );
    let judge = plain(&m, &s);
    assert_eq!(judge.decide(&pairs(6, 1.5, 1.5)), Decision::Continue);
    assert_eq!(
        outcome(judge.decide(&pairs(9, 1.5, 1.5))).0,
        Some(Verdict::Accepted)
    );
}
