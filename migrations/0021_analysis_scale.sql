-- The campaign analysis views stay fast with a project's whole history in the database
-- (docs/benchmarks/dashboard-scale.md has the measurements).

-- How many of a campaign's steps took each whole number of milliseconds in each phase
-- (0 observe, 1 policy, 2 act): the plots' latency distributions read every step of the
-- campaign on every request (1.1 million samples, seconds, for a campaign of 18,000
-- episodes). Step times are whole milliseconds and cluster, so a campaign has a few
-- thousand rows here however many steps it has, and exact percentiles, means and
-- histograms follow from them. Kept by triggers on `steps` like `campaign_stats`.
CREATE TABLE campaign_step_times (
    campaign_id uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    phase       smallint NOT NULL,
    ms          integer NOT NULL,
    steps       bigint NOT NULL,
    PRIMARY KEY (campaign_id, phase, ms)
);

-- The page events (dialogs, blocked navigations, downloads, stopped scripts) of a
-- campaign's steps, one row per step and kind, with the task's site: triage aggregates
-- them per site and kind, and found them by probing every episode of the campaign for
-- steps with events, then unnesting their JSON (18,000 probes, 110 ms and more, for the
-- largest campaign at 100,000 episodes). Rows are added by the step trigger below and go
-- with their step. Steps' events are written once, with the step (after the episode's
-- finish, so `finished_at` is known), never updated; the site is the task's when the
-- step was written.
CREATE TABLE campaign_page_events (
    campaign_id uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    episode_id  uuid NOT NULL,
    idx         integer NOT NULL,
    kind        text,
    site        text NOT NULL,
    events      bigint NOT NULL,
    sample      text,
    finished_at timestamptz,
    FOREIGN KEY (episode_id, idx) REFERENCES steps (episode_id, idx) ON DELETE CASCADE
);
CREATE INDEX campaign_page_events_campaign ON campaign_page_events (campaign_id);
CREATE INDEX campaign_page_events_step ON campaign_page_events (episode_id, idx);

-- The counts a statement's rows add (`new_rows`) or take off (`old_rows`), by campaign.
-- Static SQL, not `EXECUTE`d text: plpgsql keeps the plans, and a step write paid 1.2 ms
-- more per episode for planning dynamic text (pgbench, 20-step episodes).
CREATE FUNCTION campaign_step_times_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Keys in order, so that two statements lock rows in the same order. Steps deleted
    -- with their episode find no episode here: `campaign_step_times_forget` took them off.
    -- One branch per operation: a transition table exists only for its own operations.
    IF TG_OP = 'INSERT' THEN
        INSERT INTO campaign_step_times AS t
        SELECT campaign_id, phase, ms, sum(n) FROM (SELECT e.campaign_id, v.phase, v.ms, 1 AS n FROM new_rows s
            JOIN episodes e ON e.id = s.episode_id
            CROSS JOIN LATERAL (VALUES (0::smallint, s.observe_ms), (1::smallint, s.policy_ms),
                (2::smallint, s.act_ms)) AS v(phase, ms)) d
        GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (campaign_id, phase, ms) DO UPDATE SET steps = t.steps + EXCLUDED.steps;
        -- An event list that is not an array, or a count that is not a small whole
        -- number, must not make an episode's write fail.
        INSERT INTO campaign_page_events
        SELECT e.campaign_id, s.episode_id, s.idx, ev->>'kind', t.site,
            sum(CASE WHEN ev->>'count' ~ '^[0-9]{1,15}$' THEN (ev->>'count')::bigint ELSE 1 END),
            (array_agg(coalesce(ev->>'message', ev->>'url', ev->>'during')))[1], e.finished_at
        FROM new_rows s JOIN episodes e ON e.id = s.episode_id JOIN tasks t ON t.id = e.task_id
            CROSS JOIN LATERAL jsonb_array_elements(s.events) ev
        WHERE jsonb_typeof(s.events) = 'array' AND s.events <> '[]'::jsonb
        GROUP BY e.campaign_id, s.episode_id, s.idx, ev->>'kind', t.site, e.finished_at;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO campaign_step_times AS t
        SELECT campaign_id, phase, ms, sum(n) FROM (SELECT e.campaign_id, v.phase, v.ms, -1 AS n FROM old_rows s
            JOIN episodes e ON e.id = s.episode_id
            CROSS JOIN LATERAL (VALUES (0::smallint, s.observe_ms), (1::smallint, s.policy_ms),
                (2::smallint, s.act_ms)) AS v(phase, ms)) d
        GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (campaign_id, phase, ms) DO UPDATE SET steps = t.steps + EXCLUDED.steps;
    ELSE
        INSERT INTO campaign_step_times AS t
        SELECT campaign_id, phase, ms, sum(n) FROM (SELECT e.campaign_id, v.phase, v.ms, 1 AS n FROM new_rows s
            JOIN episodes e ON e.id = s.episode_id
            CROSS JOIN LATERAL (VALUES (0::smallint, s.observe_ms), (1::smallint, s.policy_ms),
                (2::smallint, s.act_ms)) AS v(phase, ms)
            UNION ALL SELECT e.campaign_id, v.phase, v.ms, -1 AS n FROM old_rows s
            JOIN episodes e ON e.id = s.episode_id
            CROSS JOIN LATERAL (VALUES (0::smallint, s.observe_ms), (1::smallint, s.policy_ms),
                (2::smallint, s.act_ms)) AS v(phase, ms)) d
        GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (campaign_id, phase, ms) DO UPDATE SET steps = t.steps + EXCLUDED.steps;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER campaign_step_times_insert AFTER INSERT ON steps
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION campaign_step_times_apply();
-- No column list: Postgres refuses one on a trigger with transition tables. Nothing
-- updates steps today; an update that changes no time adds and takes off the same counts.
CREATE TRIGGER campaign_step_times_update AFTER UPDATE ON steps
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION campaign_step_times_apply();
CREATE TRIGGER campaign_step_times_delete AFTER DELETE ON steps
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION campaign_step_times_apply();

