-- The ids of the tokens a model policy generated at each step, paired with token_logprobs:
-- a trainer rescores exactly the sampled tokens instead of re-tokenizing raw_output.
ALTER TABLE steps ADD COLUMN token_ids integer[];
