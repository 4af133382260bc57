-- The screen each episode's pages rendered at: a task's own screen (MiniWoB++'s small one)
-- or its campaign's. Replays and exports read boxes and clicks in its CSS pixels.
ALTER TABLE episodes ADD COLUMN screen jsonb;
