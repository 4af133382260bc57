-- surfgym schema v1: task -> campaign -> episode -> step -> verdict.
-- Only engine::store writes SQL against these tables.

CREATE TABLE tasks (
    id          text PRIMARY KEY,
    site        text NOT NULL,
    instruction text NOT NULL,
    start_url   text NOT NULL,
    difficulty  text NOT NULL CHECK (difficulty IN ('easy', 'medium', 'hard')),
    split       text NOT NULL CHECK (split IN ('train', 'test')),
    tags        text[] NOT NULL DEFAULT '{}',
    -- The whole validated task (rubric, reference solution, ...) as served by the API.
    spec        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- Deleted tasks stay for the episodes that ran them, hidden from listings.
    deleted_at  timestamptz
);
CREATE INDEX tasks_live ON tasks (site, difficulty, split) WHERE deleted_at IS NULL;
CREATE INDEX tasks_tags ON tasks USING gin (tags);

CREATE TABLE campaigns (
    id             uuid PRIMARY KEY,
    name           text NOT NULL,
    status         text NOT NULL CHECK (status IN ('queued', 'running', 'paused', 'completed', 'cancelled', 'failed')),
    policy         text NOT NULL,
    -- The validated campaign request: task filter, rollouts, max steps, concurrency, seed.
    config         jsonb NOT NULL,
    total_episodes integer NOT NULL,
    error          text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    started_at     timestamptz,
    finished_at    timestamptz
);
CREATE INDEX campaigns_status ON campaigns (status);

CREATE TABLE episodes (
    id               uuid PRIMARY KEY,
    campaign_id      uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    task_id          text NOT NULL REFERENCES tasks (id),
    rollout          integer NOT NULL,
    seed             bigint NOT NULL,
    -- pending: not started or to be retried; running: leased by a runner;
    -- finished: ran to an end and was judged; failed: infrastructure gave up.
    status           text NOT NULL CHECK (status IN ('pending', 'running', 'finished', 'failed')),
    end_reason       text CHECK (end_reason IN ('answered', 'stopped', 'max_steps', 'policy_error', 'timeout')),
    success          boolean,
    score            double precision,
    final_answer     text,
    final_url        text,
    final_screenshot text,
    steps            integer NOT NULL DEFAULT 0,
    attempts         integer NOT NULL DEFAULT 0,
    last_error       text,
    lease_owner      text,
    lease_expires_at timestamptz,
    started_at       timestamptz,
    finished_at      timestamptz,
    duration_ms      integer,
    UNIQUE (campaign_id, task_id, rollout)
);
CREATE INDEX episodes_claim ON episodes (campaign_id, status);
CREATE INDEX episodes_task ON episodes (task_id);

-- Content-addressed screenshots (sha256 of the bytes).
CREATE TABLE blobs (
    hash       text PRIMARY KEY,
    mime       text NOT NULL,
    bytes      bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE steps (
    episode_id     uuid NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    idx            integer NOT NULL,
    url            text NOT NULL,
    title          text NOT NULL,
    screenshot     text REFERENCES blobs (hash),
    elements       jsonb NOT NULL,
    -- The canonical action line, or the raw output when it did not parse.
    action         text NOT NULL,
    thought        text,
    raw_output     text,
    -- Why this step's action failed, as shown to the policy in the next observation.
    action_error   text,
    click_x        real,
    click_y        real,
    -- Log-probability of the generated action (sum over tokens) and per token, for training.
    logprob        double precision,
    token_logprobs real[],
    observe_ms     integer NOT NULL,
    policy_ms      integer NOT NULL,
    act_ms         integer NOT NULL,
    PRIMARY KEY (episode_id, idx)
);

CREATE TABLE verdicts (
    episode_id uuid NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    judge      text NOT NULL,
    group_id   text NOT NULL,
    fact_id    text NOT NULL,
    ord        integer NOT NULL,
    passed     boolean NOT NULL,
    evidence   text NOT NULL,
    reason     text NOT NULL,
    PRIMARY KEY (episode_id, judge, fact_id)
);