-- An episode's steps go when it goes (a cascade), after it is gone: its campaign is known
-- only before, so they are taken off here (a campaign deleted whole takes its rows along).
CREATE FUNCTION campaign_step_times_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE campaign_step_times t SET steps = t.steps - d.n
    FROM (SELECT v.phase, v.ms, count(*) AS n FROM steps s
          CROSS JOIN LATERAL (VALUES (0::smallint, s.observe_ms), (1::smallint, s.policy_ms),
            (2::smallint, s.act_ms)) AS v(phase, ms)
          WHERE s.episode_id = OLD.id GROUP BY 1, 2) d
    WHERE t.campaign_id = OLD.campaign_id AND t.phase = d.phase AND t.ms = d.ms;
    RETURN OLD;
END
$$;

CREATE TRIGGER campaign_step_times_forget BEFORE DELETE ON episodes
    FOR EACH ROW EXECUTE FUNCTION campaign_step_times_forget();

INSERT INTO campaign_step_times
SELECT e.campaign_id, v.phase, v.ms, count(*)
FROM steps s JOIN episodes e ON e.id = s.episode_id
    CROSS JOIN LATERAL (VALUES (0::smallint, s.observe_ms), (1::smallint, s.policy_ms),
        (2::smallint, s.act_ms)) AS v(phase, ms)
GROUP BY 1, 2, 3;

INSERT INTO campaign_page_events
SELECT e.campaign_id, s.episode_id, s.idx, ev->>'kind', t.site,
    sum(CASE WHEN ev->>'count' ~ '^[0-9]{1,15}$' THEN (ev->>'count')::bigint ELSE 1 END),
    (array_agg(coalesce(ev->>'message', ev->>'url', ev->>'during')))[1], e.finished_at
FROM steps s JOIN episodes e ON e.id = s.episode_id JOIN tasks t ON t.id = e.task_id
    CROSS JOIN LATERAL jsonb_array_elements(s.events) ev
