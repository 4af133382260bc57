-- Training runs (curriculum RL loops) and their iterations: durable, so a run killed at
-- any point resumes at the iteration and phase it was in.
CREATE TABLE training_runs (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    config jsonb NOT NULL,
    state text NOT NULL DEFAULT 'running'
        CHECK (state IN ('running', 'paused', 'completed', 'failed', 'cancelled')),
    -- The newest published version directory (null: still the base model).
    version text,
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE training_iterations (
    run_id uuid NOT NULL REFERENCES training_runs (id) ON DELETE CASCADE,
    -- 0 is the untrained model's evaluation; training iterations count from 1.
    idx integer NOT NULL CHECK (idx >= 0),
    phase text NOT NULL DEFAULT 'rollout'
        CHECK (phase IN ('rollout', 'train', 'eval', 'done')),
    -- Each train task's horizon this iteration.
    horizons jsonb NOT NULL DEFAULT '{}',
    rollout_campaigns uuid[] NOT NULL DEFAULT '{}',
    eval_campaign uuid,
    parent_version text,
    version text,
    samples integer,
    dropped jsonb,
    loss double precision,
    train_success double precision,
    eval_success double precision,
    env_steps bigint,
    rollout_ms bigint,
    train_ms bigint,
    eval_ms bigint,
    report jsonb,
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (run_id, idx)
);
