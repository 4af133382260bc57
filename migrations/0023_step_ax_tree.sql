-- Chromium's accessibility tree as the policy was shown it (rendered text with element
-- numbers, `[3] button "Buy"`), recorded when the browser config has `accessibility_tree`
-- on; null otherwise and for steps stored before. Bounded to 64 KB by the store.
ALTER TABLE steps ADD COLUMN ax_tree text;
