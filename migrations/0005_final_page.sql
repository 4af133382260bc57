-- What the rubric read on the final page (URL, visible text capped at 64 KB, element states,
-- expression values): stored episodes can be judged again, and calibration sets recorded.
ALTER TABLE episodes ADD COLUMN final_page jsonb;
