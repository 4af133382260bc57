//! Interaction-horizon curricula: how many steps each training task's rollouts may take in
//! each iteration. TTI's stages, WebGym's caps by difficulty, a fixed horizon, linear and
//! stepwise schedules (AgentGym-RL's ScalingInter-RL), and an adaptive one per task that
//! none of them has. Pure functions of the iteration and the task's recorded history.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The schedule, as a run's config names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Curriculum {
    /// The same horizon in every iteration.
    Fixed {
        /// Steps.
        horizon: u32,
    },
    /// TTI: 10 in iteration 1, 20 in iterations 2-3, 30 from 4.
    Tti,
    /// WebGym: easy tasks (1-3 facts) 10, medium (4-6) 20, hard (7+) 30.
    Difficulty,
    /// From `from` in iteration 1 to `to` in iteration `iterations`, linearly.
    Linear {
        /// First horizon.
        from: u32,
        /// Last horizon.
        to: u32,
        /// Iterations to get there.
        iterations: u32,
    },
    /// Horizon `horizon` from iteration `from` on (the last stage that has started).
    Stepwise {
        /// Stages, by first iteration.
        stages: Vec<Stage>,
    },
    /// Per task: start at `start`; lengthen by `step` (up to `max`) when the task's success
    /// at its horizon has not risen by `plateau` over the last two iterations and is below
    /// 1; shorten by `step` (down to `min`) when it is solved (success ≥ 0.8) with every
    /// success taking at most half the horizon.
    Adaptive {
        /// First horizon.
        start: u32,
        /// Change per adjustment.
        step: u32,
        /// Shortest.
        min: u32,
        /// Longest.
        max: u32,
        /// Smallest rise in success that is not a plateau.
        #[serde(default = "plateau")]
        plateau: f64,
    },
}

fn plateau() -> f64 {
    0.05
}

/// One stage of a stepwise schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// First iteration of the stage (from 1).
    pub from: u32,
    /// Its horizon.
    pub horizon: u32,
}

/// What a task did in one iteration's rollouts (stored in the iteration's report).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TaskOutcome {
    /// Its horizon then.
    pub horizon: u32,
    /// Share of its rollouts that succeeded.
    pub success: f64,
    /// Most steps a successful rollout took (0: none succeeded).
    pub max_success_steps: u32,
    /// Rollouts.
    pub rollouts: u32,
}

/// A task as the curriculum sees it.
#[derive(Debug, Clone, Copy)]
pub struct TaskInfo<'a> {
    /// Its id.
    pub id: &'a str,
    /// Facts in its rubric (WebGym's difficulty).
    pub facts: usize,
}

/// Every task's outcomes, oldest iteration first.
pub type History = BTreeMap<String, Vec<TaskOutcome>>;

impl Curriculum {
    /// Checks the settings, naming the bad one.
    pub fn validate(&self) -> Result<(), String> {
        let positive = |field: &str, v: u32| {
            if v == 0 {
                Err(format!("curriculum.{field}: must be at least 1"))
            } else {
                Ok(())
            }
        };
        match self {
            Curriculum::Fixed { horizon } => positive("horizon", *horizon),
            Curriculum::Tti | Curriculum::Difficulty => Ok(()),
            Curriculum::Linear {
                from,
                to,
                iterations,
            } => {
                positive("from", *from)?;
                positive("to", *to)?;
                positive("iterations", *iterations)
            }
            Curriculum::Stepwise { stages } => {
                if stages.is_empty() {
                    return Err("curriculum.stages: give at least one stage".into());
                }
                if stages.iter().all(|s| s.from > 1) {
                    return Err("curriculum.stages: one stage must start at iteration 1".into());
                }
                for s in stages {
                    positive("stages[].horizon", s.horizon)?;
                }
                Ok(())
            }
            Curriculum::Adaptive {
                start,
                step,
                min,
                max,
                plateau,
            } => {
                positive("start", *start)?;
                positive("step", *step)?;
                positive("min", *min)?;
                if min > max || start < min || start > max {
                    return Err("curriculum: need min ≤ start ≤ max".into());
                }
                if !(0.0..1.0).contains(plateau) {
                    return Err("curriculum.plateau: must be in [0, 1)".into());
                }
                Ok(())
            }
        }
    }

