-- An iteration's wall time, from its first phase's start to its last phase's end. With
-- overlapped training an iteration's phases share the clock with its neighbours', so the
-- per-phase times no longer add up to it; for a synchronous iteration it is their sum
-- plus the loop's own bookkeeping.
ALTER TABLE training_iterations ADD COLUMN wall_ms bigint;
