"""approvals-bot: a human between an AI agent and its dangerous tools."""

__version__ = "0.1.0"
