-- The text a model policy was given at each step (template applied, one placeholder per
-- image), so a trainer can pair it with raw_output and token_logprobs exactly.
ALTER TABLE steps ADD COLUMN prompt text;
