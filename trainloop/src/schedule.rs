//! Which phases of a run may start now, from the iterations' recorded phases and the
//! phases running now. Pure: the loop (`run`) reads the store, asks, starts what it is
//! told, and asks again whenever a phase ends.
//!
//! The synchronous loop runs every phase in order: iteration j starts when j − 1 is done.
//! With overlap (a staleness bound N ≥ 1) iteration j's rollouts start as soon as j − 1's
//! rollouts are done and version v{j−1−N} is published (iteration j − 1 − N trained), so
//! with N = 1 they run while iteration j − 1 trains and evaluates. Every rollout episode
//! is then produced by v{j−1−N} or newer, and update j starts from v{j−1}: its samples
//! are at most N versions old. In both modes update j waits for rollout j and update
//! j − 1 (it starts from the newest published version), evaluation j waits for update j
//! and evaluation j − 1 (an iteration that published nothing repeats the previous
//! figure), and at most one rollout, one update and one evaluation run at a time.
//! Iteration 0 is only the untrained model's evaluation.
//!
//! An environment-step budget (`max_env_steps`) stops the run early: once the
//! iterations' recorded `env_steps` reach it no rollout phase starts, the phases of
//! iterations already rolled out (or rolling out) end as usual, and the run is over when
//! nothing that started is left ([`finished`]). Variants compared at equal environment
//! steps thus stop at the same cost whatever their horizons.

use store::Phase;

/// Where an iteration stands in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// No row yet.
    NotStarted,
    /// The phase it is in (done up to it; this one to run or to resume).
    At(Phase),
    /// Every phase done.
    Done,
}

impl Stage {
    /// From an iteration's stored phase (None: no row yet).
    pub fn of(stored: Option<store::Stage>) -> Stage {
        match stored {
            None => Stage::NotStarted,
            Some(s) => s.phase().map_or(Stage::Done, Stage::At),
        }
    }
}

/// Whether `phase` of iteration `idx` is over. Iteration 0 has no rollout nor update;
/// iterations before 0 are over.
fn over(stages: &[Stage], idx: i64, phase: Phase) -> bool {
    if idx < 0 || (idx == 0 && phase != Phase::Eval) {
        return true;
    }
    match stages.get(idx as usize) {
        Some(Stage::Done) => true,
        Some(Stage::At(p)) => *p > phase,
        Some(Stage::NotStarted) | None => false,
    }
}

/// A run's environment-step budget: the steps its iterations' rollouts recorded so far
/// and the most it may take (None: no budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Budget {
    /// Sum of the recorded iterations' `env_steps`.
    pub spent: u64,
    /// `max_env_steps`.
    pub max: Option<u64>,
}

impl Budget {
    /// Whether no new rollout phase may start.
    pub fn exhausted(self) -> bool {
        self.max.is_some_and(|m| self.spent >= m)
    }
}

/// Whether the run is over: every iteration done, or the budget spent and every
/// iteration that started done (the untrained model's evaluation included).
pub fn finished(stages: &[Stage], running: &[(u32, Phase)], budget: Budget) -> bool {
    if stages.iter().all(|s| *s == Stage::Done) {
        return true;
    }
    budget.exhausted()
        && running.is_empty()
        && stages.first() == Some(&Stage::Done)
        && stages
            .iter()
            .all(|s| matches!(s, Stage::Done | Stage::NotStarted))
}

/// Whether iteration `idx` is evaluated: the untrained model (0), every `eval_every`-th
/// iteration and the last one, whether `iterations` or the step budget makes it the last
/// (`spent_through`: the steps iterations up to `idx` rolled out; once they reach the
/// budget no later rollout starts). A run stopped by its budget thus always ends on a
/// measured version.
pub fn evaluates(idx: u32, eval_every: u32, iterations: u32, spent_through: Budget) -> bool {
    idx == 0 || idx.is_multiple_of(eval_every) || idx >= iterations || spent_through.exhausted()
}

