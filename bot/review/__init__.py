"""What a human reviews before a tool runs: the call's snapshot, shown faithfully.

- The digest a card shows is the call's keyed digest (bot.canonical.call_digest, taken
  from the run's state): `review_snapshot` is given it and never hashes anything itself.
  It always covers the REAL arguments: a redacted secret still changes it.
- `review_snapshot` is what the reviewer sees: the arguments a tool chooses to show,
  with secret-looking keys and values replaced by `REDACTED` (see bot.credentials), and
  whatever an earlier snapshot of the same call hid (`keep_hidden`, from
  `carried_redactions`): a value hidden once stays hidden.
- The one renderer: `ReviewSnapshot.render_text` (Slack mrkdwn that fits a Block Kit
  section: bot.review.fitting), `arguments_json` (the edit form's JSON) and `visible`
  (single strings) show every character that hides, reorders or fakes a line
  (zero-width, bidi controls, U+2028/2029, other control and format characters,
  blank-looking letters) as its JSON escape (`\u202e`, bot.review.visible), so two
  different calls never look alike and the text still means exactly the arguments.
  `ReviewSnapshot.script_warnings` names tokens that mix scripts (a Cyrillic `а` in a
  Latin host name: bot.review.mixed_scripts).
"""
