-- The agent's protocol behind each candidate (see migrations/sqlite/0007_agent_protocol.sql).

ALTER TABLE candidates ADD COLUMN agent_protocol TEXT;
