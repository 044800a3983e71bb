"""The agent card: what an A2A client reads before it sends anything (the agent's name,
what it does, its skills and where to send messages). Its skills are the agent's tools."""

from __future__ import annotations

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_CURRENT, TransportProtocol

from trackway.agent import Agent

__all__ = ["agent_card"]


def agent_card(
    agent: Agent,
    *,
    url: str,
    description: str | None = None,
    version: str = "1.0.0",
) -> AgentCard:
    """The A2A card of ``agent`` served at ``url`` (the JSON-RPC endpoint clients POST to):
    its name, a description, one skill per tool (the tool's name and description; an agent
    without tools has one skill, itself) and streaming. Text in, text out. Pass the result,
    edited, as ``a2a_app(card=...)`` to declare more (security schemes, a provider)."""
    tools = agent._cfg.tools
    skills = [
        AgentSkill(
            id=name,
            name=name,
            description=tool.description or f"the {name} tool",
            tags=["tool"],
        )
        for name, tool in tools.items()
    ]
    description = description or f"The trackway agent {agent.name!r} (model {agent.model})."
    if not skills:  # the card must name one: an agent without tools converses
        skills = [
            AgentSkill(id=agent.name, name=agent.name, description=description, tags=["agent"])
        ]
    return AgentCard(
        name=agent.name,
        description=description,
        version=version,
        supported_interfaces=[  # A2A 1.0, and 0.3 (``message/send``) on the same endpoint
            AgentInterface(
                url=url, protocol_binding=TransportProtocol.JSONRPC.value, protocol_version=v
            )
            for v in (PROTOCOL_VERSION_CURRENT, PROTOCOL_VERSION_0_3)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=skills,
    )
