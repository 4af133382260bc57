//! Lifecycle states, each spelled once: a campaign's or a training run's [`Status`], an
//! episode's [`EpisodeStatus`], a training iteration's [`Phase`] and [`Stage`].
//!
//! Each is a closed enum with one text form, used alike by the database columns (sqlx
//! encodes and decodes it as `TEXT`), the API's JSON (serde) and the CLI; an unknown word
//! read back from any of them is an error, never a new state.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgHasArrayType, PgTypeInfo, PgValueRef};
use sqlx::{Decode, Encode, Postgres, Type};

/// A word that names no state of its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {value:?} (expected one of: {expected})")]
pub struct UnknownState {
    /// Which kind of state was read.
    pub kind: &'static str,
    /// The word.
    pub value: String,
    /// The words it could have been.
    pub expected: String,
}

/// Text form, parsing, serde and sqlx for an enum of states, from one table of words.
macro_rules! states {
    (
        $(#[$meta:meta])*
        $name:ident ($kind:literal) {
            $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every state, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The one text form (database, JSON, CLI).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownState;
            fn from_str(s: &str) -> Result<Self, UnknownState> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownState {
                        kind: $kind,
                        value: s.to_string(),
                        expected: [$($text),+].join(", "),
                    }),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        impl Type<Postgres> for $name {
            fn type_info() -> PgTypeInfo {
                <&str as Type<Postgres>>::type_info()
            }
            fn compatible(ty: &PgTypeInfo) -> bool {
                <&str as Type<Postgres>>::compatible(ty)
            }
        }

        impl PgHasArrayType for $name {
            fn array_type_info() -> PgTypeInfo {
                <&str as PgHasArrayType>::array_type_info()
            }
        }

        impl Encode<'_, Postgres> for $name {
            fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
                <&str as Encode<Postgres>>::encode_by_ref(&self.as_str(), buf)
            }
        }

        impl<'r> Decode<'r, Postgres> for $name {
            fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
                let s = <&str as Decode<Postgres>>::decode(value)?;
                Ok(s.parse()?)
            }
        }
    };
}

states! {
    /// Where a campaign or a training run stands (a campaign's `status`, a run's `state`):
    /// queued until a scheduler takes it, running, paused by a user, then ended.
    Status ("status") {
        /// Waiting for a scheduler.
        Queued = "queued",
        /// A scheduler is running it.
        Running = "running",
        /// Paused by a user; resumes as queued.
        Paused = "paused",
        /// Every episode (every iteration) ended.
        Completed = "completed",
        /// Cancelled by a user.
        Cancelled = "cancelled",
        /// Stopped by an error it cannot retry.
        Failed = "failed",
    }
}

impl Status {
    /// Completed, cancelled or failed: nothing more will happen to it.
    pub fn is_ended(self) -> bool {
        matches!(self, Status::Completed | Status::Cancelled | Status::Failed)
    }

    /// The states a scheduler or a user may still move it out of.
    pub const UNFINISHED: &'static [Status] = &[Status::Queued, Status::Running, Status::Paused];

    /// The ended states.
    pub const ENDED: &'static [Status] = &[Status::Completed, Status::Cancelled, Status::Failed];
}

states! {
    /// Where one episode stands.
    EpisodeStatus ("episode status") {
        /// Planned, waiting for a runner.
        Pending = "pending",
        /// Leased by a runner.
        Running = "running",
        /// Stored with its outcome.
        Finished = "finished",
        /// Given up after its attempts (infrastructure, never the agent).
        Failed = "failed",
        /// Its campaign was cancelled before it ran.
        Cancelled = "cancelled",
    }
}

/// Which episodes a list asks for by status: one status, or the finished ones split by
/// whether their rubric could be evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFilter {
    /// Episodes in this status.
    Is(EpisodeStatus),
    /// Finished and judged (no `judge_error`): what training and success rates count.
    Judged,
    /// Finished, but the rubric could not be evaluated.
    JudgeError,
}

impl StatusFilter {
    /// Every word a filter may be, for error messages and API schemas.
    pub fn words() -> Vec<&'static str> {
        let mut w: Vec<&str> = EpisodeStatus::ALL.iter().map(|s| s.as_str()).collect();
        w.extend(["judged", "judge_error"]);
        w
    }
}

impl FromStr for StatusFilter {
    type Err = UnknownState;
    fn from_str(s: &str) -> Result<Self, UnknownState> {
        match s {
            "judged" => Ok(StatusFilter::Judged),
            "judge_error" => Ok(StatusFilter::JudgeError),
            _ => s.parse().map(StatusFilter::Is).map_err(|_| UnknownState {
                kind: "episode status filter",
                value: s.to_string(),
                expected: StatusFilter::words().join(", "),
            }),
        }
    }
}

states! {
    /// A training iteration's phase: rollouts of the newest version, the update, the
    /// held-out evaluation.
    Phase ("phase") {
        /// Rollout campaigns of the newest version, judged.
        Rollout = "rollout",
        /// The update, publishing the iteration's version.
        Train = "train",
        /// The greedy evaluation of the iteration's version.
        Eval = "eval",
    }
}

states! {
    /// What an iteration's row records: the phase it is in, or done.
    Stage ("iteration phase") {
        /// Collecting rollouts.
        Rollout = "rollout",
        /// Training.
        Train = "train",
        /// Evaluating.
        Eval = "eval",
        /// Every phase done.
        Done = "done",
    }
}

impl Stage {
    /// The phase it is in (None when done).
    pub fn phase(self) -> Option<Phase> {
        match self {
            Stage::Rollout => Some(Phase::Rollout),
            Stage::Train => Some(Phase::Train),
            Stage::Eval => Some(Phase::Eval),
            Stage::Done => None,
        }
    }
}

/// A new iteration's row starts collecting rollouts.
impl Default for Stage {
    fn default() -> Stage {
        Stage::Rollout
    }
}

impl From<Phase> for Stage {
    fn from(p: Phase) -> Stage {
        match p {
            Phase::Rollout => Stage::Rollout,
            Phase::Train => Stage::Train,
            Phase::Eval => Stage::Eval,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_its_own_word_and_nothing_else() {
        for s in Status::ALL {
            assert_eq!(s.as_str().parse::<Status>(), Ok(*s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for s in EpisodeStatus::ALL {
            assert_eq!(s.as_str().parse::<EpisodeStatus>(), Ok(*s));
        }
        for s in Stage::ALL {
            assert_eq!(s.as_str().parse::<Stage>(), Ok(*s));
            assert_eq!(s.phase().map(Stage::from).unwrap_or(Stage::Done), *s);
        }
        for w in StatusFilter::words() {
            assert!(w.parse::<StatusFilter>().is_ok(), "{w}");
        }
        assert_eq!("judged".parse(), Ok(StatusFilter::Judged));
        assert_eq!(
            "failed".parse(),
            Ok(StatusFilter::Is(EpisodeStatus::Failed))
        );
        assert!("done".parse::<StatusFilter>().is_err());
        let e = "Completed".parse::<Status>().unwrap_err();
        assert_eq!(e.value, "Completed");
        assert!(e.to_string().contains("queued, running"), "{e}");
        assert!(serde_json::from_str::<Status>("\"done\"").is_err());
    }

    #[test]
    fn ended_and_unfinished_split_every_status() {
        for s in Status::ALL {
            assert_ne!(Status::ENDED.contains(s), Status::UNFINISHED.contains(s));
            assert_eq!(s.is_ended(), Status::ENDED.contains(s));
        }
    }
}
