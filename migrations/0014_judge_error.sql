-- A finished episode whose rubric could not be evaluated (a selector the browser rejects,
-- a script that does not parse): the rubric's error, not the agent's. Such an episode has
-- no success and no score, and says why here.
ALTER TABLE episodes ADD COLUMN judge_error text;
ALTER TABLE episodes ADD CONSTRAINT episodes_judge_error_unscored
    CHECK (judge_error IS NULL OR (success IS NULL AND score IS NULL));