WHERE jsonb_typeof(s.events) = 'array' AND s.events <> '[]'::jsonb
GROUP BY e.campaign_id, s.episode_id, s.idx, ev->>'kind', t.site, e.finished_at;

-- How often each rubric fact of each task failed, passed or was not checked in each
-- campaign: triage lists the facts that fail most, which read every verdict of the
-- campaign (77,000 for the largest at 100,000 episodes: 150-300 ms). Kept by triggers on
-- `verdicts` (written with their episode, never updated by surfgym) like the others.
CREATE TABLE campaign_fact_counts (
    campaign_id uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    task_id     text NOT NULL,
    group_id    text NOT NULL,
    fact_id     text NOT NULL,
    failed      bigint NOT NULL,
    passed      bigint NOT NULL,
    unchecked   bigint NOT NULL,
    PRIMARY KEY (campaign_id, task_id, group_id, fact_id)
);

CREATE FUNCTION campaign_fact_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- As for step times: one branch per operation, keys in order, verdicts deleted with
    -- their episode taken off by `campaign_fact_counts_forget` before.
    IF TG_OP = 'INSERT' THEN
        INSERT INTO campaign_fact_counts AS c
        SELECT e.campaign_id, e.task_id, v.group_id, v.fact_id,
            count(*) FILTER (WHERE v.passed = false), count(*) FILTER (WHERE v.passed),
            count(*) FILTER (WHERE v.passed IS NULL)
        FROM new_rows v JOIN episodes e ON e.id = v.episode_id
        GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (campaign_id, task_id, group_id, fact_id) DO UPDATE SET
            failed = c.failed + EXCLUDED.failed, passed = c.passed + EXCLUDED.passed,
            unchecked = c.unchecked + EXCLUDED.unchecked;
    ELSE
        UPDATE campaign_fact_counts c SET failed = c.failed - d.failed,
            passed = c.passed - d.passed, unchecked = c.unchecked - d.unchecked
        FROM (SELECT e.campaign_id, e.task_id, v.group_id, v.fact_id,
                count(*) FILTER (WHERE v.passed = false) AS failed,
                count(*) FILTER (WHERE v.passed) AS passed,
                count(*) FILTER (WHERE v.passed IS NULL) AS unchecked
              FROM old_rows v JOIN episodes e ON e.id = v.episode_id GROUP BY 1, 2, 3, 4) d
        WHERE (c.campaign_id, c.task_id, c.group_id, c.fact_id)
            = (d.campaign_id, d.task_id, d.group_id, d.fact_id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER campaign_fact_counts_insert AFTER INSERT ON verdicts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION campaign_fact_counts_apply();
CREATE TRIGGER campaign_fact_counts_delete AFTER DELETE ON verdicts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION campaign_fact_counts_apply();

CREATE FUNCTION campaign_fact_counts_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE campaign_fact_counts c SET failed = c.failed - d.failed,
        passed = c.passed - d.passed, unchecked = c.unchecked - d.unchecked
    FROM (SELECT v.group_id, v.fact_id,
            count(*) FILTER (WHERE v.passed = false) AS failed,
            count(*) FILTER (WHERE v.passed) AS passed,
            count(*) FILTER (WHERE v.passed IS NULL) AS unchecked
          FROM verdicts v WHERE v.episode_id = OLD.id GROUP BY 1, 2) d
    WHERE c.campaign_id = OLD.campaign_id AND c.task_id = OLD.task_id
        AND c.group_id = d.group_id AND c.fact_id = d.fact_id;
    RETURN OLD;
END
$$;

CREATE TRIGGER campaign_fact_counts_forget BEFORE DELETE ON episodes
    FOR EACH ROW EXECUTE FUNCTION campaign_fact_counts_forget();

INSERT INTO campaign_fact_counts
SELECT e.campaign_id, e.task_id, v.group_id, v.fact_id,
    count(*) FILTER (WHERE v.passed = false), count(*) FILTER (WHERE v.passed),
    count(*) FILTER (WHERE v.passed IS NULL)
FROM verdicts v JOIN episodes e ON e.id = v.episode_id GROUP BY 1, 2, 3, 4;
