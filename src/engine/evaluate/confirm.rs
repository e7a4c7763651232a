//! The confirmation series that bounds false acceptance per run. A candidate the judge accepts
//! is judged again, in a fresh series of pairs, the incumbent and the candidate built afresh
//! under another code layout (`Harness::confirm_tree`), and committed only when that series
//! accepts it too. The judge's one-sided error at the threshold is alpha = 2.5% a series,
//! so a candidate with no real gain passes both with probability at most alpha^2 (0.0625%), and a
//! run of B candidates, whatever proposes them (hill, random, replay, the agent, remote `--jobs`
//! batches, the same change proposed again), accepts one with probability at most B * alpha^2:
//! 2.5% for 40 candidates, where one series alone allows B * alpha (up to 63%). The cost is one
//! more series for each accepted candidate, six pairs or more: accepts are few.

use super::evaluation::Evaluation;
use crate::measure::Verdict;

/// Whether `first` needs a confirmation series: only an acceptance does (a quarantined
/// candidate goes to a person, and every other verdict is already a refusal).
pub fn needs_confirmation(first: &Evaluation) -> bool {
    first.verdict == Verdict::Accepted && !first.cancelled
}

/// The candidate's evaluation from its first, accepting series and the confirmation series:
/// the confirmation's verdict and figures, both series' pairs and times.
pub fn confirmed(first: Evaluation, mut second: Evaluation) -> Evaluation {
    second.reason = match second.verdict {
        Verdict::Accepted => format!(
            "{}; confirmed in a fresh series ({})",
            first.reason, second.reason
        ),
        Verdict::Failed | Verdict::Quarantined => format!(
            "{} in its confirmation series, after \"{}\"",
            second.reason, first.reason
        ),
        Verdict::Rejected | Verdict::Held => {
            second.verdict = Verdict::Rejected;
            format!(
                "not confirmed in a fresh series: {} (its first series: {})",
                second.reason, first.reason
            )
        }
    };
    // The first series' build stays the one kept: the confirmation's was made under another
    // code layout, and every later candidate is built under the usual one.
    second.built = first.built.or(second.built);
    let mut pairs = first.pairs;
    second.confirmation_from = Some(pairs.len());
    pairs.append(&mut second.pairs);
    second.pairs = pairs;
    second.bench_seconds += first.bench_seconds;
    second.process_seconds += first.process_seconds;
    second.diff = first.diff.or(second.diff);
    second.cancelled |= first.cancelled;
    second.harness_fault = first.harness_fault.or(second.harness_fault);
    second
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::evaluate::Failure;
    use crate::record::Stage;

    fn ev(verdict: Verdict, reason: &str, pairs: usize) -> Evaluation {
        let mut e = Evaluation::failed(Failure::new(Stage::Judge, reason));
        e.verdict = verdict;
        e.pairs = vec![Default::default(); pairs];
        e.bench_seconds = 1.0;
        e
    }

    #[test]
    fn a_candidate_is_committed_only_when_both_series_accept_it() {
        let first = ev(Verdict::Accepted, "faster: +9.0%", 6);
        assert!(needs_confirmation(&first));
        let both = confirmed(first, ev(Verdict::Accepted, "faster: +8.1%", 6));
        assert_eq!(both.verdict, Verdict::Accepted);
        assert!(
            both.reason
                .contains("confirmed in a fresh series (faster: +8.1%)")
        );
        assert_eq!((both.pairs.len(), both.bench_seconds), (12, 2.0));
        let refused = confirmed(
            ev(Verdict::Accepted, "faster: +9.0%", 6),
            ev(Verdict::Rejected, "inconclusive", 20),
        );
        assert_eq!(refused.verdict, Verdict::Rejected);
        assert!(
            refused
                .reason
                .starts_with("not confirmed in a fresh series: inconclusive")
        );
        assert!(!needs_confirmation(&ev(Verdict::Quarantined, "", 6)));
        assert!(!needs_confirmation(&ev(Verdict::Rejected, "", 6)));
    }
}
