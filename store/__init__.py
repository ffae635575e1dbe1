"""Persistence for approvals-bot: encrypted run blobs, approvals, audit log, ledger."""
