-- 0016: the MCP gateway's calls. Each maps a client's call (its key: a hash keyed with
-- a secret of the client's, over the tool and the arguments, so it confirms no guess of
-- them) to the run that answers it, so that a retry of the same call reaching any
-- replica attaches to the same approval. No foreign key: the key is claimed before its
-- run exists. A row goes once its result was handed out, or when the same call comes
-- again long after its run finished.
CREATE TABLE mcp_calls (
    call_key    TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL,
    claimed_at  TEXT NOT NULL
);
CREATE INDEX mcp_calls_by_claim ON mcp_calls (claimed_at);
