-- Record and replay of web state: a recording is a campaign's captured traffic (its id
-- is the campaign's) or an imported HAR file; its exchanges keep their bodies in the
-- content-addressed blobs, so a page recorded by many episodes is stored once.
CREATE TABLE recordings (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    campaign_id uuid REFERENCES campaigns (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE exchanges (
    id           bigserial PRIMARY KEY,
    recording_id uuid NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    -- The episode that made it (null in an imported HAR).
    episode_id   uuid REFERENCES episodes (id) ON DELETE CASCADE,
    method       text NOT NULL,
    url          text NOT NULL,
    request_body text,
    status       integer NOT NULL,
    status_text  text NOT NULL DEFAULT '',
    headers      jsonb NOT NULL,
    body_hash    text NOT NULL REFERENCES blobs (hash)
);
CREATE INDEX exchanges_recording ON exchanges (recording_id, id);
CREATE INDEX exchanges_episode ON exchanges (episode_id, id);

-- Requests a replaying episode's recording could not answer (null: not a replay).
ALTER TABLE episodes ADD COLUMN unmatched_requests integer;
