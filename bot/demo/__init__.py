"""The demo "ops" agent: four ops tools, an offline model and a simulated downstream.

from bot.demo import build_ops_agent, ops_dependencies
result = await Runner.arun(build_ops_agent(), "deploy payments 1.2.3",
                           dependencies=ops_dependencies())
"""

from bot.demo.effects import EffectsFile, token_fingerprint
from bot.demo.offline_model import OfflineOpsModel, parse_task
from bot.demo.ops_agent import (
    OPS_AGENT_NAME,
    OPS_AGENT_VERSION,
    build_ops_agent,
    default_registry,
)
from bot.demo.ops_tools import (
    OPS_TOOLS,
    OpsDependencies,
    deploy_release,
    get_status,
    ops_dependencies,
    restart_service,
    set_config,
)

__all__ = [
    "OPS_AGENT_NAME",
    "OPS_AGENT_VERSION",
    "OPS_TOOLS",
    "EffectsFile",
    "OfflineOpsModel",
    "OpsDependencies",
    "build_ops_agent",
    "default_registry",
    "deploy_release",
    "get_status",
    "ops_dependencies",
    "parse_task",
    "restart_service",
    "set_config",
    "token_fingerprint",
]
