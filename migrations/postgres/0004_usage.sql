-- Model usage per candidate (see migrations/sqlite/0004_usage.sql).

ALTER TABLE candidates ADD COLUMN model TEXT;
ALTER TABLE candidates ADD COLUMN prompt_tokens BIGINT;
ALTER TABLE candidates ADD COLUMN completion_tokens BIGINT;
ALTER TABLE candidates ADD COLUMN model_requests BIGINT;
ALTER TABLE candidates ADD COLUMN model_latency_ms BIGINT;
