-- The failure triage's page events read only the steps whose page did something on its
-- own (a few percent of them): this index finds a campaign's such steps without reading
-- every step of the campaign, and every campaign's without scanning the steps table.
CREATE INDEX steps_with_events ON steps (episode_id) WHERE events <> '[]'::jsonb;
