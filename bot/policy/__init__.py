"""Who may approve what, how many must, and for how long: the approval policy.

`APPROVALS_POLICY` names a TOML file (read with the standard library's `tomllib`);
without one the built-in defaults apply. The file has a `[defaults]` table and one
`[tools.<name>]` table per tool that differs; a tool table overrides only the keys it
sets. Example:

    admins = ["U0SECURITY"]
    allow_external_users = false  # true: Slack Connect partners may act too

    [defaults]
    approvers = []              # Slack user ids (U…/W…) and user group ids (S…); empty = anyone
    required_approvals = 1
    allow_self_approval = false
    require_reason = true
    expires_after = "24h"
    remind_before = "1h"        # "0s": no reminder

    [tools.deploy_release]
    approvers = ["S0RELEASE"]
    required_approvals = 2
    expires_after = "2h"

    [tools.get_status]
    allow_always = true         # "approve this tool for the rest of the run" (default false)

    [tools.restart_service]     # approval windows and audit-only tools (bot.policy.windows)
    allow_window = "2h"         # "approve matching calls for the next 2h" (default: not offered)
    window_match = ["service"]  # the argument fields that must be equal (default: none)

    [tools.get_logs]
    mode = "audit"              # runs without waiting; a card records it after (default "approve")

    [tools.drop_table]          # how the card reaches people (bot.policy.routing)
    approvers = ["S0DBA"]
    notify = "both"             # "channel" (default) | "dm" | "both"
    escalate_after = "30m"      # then these may decide too, and are told
    escalate_to = ["S0ONCALL"]
    notify_requester = "dm"     # the outcome by direct message too

    [limits]                    # what one request may set in motion (defaults shown)
    tool_calls_per_turn = 20    # calls in one model turn; more and none of them runs
    pending_approvals_per_run = 20   # cards a run may wait on at once
    task_chars = 4000           # a task (or a thread reply) in characters

The limits stop one request from flooding a channel: a single /agent command of
thousands of "and"-joined clauses once posted thousands of review cards. 20 calls per
turn is well above what a real operations task asks for in one step (a handful of
deploys or restarts) and posts at most 20 cards, which Slack's one-message-a-second
pace for a channel sends in about 20 s. 4000 characters is the length Slack advises for
a message's text, and the bot reposts the task as its thread's root message. Past a
limit a run fails with one clear line in its thread; a task that is too long is refused
before any run starts.

Everything is checked at start-up: an unknown key, a bad duration or an impossible rule
(fewer listed approvers than required approvals, with no group listed; `allow_always`
or `allow_window` with `required_approvals` > 1, since a standing decision is one
person's; `window_match` without `allow_window`; `mode = "audit"` with either) is a
ConfigError naming the file, the key and the problem; every problem of the file is
reported at once (`PolicyError.problems`; `approvals-bot policy check FILE`). Parsing
is pure; group membership is asked of a `GroupDirectory` (Slack's
`usergroups.users.list` in bot/slack) only when a person's eligibility is checked, and
channel membership of a `ChannelDirectory` (Slack's `conversations.members`): a call is
decided only by members of the channel it was asked in (bot.service.authority applies it).
"""
