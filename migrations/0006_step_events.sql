-- What the page did on its own during a step (dialogs answered, tabs opened or closed,
-- downloads refused, URLs blocked, scripts stopped) and the tabs open when it was observed.
ALTER TABLE steps ADD COLUMN events jsonb NOT NULL DEFAULT '[]';
ALTER TABLE steps ADD COLUMN tabs jsonb NOT NULL DEFAULT '[]';
