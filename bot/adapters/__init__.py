"""Adapters: agents built on other frameworks, run by the bot through the engine seam
(bot.runtime.engine). Each adapter needs its framework installed (an extra); the rest of
the bot never imports one unless it is.

- openai_agents: agents of the OpenAI Agents SDK (from a checkout:
  `pip install -e '.[openai-agents]'`).
"""
