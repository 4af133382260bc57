-- Numbered 0019: 0018 may be taken by another branch merged separately.
-- What the dashboard reads stays fast with a project's whole history in the database
-- (docs/benchmarks/dashboard-scale.md has the measurements).

-- Per-campaign counters, kept by triggers on `episodes`: a campaign's counts, successes
-- and sums were aggregated over all its episodes on every read (and the campaigns list
-- over every episode of every campaign), which grows with history. Each statement that
-- writes episodes adds its rows' difference, one upsert per campaign it touched; a
-- statement that changes nothing counted (a lease heartbeat) writes nothing.
CREATE TABLE campaign_stats (
    campaign_id            uuid PRIMARY KEY REFERENCES campaigns (id) ON DELETE CASCADE,
    pending                bigint NOT NULL DEFAULT 0,
    running                bigint NOT NULL DEFAULT 0,
    finished               bigint NOT NULL DEFAULT 0,
    failed                 bigint NOT NULL DEFAULT 0,
    cancelled              bigint NOT NULL DEFAULT 0,
    successes              bigint NOT NULL DEFAULT 0,
    judge_errors           bigint NOT NULL DEFAULT 0,
    -- Finished episodes with a score, and the sum of their scores (numeric: adding and
    -- taking away rows leaves no rounding drift).
    scored                 bigint NOT NULL DEFAULT 0,
    score_sum              numeric NOT NULL DEFAULT 0,
    -- Over finished episodes.
    steps                  bigint NOT NULL DEFAULT 0,
    judge_calls            bigint NOT NULL DEFAULT 0,
    judge_facts            bigint NOT NULL DEFAULT 0,
    judge_exhaustive_calls bigint NOT NULL DEFAULT 0
);

-- The policies each campaign's finished episodes ran under, with how many: grouping a big
-- campaign's episodes by their policy card (JSON) took longer than the target on its own.
-- Keyed by a digest of the card, which may be larger than an index entry can hold.
CREATE TABLE campaign_policies (
    campaign_id uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    digest      text NOT NULL,
    policy      jsonb NOT NULL,
    episodes    bigint NOT NULL,
    PRIMARY KEY (campaign_id, digest)
);

