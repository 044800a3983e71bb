"""trackway.agent: reserved for its own issue; nothing is public here yet."""

__all__: list[str] = []
