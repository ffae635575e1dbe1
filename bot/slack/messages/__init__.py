"""What the bot says to people, in one place: help, answers, refusals, thread messages.

Every sentence the bot posts in a run's thread, answers privately (ephemeral messages,
slash-command answers) or shows inline in a form is built in this package, escaped for
Slack mrkdwn and clipped to Slack's limits: `replies` (to the person who acted),
`run_thread` (posted in a run's thread), `approval_lines` (what a review card says,
approvals listed and shown), `forms` (labels and inline errors of the modals). The
cards, modals and App Home (bot.slack.cards, the modal modules, bot.slack.home) lay
these out, with the buttons of bot.slack.actions.
"""
