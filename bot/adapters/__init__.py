"""Adapters: agents built on other frameworks, run by the bot through the engine seam
(bot.runtime.engine). Each adapter needs its framework installed (an extra); the rest of
the bot never imports one unless it is, and an adapter's package imports its framework
only when one of its engine's names is first used.

- openai_agents: agents of the OpenAI Agents SDK (from a checkout:
  `pip install -e '.[openai-agents]'`);
- langgraph: compiled LangGraph graphs (`pip install -e '.[langgraph]'`);
- pydantic_ai: Pydantic AI agents (`pip install -e '.[pydantic-ai]'`).

What they share: `calls` (what a run gives its tools; every call through the one ledger
loop, bot.runtime.dispatch.run_once), `verdicts` (the bot's decisions in a framework's
terms, and the restored-call re-check), `registration` (what registering an agent
checks), `lazy` (engines registered before their framework is imported, and each
package's built-in agent, found by folder).
"""
