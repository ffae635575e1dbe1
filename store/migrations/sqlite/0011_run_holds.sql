-- 0011: a run an operator paused. `held_by` is who paused it and `hold_reason` why; both
-- NULL when it is not held. A held run starts no new step (its worker stops before the
-- next model turn or tool call) and its resume is not claimed when its decisions are
-- all taken; `runs resume` releases it. A hold changes neither the run's status nor its
-- version: a worker saving the run's state is not refused because of it.

ALTER TABLE runs ADD COLUMN held_by TEXT;
ALTER TABLE runs ADD COLUMN hold_reason TEXT;
