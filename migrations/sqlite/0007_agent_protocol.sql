-- The agent's protocol behind each candidate it proposed (tools, text, whole-file): a
-- conversation that fell back to a simpler protocol says so. NULL for search and replay.

ALTER TABLE candidates ADD COLUMN agent_protocol TEXT;