-- Adds `sign` times the contribution of the rows of `source` (a transition table).
CREATE FUNCTION campaign_stats_add(source text, sign int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT format(
        'SELECT campaign_id,
            %1$s * count(*) FILTER (WHERE status = ''pending'') AS pending,
            %1$s * count(*) FILTER (WHERE status = ''running'') AS running,
            %1$s * count(*) FILTER (WHERE status = ''finished'') AS finished,
            %1$s * count(*) FILTER (WHERE status = ''failed'') AS failed,
            %1$s * count(*) FILTER (WHERE status = ''cancelled'') AS cancelled,
            %1$s * count(*) FILTER (WHERE success) AS successes,
            %1$s * count(*) FILTER (WHERE judge_error IS NOT NULL) AS judge_errors,
            %1$s * count(*) FILTER (WHERE status = ''finished'' AND score IS NOT NULL) AS scored,
            %1$s * coalesce(sum(score::numeric) FILTER (WHERE status = ''finished''), 0) AS score_sum,
            %1$s * coalesce(sum(steps) FILTER (WHERE status = ''finished''), 0) AS steps,
            %1$s * coalesce(sum(judge_calls) FILTER (WHERE status = ''finished''), 0) AS judge_calls,
            %1$s * coalesce(sum(judge_facts) FILTER (WHERE status = ''finished''), 0) AS judge_facts,
            %1$s * coalesce(sum(judge_exhaustive_calls) FILTER (WHERE status = ''finished''), 0)
                AS judge_exhaustive_calls
         FROM %2$I GROUP BY campaign_id', sign, source)
$$;

-- The same for the policies of finished episodes.
CREATE FUNCTION campaign_policies_add(source text, sign int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT format(
        'SELECT campaign_id, md5(policy::text) AS digest, policy, %1$s AS n FROM %2$I
         WHERE status = ''finished'' AND policy IS NOT NULL', sign, source)
$$;

CREATE FUNCTION campaign_stats_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta text;
    policies text;
BEGIN
    delta := CASE TG_OP
        WHEN 'INSERT' THEN campaign_stats_add('new_rows', 1)
        WHEN 'DELETE' THEN campaign_stats_add('old_rows', -1)
        ELSE campaign_stats_add('new_rows', 1) || ' UNION ALL ' || campaign_stats_add('old_rows', -1)
    END;
    policies := CASE TG_OP
        WHEN 'INSERT' THEN campaign_policies_add('new_rows', 1)
        WHEN 'DELETE' THEN campaign_policies_add('old_rows', -1)
        ELSE campaign_policies_add('new_rows', 1) || ' UNION ALL ' || campaign_policies_add('old_rows', -1)
    END;
    -- Campaigns in id order, so that two statements lock their rows in the same order;
    -- a campaign being deleted (its episodes cascading) gets no row back.
    EXECUTE format(
        'INSERT INTO campaign_policies AS p
         SELECT d.campaign_id, d.digest, (array_agg(d.policy))[1], sum(d.n)
         FROM (%s) d JOIN campaigns c ON c.id = d.campaign_id
         GROUP BY d.campaign_id, d.digest HAVING sum(d.n) <> 0
         ORDER BY d.campaign_id, d.digest
         ON CONFLICT (campaign_id, digest) DO UPDATE SET episodes = p.episodes + EXCLUDED.episodes',
        policies);
    EXECUTE format(
        'INSERT INTO campaign_stats AS s
         SELECT d.campaign_id, sum(pending), sum(running), sum(finished), sum(failed),
            sum(cancelled), sum(successes), sum(judge_errors), sum(scored), sum(score_sum),
            sum(steps), sum(judge_calls), sum(judge_facts), sum(judge_exhaustive_calls)
         FROM (%s) d JOIN campaigns c ON c.id = d.campaign_id
         GROUP BY d.campaign_id
         HAVING sum(pending) <> 0 OR sum(running) <> 0 OR sum(finished) <> 0
            OR sum(failed) <> 0 OR sum(cancelled) <> 0 OR sum(successes) <> 0
            OR sum(judge_errors) <> 0 OR sum(scored) <> 0 OR sum(score_sum) <> 0
            OR sum(steps) <> 0 OR sum(judge_calls) <> 0 OR sum(judge_facts) <> 0
            OR sum(judge_exhaustive_calls) <> 0
         ORDER BY d.campaign_id
         ON CONFLICT (campaign_id) DO UPDATE SET
            pending = s.pending + EXCLUDED.pending,
            running = s.running + EXCLUDED.running,
            finished = s.finished + EXCLUDED.finished,
            failed = s.failed + EXCLUDED.failed,
            cancelled = s.cancelled + EXCLUDED.cancelled,
            successes = s.successes + EXCLUDED.successes,
            judge_errors = s.judge_errors + EXCLUDED.judge_errors,
            scored = s.scored + EXCLUDED.scored,
            score_sum = s.score_sum + EXCLUDED.score_sum,
            steps = s.steps + EXCLUDED.steps,
            judge_calls = s.judge_calls + EXCLUDED.judge_calls,
            judge_facts = s.judge_facts + EXCLUDED.judge_facts,
            judge_exhaustive_calls = s.judge_exhaustive_calls + EXCLUDED.judge_exhaustive_calls',
        delta);
    RETURN NULL;
END
$$;

-- Transition tables allow one event per trigger: three triggers, one function.
CREATE TRIGGER campaign_stats_insert AFTER INSERT ON episodes
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION campaign_stats_apply();
CREATE TRIGGER campaign_stats_update AFTER UPDATE ON episodes
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION campaign_stats_apply();
CREATE TRIGGER campaign_stats_delete AFTER DELETE ON episodes
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION campaign_stats_apply();

INSERT INTO campaign_stats
SELECT campaign_id,
    count(*) FILTER (WHERE status = 'pending'),
    count(*) FILTER (WHERE status = 'running'),
    count(*) FILTER (WHERE status = 'finished'),
    count(*) FILTER (WHERE status = 'failed'),
    count(*) FILTER (WHERE status = 'cancelled'),
    count(*) FILTER (WHERE success),
    count(*) FILTER (WHERE judge_error IS NOT NULL),
    count(*) FILTER (WHERE status = 'finished' AND score IS NOT NULL),
    coalesce(sum(score::numeric) FILTER (WHERE status = 'finished'), 0),
    coalesce(sum(steps) FILTER (WHERE status = 'finished'), 0),
    coalesce(sum(judge_calls) FILTER (WHERE status = 'finished'), 0),
    coalesce(sum(judge_facts) FILTER (WHERE status = 'finished'), 0),
    coalesce(sum(judge_exhaustive_calls) FILTER (WHERE status = 'finished'), 0)
FROM episodes GROUP BY campaign_id;

INSERT INTO campaign_policies
SELECT campaign_id, md5(policy::text), (array_agg(policy))[1], count(*)
FROM episodes WHERE status = 'finished' AND policy IS NOT NULL
GROUP BY campaign_id, md5(policy::text);

-- Episode lists are in campaign order (task, rollout, id), filtered by campaign, task or
-- neither: these indexes hand a page over in order, deep pages included, without sorting
-- the history. The task index they replace was a prefix of the second.
CREATE INDEX episodes_campaign_order ON episodes (campaign_id, task_id, rollout, id);
CREATE INDEX episodes_order ON episodes (task_id, rollout, id);
DROP INDEX episodes_task;

-- The campaigns list, newest first.
CREATE INDEX campaigns_newest ON campaigns (created_at DESC, id);
