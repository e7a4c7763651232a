//! Where a proposal came from: one type, written (`Display`) and read back (`FromStr`) in this
//! one place, as runs.db records it with each candidate and the ledger commit names it.

use std::fmt;

/// Which pool a search drew its proposal from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// One knob moved around the incumbent (or the race's leader).
    Local,
    /// Anywhere in the space the surrogate ranked.
    Wide,
    /// A uniform draw over the fresh assignments.
    Explore,
    /// TPE's pick: the best ratio of the good density to the bad among draws from the good.
    Parzen,
}

impl Reach {
    pub fn as_str(self) -> &'static str {
        match self {
            Reach::Local => "local",
            Reach::Wide => "wide",
            Reach::Explore => "explore",
            Reach::Parzen => "tpe",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Reach::Local, Reach::Wide, Reach::Explore, Reach::Parzen]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// Where a proposal came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The hill-climbing or random search: `search(local)`, `search(explore)`.
    Search(Reach),
    /// The search walking the space when its draws keep landing on tried points.
    Sweep,
    /// The model search's pick, judged in full: `search(model-local)` and the like.
    Model(Reach),
    /// A contender of the model search's race, screened only (never judged in full).
    Screen,
    /// The rest of a contender's screen, taken when it ties with the race's leader.
    Rescreen,
    /// The race's leader, judged in full in fresh pairs.
    Confirm,
    /// Line `line` (1-based) of a replay file.
    Replay { file: String, line: usize },
    /// The LLM agent, with the model that wrote it.
    Agent { model: String },
    /// The best entry `entry` of a neighbouring context, re-measured in a new one.
    WarmStart { context: String, entry: i64 },
}

impl Origin {
    /// Whether proposals of this origin are screened only: contenders, never accepted.
    pub fn screen_only(&self) -> bool {
        matches!(self, Origin::Screen | Origin::Rescreen)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Search(r) => write!(f, "search({})", r.as_str()),
            Origin::Sweep => write!(f, "search(sweep)"),
            Origin::Model(r) => write!(f, "search(model-{})", r.as_str()),
            Origin::Screen => write!(f, "search(model-screen)"),
            Origin::Rescreen => write!(f, "search(model-rescreen)"),
            Origin::Confirm => write!(f, "search(model-confirm)"),
            Origin::Replay { file, line } => write!(f, "replay:{file}:{line}"),
            Origin::Agent { model } => write!(f, "agent({model})"),
            Origin::WarmStart { context, entry } => write!(f, "warm-start({context}:e{entry})"),
        }
    }
}

impl std::str::FromStr for Origin {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let inside = |prefix: &str| s.strip_prefix(prefix)?.strip_suffix(')');
        let parsed = if let Some(how) = inside("search(") {
            match how {
                "sweep" => Some(Origin::Sweep),
                "model-screen" => Some(Origin::Screen),
                "model-rescreen" => Some(Origin::Rescreen),
                "model-confirm" => Some(Origin::Confirm),
                other => match other.strip_prefix("model-") {
                    Some(r) => Reach::parse(r).map(Origin::Model),
                    None => Reach::parse(other).map(Origin::Search),
                },
            }
        } else if let Some(rest) = s.strip_prefix("replay:") {
            rest.rsplit_once(':').and_then(|(file, line)| {
                Some(Origin::Replay {
                    file: file.to_string(),
                    line: line.parse().ok()?,
                })
            })
        } else if let Some(model) = inside("agent(") {
            Some(Origin::Agent {
                model: model.to_string(),
            })
        } else if let Some(at) = inside("warm-start(") {
            at.rsplit_once(":e").and_then(|(context, entry)| {
                Some(Origin::WarmStart {
                    context: context.to_string(),
                    entry: entry.parse().ok()?,
                })
            })
        } else {
            None
        };
        parsed.ok_or_else(|| format!("{s:?} is not a proposal origin"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_origin_reads_back_as_written() {
        let all = [
            Origin::Search(Reach::Local),
            Origin::Search(Reach::Explore),
            Origin::Sweep,
            Origin::Model(Reach::Wide),
            Origin::Model(Reach::Parzen),
            Origin::Screen,
            Origin::Rescreen,
            Origin::Confirm,
            Origin::Replay {
                file: "c:/x.jsonl".into(),
                line: 3,
            },
            Origin::Agent {
                model: "qwen2.5-coder:1.5b".into(),
            },
            Origin::WarmStart {
                context: "ab12".into(),
                entry: 7,
            },
        ];
        for o in all {
            assert_eq!(o.to_string().parse::<Origin>(), Ok(o.clone()), "{o}");
        }
        assert_eq!(Origin::Confirm.to_string(), "search(model-confirm)");
        assert!(Origin::Rescreen.screen_only() && !Origin::Confirm.screen_only());
        for bad in ["search(model-sideways)", "replay:x", "warm", "agent(x"] {
            assert!(bad.parse::<Origin>().is_err(), "{bad}");
        }
    }
}
