-- Model usage per candidate, for proposers that call a model (NULL for search and replay).

ALTER TABLE candidates ADD COLUMN model TEXT;
ALTER TABLE candidates ADD COLUMN prompt_tokens INTEGER;
ALTER TABLE candidates ADD COLUMN completion_tokens INTEGER;
ALTER TABLE candidates ADD COLUMN model_requests INTEGER;
ALTER TABLE candidates ADD COLUMN model_latency_ms INTEGER;
