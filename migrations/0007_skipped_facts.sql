-- Binary judging stops once the success label is settled: the facts it left unchecked are
-- stored without an outcome (passed NULL), and so without evidence or reason.
ALTER TABLE verdicts ALTER COLUMN passed DROP NOT NULL;
ALTER TABLE verdicts ADD CONSTRAINT verdicts_unchecked_is_bare
    CHECK (passed IS NOT NULL OR (evidence = '' AND reason = ''));

-- With facts unchecked, `score` is a lower bound (they earn nothing) and this is the
-- partial credit over the verified facts; NULL when every fact was verified.
ALTER TABLE episodes ADD COLUMN score_of_verified double precision;

-- Model-judge calls an exhaustive judge makes on the episode (one per fact in words, the
-- anti-hallucination call, the reference-answer call), against which `judge_calls` saves.
ALTER TABLE episodes ADD COLUMN judge_exhaustive_calls integer NOT NULL DEFAULT 0;
