-- Every web page an episode's tabs loaded, in order (observed or passed through): what URL
-- checks over the whole episode read, kept so that judging the episode again reads the same.
ALTER TABLE episodes ADD COLUMN visited_urls text[];
