-- API tokens: only a SHA-256 of each secret is kept (the secret is shown once, when it is
-- created), with a short prefix of it so that people can tell their tokens apart.
CREATE TABLE api_tokens (
    id uuid PRIMARY KEY,
    name text NOT NULL DEFAULT '',
    scope text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    prefix text NOT NULL,
    hash bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at timestamptz
);
