-- Which runner stored each episode (distributed workers; exactly-once checks).
ALTER TABLE episodes ADD COLUMN finished_by text;
