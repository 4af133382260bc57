-- What policy ran each episode (backend, model and its fingerprint, sampling settings), as
-- the worker that ran it resolved the campaign's policy name: the data's provenance.
ALTER TABLE episodes ADD COLUMN policy jsonb;