/// The phases that may start now, in iteration order: `stages[i]` is iteration i's
/// (0..=iterations), `running` the phases in flight, `max_staleness` the overlap bound
/// (None: the synchronous loop), `budget` the environment steps spent and allowed.
pub fn ready(
    stages: &[Stage],
    running: &[(u32, Phase)],
    max_staleness: Option<u32>,
    budget: Budget,
) -> Vec<(u32, Phase)> {
    let busy = |p: Phase| running.iter().any(|(_, q)| *q == p);
    let mut out = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        let j = i as i64;
        let idx = i as u32;
        if running.iter().any(|(r, _)| *r == idx) {
            continue;
        }
        let next = match stage {
            Stage::Done => continue,
            Stage::NotStarted if i == 0 => Phase::Eval,
            Stage::NotStarted => Phase::Rollout,
            Stage::At(p) => *p,
        };
        let may = match next {
            Phase::Rollout => {
                // A resumed rollout (At(Rollout)) was started within the budget: it ends.
                (*stage != Stage::NotStarted || !budget.exhausted())
                    && !busy(Phase::Rollout)
                    && match max_staleness {
                        None => over(stages, j - 1, Phase::Eval),
                        Some(n) => {
                            over(stages, j - 1, Phase::Rollout)
                                && over(stages, j - 1 - i64::from(n), Phase::Train)
                        }
                    }
            }
            Phase::Train => !busy(Phase::Train) && over(stages, j - 1, Phase::Train),
            Phase::Eval => !busy(Phase::Eval) && over(stages, j - 1, Phase::Eval),
        };
        if may {
            out.push((idx, next));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Phase::{Eval, Rollout, Train};
    use super::Stage::{At, Done, NotStarted};
    use super::*;

    #[test]
    fn the_iteration_that_spends_the_budget_is_evaluated_whatever_eval_every_says() {
        // Every 2nd of 20 iterations, a budget of 480 steps.
        let spent = |spent, max| Budget { spent, max };
        let at = |idx, s| evaluates(idx, 2, 20, spent(s, Some(480)));
        assert!(at(0, 0), "the untrained model");
        assert!(at(2, 192) && at(4, 384), "every 2nd");
        assert!(!at(3, 288), "not the ones between");
        assert!(at(5, 480) && at(5, 500), "the budget ends the run at 5");
        assert!(
            evaluates(20, 3, 20, spent(0, None)),
            "the last of `iterations`"
        );
        assert!(
            !evaluates(7, 3, 20, spent(10_000, None)),
            "no budget, no early end"
        );
    }

    const SYNC: Option<u32> = None;
    const NONE: Budget = Budget {
        spent: 0,
        max: None,
    };

    #[test]
    fn the_synchronous_loop_runs_one_phase_at_a_time_in_order() {
        let fresh = [NotStarted; 4];
        assert_eq!(ready(&fresh, &[], SYNC, NONE), [(0, Eval)]);
        assert_eq!(ready(&fresh, &[(0, Eval)], SYNC, NONE), []);
        let mut s = [Done, NotStarted, NotStarted, NotStarted];
        assert_eq!(ready(&s, &[], SYNC, NONE), [(1, Rollout)]);
        s[1] = At(Train);
        assert_eq!(
            ready(&s, &[], SYNC, NONE),
            [(1, Train)],
            "nothing beside it"
        );
        s[1] = At(Eval);
        assert_eq!(ready(&s, &[], SYNC, NONE), [(1, Eval)], "iteration 2 waits");
        s[1] = Done;
        assert_eq!(ready(&s, &[], SYNC, NONE), [(2, Rollout)]);
        assert_eq!(ready(&[Done; 4], &[], SYNC, NONE), []);
    }

    #[test]
    fn a_resumed_synchronous_run_redoes_the_phase_it_was_in() {
        // Killed in iteration 2's update: the update is redone, nothing else starts.
        let s = [Done, Done, At(Train), NotStarted];
        assert_eq!(ready(&s, &[], SYNC, NONE), [(2, Train)]);
        assert_eq!(ready(&s, &[(2, Train)], SYNC, NONE), []);
        // Killed in the untrained model's evaluation.
        assert_eq!(ready(&[At(Eval), NotStarted], &[], SYNC, NONE), [(0, Eval)]);
    }

    #[test]
    fn with_staleness_one_the_next_rollouts_run_while_the_trainer_works() {
        let n = Some(1);
        // The untrained model's evaluation and the first rollouts go together.
        let fresh = [NotStarted; 4];
        assert_eq!(ready(&fresh, &[], n, NONE), [(0, Eval), (1, Rollout)]);
        assert_eq!(ready(&fresh, &[(0, Eval)], n, NONE), [(1, Rollout)]);
        assert_eq!(ready(&fresh, &[(0, Eval), (1, Rollout)], n, NONE), []);
        // Rollout 1 done: update 1 and rollout 2 (v0 = the base model is published).
        let s = [At(Eval), At(Train), NotStarted, NotStarted];
        assert_eq!(ready(&s, &[(0, Eval)], n, NONE), [(1, Train), (2, Rollout)]);
        // Rollout 2 done while update 1 runs: update 2 waits for update 1, and rollout 3
        // for v1 (one version behind update 3's v2 at most).
        let s = [Done, At(Train), At(Train), NotStarted];
        assert_eq!(ready(&s, &[(1, Train)], n, NONE), []);
        // Update 1 published v1: evaluation 1, update 2 and rollout 3 all start.
        let s = [Done, At(Eval), At(Train), NotStarted];
        assert_eq!(
            ready(&s, &[], n, NONE),
            [(1, Eval), (2, Train), (3, Rollout)]
        );
        // Evaluation 2 waits for evaluation 1; one evaluation at a time.
        let s = [Done, At(Eval), At(Eval), At(Train)];
        assert_eq!(ready(&s, &[(1, Eval)], n, NONE), [(3, Train)]);
        assert_eq!(ready(&s, &[(1, Eval), (3, Train)], n, NONE), []);
    }

    #[test]
    fn the_bound_holds_the_rollouts_back() {
        // N = 1: rollout 3 needs v1; N = 2 lets it start on v0 (two versions behind
        // update 3's parent v2 at most).
        let s = [Done, At(Train), At(Train), NotStarted, NotStarted];
        assert_eq!(ready(&s, &[], Some(1), NONE), [(1, Train)]);
        assert_eq!(ready(&s, &[], Some(2), NONE), [(1, Train), (3, Rollout)]);
        // N = 2 with three iterations rolled out and none trained: rollout 4 needs v1.
        let s = [Done, At(Train), At(Train), At(Train), NotStarted];
        assert_eq!(ready(&s, &[(1, Train)], Some(2), NONE), []);
        let s = [Done, At(Eval), At(Train), At(Train), NotStarted];
        assert_eq!(
            ready(&s, &[], Some(2), NONE),
            [(1, Eval), (2, Train), (4, Rollout)]
        );
    }

    #[test]
    fn a_resumed_overlapped_run_restarts_every_phase_in_flight() {
        // Killed with evaluation 1, update 2 and rollouts 3 in flight: all three resume.
        let s = [Done, At(Eval), At(Train), At(Rollout)];
        assert_eq!(
            ready(&s, &[], Some(1), NONE),
            [(1, Eval), (2, Train), (3, Rollout)]
        );
        // Killed in rollouts 2 before update 1 ended: both resume, rollout 3 waits.
        let s = [Done, At(Train), At(Rollout), NotStarted];
        assert_eq!(ready(&s, &[], Some(1), NONE), [(1, Train), (2, Rollout)]);
        assert_eq!(Stage::of(Some(store::Stage::Eval)), At(Eval));
        assert_eq!(Stage::of(Some(store::Stage::Done)), Done);
        assert_eq!(Stage::of(None), NotStarted);
    }

    #[test]
    fn a_spent_budget_starts_no_rollout_but_ends_what_started() {
        let spent = Budget {
            spent: 120,
            max: Some(100),
        };
        let left = Budget {
            spent: 99,
            max: Some(100),
        };
        // Synchronous: iteration 1 done with 120 steps; iteration 2 does not start.
        let s = [Done, Done, NotStarted, NotStarted];
        assert_eq!(ready(&s, &[], SYNC, left), [(2, Rollout)]);
        assert_eq!(ready(&s, &[], SYNC, spent), []);
        assert!(finished(&s, &[], spent));
        assert!(!finished(&s, &[], left));
        // Its update and evaluation still run; the run is not over before they end.
        let s = [Done, At(Train), NotStarted];
        assert_eq!(ready(&s, &[], SYNC, spent), [(1, Train)]);
        assert!(!finished(&s, &[], spent));
        let s = [Done, At(Eval), NotStarted];
        assert_eq!(ready(&s, &[], SYNC, spent), [(1, Eval)]);
        // Overlap: rollout 3 is held back, update 2 and evaluation 1 go on.
        let s = [Done, At(Eval), At(Train), NotStarted];
        assert_eq!(ready(&s, &[], Some(1), spent), [(1, Eval), (2, Train)]);
        assert!(!finished(&s, &[], spent));
        // A rollout in flight when the budget ran out ends; the run waits for it.
        let s = [Done, Done, At(Rollout), NotStarted];
        assert!(!finished(&s, &[(2, Rollout)], spent));
        // A resumed run redoes an interrupted rollout (it started within the budget).
        assert_eq!(ready(&s, &[], SYNC, spent), [(2, Rollout)]);
        // The untrained model is always evaluated, budget or not.
        let fresh = [NotStarted; 3];
        assert_eq!(
            ready(
                &fresh,
                &[],
                SYNC,
                Budget {
                    spent: 0,
                    max: Some(0)
                }
            ),
            [(0, Eval)]
        );
        assert!(!finished(&fresh, &[], spent));
        assert!(
            !Budget {
                spent: 5,
                max: None
            }
            .exhausted()
        );
    }
}
