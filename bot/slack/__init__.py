"""The Slack surface: Bolt on aiohttp (HTTP) or Socket Mode, review cards, the modals,
and the SlackNotifier the service talks through. Knows Slack; knows no SQL.

Entry points: `bot.slack.surface.SlackSurface` (the owned bundle), `bot.slack.server.
build_web_app` (POST /slack/events, GET /healthz); `approvals-bot serve|socket` wires them.
"""
