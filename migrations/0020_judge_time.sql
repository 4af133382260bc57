-- Judging's own time, so a training iteration's wall time can be split into rollout,
-- judge, train and eval (rollouts are judged as they finish, so judge time overlaps the
-- rollout's wall time: it is a sum over episodes, not a share of the wall clock).
ALTER TABLE episodes ADD COLUMN judge_ms integer;
ALTER TABLE training_iterations ADD COLUMN judge_ms bigint;
