//! The closed sets of states runs.db stores as text (stage, run status, entry kind, review state,
//! change kind, proposer), and the sqlx conversions that let them, and the judge's verdict and
//! sample side, travel through queries as enums rather than strings.

use crate::measure::text_enum::text_enum;
use crate::measure::{SampleSide, Series, Verdict};
use std::path::PathBuf;

text_enum! {
    /// Where an evaluation ended: the last stage it reached.
    pub enum Stage {
        Verify = "verify",
        Build = "build",
        Test = "test",
        Bench = "bench",
        Judge = "judge",
        Retest = "retest",
    }
}

text_enum! {
    /// A run's state; `running` and `interrupted` runs resume.
    pub enum RunStatus {
        Running = "running",
        Finished = "finished",
        Interrupted = "interrupted",
        Failed = "failed",
    }
}

text_enum! {
    /// What a ledger entry is: the task as given, or an accepted candidate.
    pub enum EntryKind {
        Origin = "origin",
        Accepted = "accepted",
    }
}

text_enum! {
    /// A human's decision on a ledger entry.
    pub enum ReviewState {
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
    }
}

text_enum! {
    /// The form a candidate was proposed in.
    pub enum ChangeKind {
        Diff = "diff",
        Files = "files",
        Params = "params",
    }
}

text_enum! {
    /// The proposer behind a candidate (a run's proposer adds the replay file, see `RunProposer`).
    pub enum ProposerKind {
        Search = "search",
        Agent = "agent",
        Replay = "replay",
    }
}

/// Lets a type with `Display` and `FromStr` be bound to a query and read from a row as its text
/// form; text the type does not know is a decode error naming what was expected.
macro_rules! sql_text {
    ($($t:ty),+ $(,)?) => {$(
        impl<DB: sqlx::Database> sqlx::Type<DB> for $t
        where
            String: sqlx::Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <String as sqlx::Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <String as sqlx::Type<DB>>::compatible(ty)
            }
        }

        impl<'q, DB: sqlx::Database> sqlx::Encode<'q, DB> for $t
        where
            String: sqlx::Encode<'q, DB>,
        {
            fn encode_by_ref(
                &self,
                buf: &mut <DB as sqlx::Database>::ArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <String as sqlx::Encode<'q, DB>>::encode(self.to_string(), buf)
            }
        }

        impl<'r, DB: sqlx::Database> sqlx::Decode<'r, DB> for $t
        where
            &'r str: sqlx::Decode<'r, DB>,
        {
            fn decode(
                value: <DB as sqlx::Database>::ValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                Ok(<&'r str as sqlx::Decode<'r, DB>>::decode(value)?.parse::<$t>()?)
            }
        }
    )+};
}

sql_text!(
    Verdict,
    SampleSide,
    Series,
    Stage,
    RunStatus,
    EntryKind,
    ReviewState,
    ChangeKind,
    ProposerKind
);

/// A run's proposer as runs.db stores it: `search`, `agent`, or `replay:FILE` with the replay
/// file's absolute path (a resumed run reads the same file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunProposer {
    Search,
    Agent,
    Replay(PathBuf),
}

/// The prefix of a replay proposer's text form.
const REPLAY_PREFIX: &str = "replay:";

impl RunProposer {
    pub fn kind(&self) -> ProposerKind {
        match self {
            RunProposer::Search => ProposerKind::Search,
            RunProposer::Agent => ProposerKind::Agent,
            RunProposer::Replay(_) => ProposerKind::Replay,
        }
    }
}

impl std::fmt::Display for RunProposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunProposer::Replay(file) => f.pad(&format!("{REPLAY_PREFIX}{}", file.display())),
            other => f.pad(other.kind().as_str()),
        }
    }
}

impl std::str::FromStr for RunProposer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.strip_prefix(REPLAY_PREFIX) {
            Some(file) if !file.is_empty() => Ok(RunProposer::Replay(PathBuf::from(file))),
            Some(_) => Err(format!("{s:?}: replay needs a file, as in replay:FILE")),
            None => match s.parse::<ProposerKind>()? {
                ProposerKind::Search => Ok(RunProposer::Search),
                ProposerKind::Agent => Ok(RunProposer::Agent),
                ProposerKind::Replay => {
                    Err(format!("{s:?}: replay needs a file, as in replay:FILE"))
                }
            },
        }
    }
}

/// A proposer as a user names it (`--proposer`, a schedule): `auto` picks when the run starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProposerChoice {
    Auto,
    Given(RunProposer),
}

impl std::fmt::Display for ProposerChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProposerChoice::Auto => f.pad("auto"),
            ProposerChoice::Given(p) => p.fmt(f),
        }
    }
}

impl std::str::FromStr for ProposerChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(ProposerChoice::Auto);
        }
        s.parse().map(ProposerChoice::Given).map_err(|_| {
            format!("unknown proposer {s:?}: expected auto, search, agent or replay:FILE")
        })
    }
}

sql_text!(RunProposer, ProposerChoice);

/// Serialized as their text form, as runs.db stores them.
macro_rules! serialize_as_text {
    ($($t:ty),+) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )+};
}

serialize_as_text!(RunProposer, ProposerChoice);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_proposers_round_trip_through_text() {
        for p in [
            RunProposer::Search,
            RunProposer::Agent,
            RunProposer::Replay(PathBuf::from("/tmp/c.jsonl")),
        ] {
            assert_eq!(p.to_string().parse::<RunProposer>(), Ok(p));
        }
        assert!("replay:".parse::<RunProposer>().is_err());
        assert!("replay".parse::<RunProposer>().is_err());
        assert!("hill".parse::<RunProposer>().is_err());
        assert_eq!("auto".parse::<ProposerChoice>(), Ok(ProposerChoice::Auto));
        assert_eq!(
            "search".parse::<ProposerChoice>(),
            Ok(ProposerChoice::Given(RunProposer::Search))
        );
        let err = "hill".parse::<ProposerChoice>().err().unwrap_or_default();
        assert!(
            err.contains("expected auto, search, agent or replay:FILE"),
            "{err}"
        );
    }
}
