//! The bench output protocol: every stdout line that is a JSON object with `"metric"` and
//! `"value"` is a measurement, `"case"` names the shape (default `default`). One bench process is
//! one sample; its score is the objective's weighted geometric mean over cases (`objective.rs`). A sample with a duplicate, missing,
//! non-finite, subnormal or non-positive measurement is invalid, never a number. A task may
//! declare a limit line (the hardware's speed of light, measured in the same process).

use super::text_enum::text_enum;
use serde_json::Value;
use std::collections::BTreeMap;

/// Case name used when a measurement line has no `"case"`.
pub const DEFAULT_CASE: &str = "default";

/// One bench process's measurements of the task's metric, by case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub cases: BTreeMap<String, f64>,
    /// The hardware's limit the same process measured (`[metric] limit`, e.g. the device's copy
    /// bandwidth), when the task declares one.
    pub limit: Option<f64>,
    /// What the machine was like when the process started (the task's `[commands] state`).
    pub state: Option<String>,
}

/// Every measurement of `metric` in a bench's stdout, by case; an invalid one is an error.
fn measurements(stdout: &str, metric: &str) -> Result<BTreeMap<String, f64>, String> {
    let mut cases = BTreeMap::new();
    for line in stdout.lines() {
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        let (Some(m), Some(v)) = (obj.get("metric"), obj.get("value")) else {
            continue;
        };
        if m.as_str() != Some(metric) {
            continue;
        }
        let case = match obj.get("case") {
            None => DEFAULT_CASE.to_string(),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(other) => return Err(format!("bad case name {other} in {line:?}")),
        };
        let value = v
            .as_f64()
            .ok_or_else(|| format!("value of case {case} is not a number: {v}"))?;
        if !value.is_finite() || value <= 0.0 {
            return Err(format!(
                "value of case {case} is {value}: a metric must be a positive finite number"
            ));
        }
        if !value.is_normal() {
            return Err(format!(
                "value of case {case} is {value:e}: a subnormal number is no measurement"
            ));
        }
        if cases.insert(case.clone(), value).is_some() {
            return Err(format!("duplicate metric line for case {case}"));
        }
    }
    if cases.is_empty() {
        return Err(format!("no {metric:?} metric line in the bench output"));
    }
    Ok(cases)
}

/// Reads the measurements of `metric` from a bench's stdout, and the one `limit` line when the
/// task declares a limit.
pub fn parse_sample(stdout: &str, metric: &str, limit: Option<&str>) -> Result<Sample, String> {
    let cases = measurements(stdout, metric)?;
    let limit = match limit {
        None => None,
        Some(name) => {
            let lines = measurements(stdout, name)?;
            match lines.get(DEFAULT_CASE) {
                Some(v) if lines.len() == 1 => Some(*v),
                _ => {
                    return Err(format!(
                        "the {name:?} limit must be one line without a case"
                    ));
                }
            }
        }
    };
    Ok(Sample {
        cases,
        limit,
        state: None,
    })
}

/// The cases of `metric` in a bench's stdout whose line carries no positive `"verified"` count
/// (the outputs of its timed calls it compared with a reference): a bench that verifies nothing
/// cannot tell a kernel that does less work when it is timed.
pub fn unverified_cases(stdout: &str, metric: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| match serde_json::from_str::<Value>(line.trim()) {
            Ok(Value::Object(obj)) if obj.get("metric").and_then(Value::as_str) == Some(metric) => {
                let verified = obj.get("verified").and_then(Value::as_f64).unwrap_or(0.0);
                (verified <= 0.0).then(|| {
                    obj.get("case")
                        .and_then(Value::as_str)
                        .unwrap_or(DEFAULT_CASE)
                        .to_string()
                })
            }
            _ => None,
        })
        .collect()
}

text_enum! {
    /// Which tree of a pair a sample measured.
    pub enum SampleSide {
        Incumbent = "incumbent",
        Candidate = "candidate",
    }
}

text_enum! {
    /// Which series of an evaluation a pair belongs to: the one the judge decided on, or the
    /// fresh series that confirmed an acceptance.
    pub enum Series {
        First = "first",
        Confirmation = "confirmation",
    }
}

/// Checks that a candidate's sample has exactly the cases of the incumbent's.
pub fn same_cases(expected: &Sample, got: &Sample) -> Result<(), String> {
    if let Some(missing) = expected.cases.keys().find(|c| !got.cases.contains_key(*c)) {
        return Err(format!("missing metric line for case {missing}"));
    }
    if let Some(extra) = got.cases.keys().find(|c| !expected.cases.contains_key(*c)) {
        return Err(format!("unexpected metric line for case {extra}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_without_a_positive_verified_count_is_named() {
        let out = "{\"metric\": \"gflops\", \"case\": \"a\", \"value\": 2, \"verified\": 16}\n\
                   {\"metric\": \"gflops\", \"case\": \"b\", \"value\": 2}\n\
                   {\"metric\": \"gflops\", \"value\": 2, \"verified\": 0}\n\
                   {\"metric\": \"copy_gbps\", \"value\": 9}\n";
        assert_eq!(unverified_cases(out, "gflops"), ["b", "default"]);
    }

    #[test]
    fn reads_cases_and_ignores_other_lines() {
        let out = "warming up\n{\"metric\": \"gflops\", \"case\": \"a\", \"value\": 2}\n{\"metric\": \"ms\", \"value\": 9}\n{\"metric\":\"gflops\",\"case\":\"b\",\"value\":8}\n";
        let s = parse_sample(out, "gflops", None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.cases.len(), 2);
        assert!((crate::measure::objective::Weights::default().score(&s) - 4.0).abs() < 1e-9);
    }

    #[test]
    fn invalid_samples_are_errors_not_numbers() {
        let line = |case: &str, v: &str| {
            format!("{{\"metric\": \"g\", \"case\": \"{case}\", \"value\": {v}}}\n")
        };
        for (out, want) in [
            (format!("{}{}", line("a", "1"), line("a", "2")), "duplicate"),
            (String::from("nothing here\n"), "no \"g\" metric line"),
            (line("a", "0"), "positive finite"),
            (line("a", "-3"), "positive finite"),
            (line("a", "\"fast\""), "not a number"),
            (line("a", "5e-324"), "subnormal"),
        ] {
            let err = parse_sample(&out, "g", None).err().unwrap_or_default();
            assert!(err.contains(want), "{out}: {err}");
        }
        let a = parse_sample(&line("a", "1"), "g", None).unwrap_or_else(|e| panic!("{e}"));
        let b = parse_sample(&line("b", "1"), "g", None).unwrap_or_else(|e| panic!("{e}"));
        let with = format!("{}{{\"metric\": \"bw\", \"value\": 9}}\n", line("a", "3"));
        assert_eq!(
            parse_sample(&with, "g", Some("bw")).map(|s| s.limit),
            Ok(Some(9.0))
        );
        assert!(parse_sample(&line("a", "3"), "g", Some("bw")).is_err());
        assert!(same_cases(&a, &b).is_err());
    }
}
