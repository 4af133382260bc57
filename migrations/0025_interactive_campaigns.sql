-- Campaigns whose episodes are environment sessions driven by an API client, one per
-- client: the session opens each episode itself, so no scheduler or worker ever runs one.
ALTER TABLE campaigns ADD COLUMN interactive boolean NOT NULL DEFAULT false;
