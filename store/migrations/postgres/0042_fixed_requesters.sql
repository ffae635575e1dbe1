-- 0042: who asked for a run or a call is fixed when the row is made. A call's requester
-- is sealed with its request (0010), and the next calls of a resumed run are asked for
-- by the requester of its newest call: a requester changed by SQL on a decided row
-- would otherwise be sealed into the next request. The service reads it only through a
-- verified seal; these triggers refuse the change outright. Depends on 0001 only.

CREATE FUNCTION requester_is_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the requester of % is fixed when it is made', TG_TABLE_NAME;
END $$;

CREATE TRIGGER approvals_requester_is_fixed BEFORE UPDATE OF requester ON approvals
    FOR EACH ROW WHEN (OLD.requester IS DISTINCT FROM NEW.requester)
    EXECUTE FUNCTION requester_is_fixed();

CREATE TRIGGER runs_requester_is_fixed BEFORE UPDATE OF requester ON runs
    FOR EACH ROW WHEN (OLD.requester IS DISTINCT FROM NEW.requester)
    EXECUTE FUNCTION requester_is_fixed();