    /// The horizon of `task` in `iteration` (from 1), given what it did before.
    pub fn horizon(&self, iteration: u32, task: TaskInfo<'_>, history: &History) -> u32 {
        match self {
            Curriculum::Fixed { horizon } => *horizon,
            Curriculum::Tti => match iteration {
                0 | 1 => 10,
                2 | 3 => 20,
                _ => 30,
            },
            Curriculum::Difficulty => match task.facts {
                0..=3 => 10,
                4..=6 => 20,
                _ => 30,
            },
            Curriculum::Linear {
                from,
                to,
                iterations,
            } => {
                let span = iterations.saturating_sub(1).max(1) as f64;
                let t = (iteration.saturating_sub(1) as f64 / span).min(1.0);
                (*from as f64 + (*to as f64 - *from as f64) * t).round() as u32
            }
            Curriculum::Stepwise { stages } => stages
                .iter()
                .filter(|s| s.from <= iteration.max(1))
                .max_by_key(|s| s.from)
                .map_or(stages[0].horizon, |s| s.horizon),
            Curriculum::Adaptive {
                start,
                step,
                min,
                max,
                plateau,
            } => {
                let past = history.get(task.id).map_or(&[][..], Vec::as_slice);
                let Some(last) = past.last() else {
                    return *start;
                };
                let h = last.horizon;
                let solved_short = last.success >= 0.8 && last.max_success_steps * 2 <= h;
                if solved_short {
                    return h.saturating_sub(*step).max(*min);
                }
                // A plateau: two outcomes at this horizon and no real rise between them.
                let same: Vec<&TaskOutcome> =
                    past.iter().rev().take_while(|o| o.horizon == h).collect();
                if same.len() >= 2
                    && last.success < 1.0
                    && same[0].success - same[1].success < *plateau
                {
                    return (h + step).min(*max);
                }
                h
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(facts: usize) -> TaskInfo<'static> {
        TaskInfo { id: "t", facts }
    }

    fn outcome(horizon: u32, success: f64, max_success_steps: u32) -> TaskOutcome {
        TaskOutcome {
            horizon,
            success,
            max_success_steps,
            rollouts: 4,
        }
    }

    #[test]
    fn the_papers_schedules() {
        let h = History::new();
        let tti: Vec<u32> = (1..=5)
            .map(|i| Curriculum::Tti.horizon(i, task(1), &h))
            .collect();
        assert_eq!(tti, [10, 20, 20, 30, 30]);
        let by_facts: Vec<u32> = [1, 3, 4, 6, 7, 12]
            .iter()
            .map(|f| Curriculum::Difficulty.horizon(1, task(*f), &h))
            .collect();
        assert_eq!(by_facts, [10, 10, 20, 20, 30, 30]);
        let lin = Curriculum::Linear {
            from: 10,
            to: 30,
            iterations: 5,
        };
        let l: Vec<u32> = (1..=7).map(|i| lin.horizon(i, task(1), &h)).collect();
        assert_eq!(l, [10, 15, 20, 25, 30, 30, 30]);
        let steps = Curriculum::Stepwise {
            stages: vec![
                Stage {
                    from: 1,
                    horizon: 5,
                },
                Stage {
                    from: 3,
                    horizon: 8,
                },
            ],
        };
        let s: Vec<u32> = (1..=4).map(|i| steps.horizon(i, task(1), &h)).collect();
        assert_eq!(s, [5, 5, 8, 8]);
    }

    #[test]
    fn adaptive_lengthens_on_a_plateau_and_shortens_what_is_solved_quickly() {
        let c = Curriculum::Adaptive {
            start: 4,
            step: 2,
            min: 2,
            max: 8,
            plateau: 0.05,
        };
        let mut h = History::new();
        assert_eq!(c.horizon(1, task(1), &h), 4, "no history: the start");
        h.insert("t".into(), vec![outcome(4, 0.25, 3)]);
        assert_eq!(c.horizon(2, task(1), &h), 4, "one outcome is no plateau");
        h.get_mut("t").unwrap().push(outcome(4, 0.5, 4));
        assert_eq!(c.horizon(3, task(1), &h), 4, "still rising");
        h.get_mut("t").unwrap().push(outcome(4, 0.5, 4));
        assert_eq!(c.horizon(4, task(1), &h), 6, "a plateau below 1: longer");
        h.get_mut("t").unwrap().push(outcome(8, 1.0, 3));
        assert_eq!(
            c.horizon(5, task(1), &h),
            6,
            "solved in under half: shorter"
        );
        h.insert("t".into(), vec![outcome(8, 0.2, 8), outcome(8, 0.2, 8)]);
        assert_eq!(c.horizon(3, task(1), &h), 8, "never past the maximum");
        h.insert("t".into(), vec![outcome(2, 1.0, 1)]);
        assert_eq!(c.horizon(2, task(1), &h), 2, "never under the minimum");
    }

    #[test]
    fn bad_settings_name_their_field() {
        let bad = [
            (Curriculum::Fixed { horizon: 0 }, "curriculum.horizon"),
            (Curriculum::Stepwise { stages: vec![] }, "curriculum.stages"),
            (
                Curriculum::Stepwise {
                    stages: vec![Stage {
                        from: 2,
                        horizon: 5,
                    }],
                },
                "iteration 1",
            ),
            (
                Curriculum::Adaptive {
                    start: 10,
                    step: 1,
                    min: 2,
                    max: 8,
                    plateau: 0.05,
                },
                "min ≤ start ≤ max",
            ),
        ];
        for (c, want) in bad {
            let e = c.validate().unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        assert!(Curriculum::Tti.validate().is_ok());
    }
}
