-- The practice-site bases a task's URLs were resolved against when a process registered
-- it from the bundled suite or MiniWoB++ (site -> base URL). Every process serves those
-- sites on its own ports, so a process loading the task puts its own bases in their
-- place (engine::store::local_sites); NULL for tasks registered as given.
ALTER TABLE tasks ADD COLUMN site_bases JSONB;
