//! A stand-in for a learning agent's trajectories, for scheduling benchmarks: some episodes
//! solve their task (the reference solution), the others wander until the step limit, the
//! way real web agents fail. Which one an episode does depends only on its seed, so async
//! and lockstep schedules see the same mix. Trajectory lengths then vary per rollout of a
//! task, not only per task, which is what makes lockstep's holes real.

use futures::FutureExt;
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use browser_pool::{Action, Scroll};

use super::random::choose;
use super::{Decision, Policy, PolicyError, ScriptedPolicy, StepInput};

/// Solves a `solve_share` of its episodes, wanders to the horizon in the rest.
#[derive(Debug, Clone, Copy)]
pub struct AgentLike {
    solve_share: f64,
}

impl AgentLike {
    /// `solve_share` is clamped to [0, 1].
    pub fn new(solve_share: f64) -> AgentLike {
        AgentLike {
            solve_share: if solve_share.is_nan() {
                0.0
            } else {
                solve_share.clamp(0.0, 1.0)
            },
        }
    }

    /// Whether the episode with this seed is one of the solved ones.
    pub fn solves(&self, seed: u64) -> bool {
        StdRng::seed_from_u64(seed ^ 0x5EED_A6E7).random::<f64>() < self.solve_share
    }
}

impl Policy for AgentLike {
    fn name(&self) -> &str {
        "agent-like"
    }

    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        if self.solves(input.seed) {
            return ScriptedPolicy.decide(input);
        }
        // A wandering agent does not give up: it keeps acting until the horizon.
        let (action, thought) = match choose(&input) {
            (Action::Stop | Action::Answer(_), _) => {
                (Action::Scroll(Scroll::Down), "wander: scroll".to_string())
            }
            other => other,
        };
        async move { Ok(Decision::action(action, format!("wander: {thought}"))) }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_solved_share_follows_the_setting() {
        let half = AgentLike::new(0.5);
        let solved = (0..2000u64).filter(|&s| half.solves(s)).count();
        assert!((900..1100).contains(&solved), "{solved} of 2000");
        assert!((0..100u64).all(|s| AgentLike::new(1.0).solves(s)));
        assert!((0..100u64).all(|s| !AgentLike::new(0.0).solves(s)));
        assert!((0..100u64).all(|s| !AgentLike::new(f64::NAN).solves(s)));
    }
}
