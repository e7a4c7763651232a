-- Where a schedule's runs evaluate: NULL here, else the remote targets and how to reach them
-- (JSON: targets, worker, ssh_command, slurm_args, jobs), as `schedule add --target` gave them.
ALTER TABLE schedules ADD COLUMN remote TEXT;
