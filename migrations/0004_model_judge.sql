-- Model-judge verdicts, cached by (episode, trajectory, fact, judge) so that judging the
-- same trajectory again (re-judging, calibration runs) asks the model once.
CREATE TABLE judge_cache (
    episode_id uuid NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    trajectory text NOT NULL,
    fact_id    text NOT NULL,
    judge      text NOT NULL,
    passed     boolean NOT NULL,
    evidence   text NOT NULL,
    reason     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (episode_id, trajectory, fact_id, judge)
);

-- Model-judge calls made, and model facts in the rubric (calls an exhaustive judge makes).
ALTER TABLE episodes ADD COLUMN judge_calls integer NOT NULL DEFAULT 0;
ALTER TABLE episodes ADD COLUMN judge_facts integer NOT NULL DEFAULT 0;
