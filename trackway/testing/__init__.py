"""trackway.testing: test doubles and guards for testing code built on trackway.

- :class:`TestModel`: a provider that calls every tool it is offered with arguments
  generated from their schemas, then answers with what they returned — the agent's wiring
  tested without a model (``Agent.override(provider=TestModel())`` swaps it into an agent
  built elsewhere).
- :func:`block_network`: while active, any connection to a host other than loopback raises
  :class:`NetworkBlockedError`, so no test calls a real model by accident.
- A pytest plugin (installed with trackway, off until asked for): the ini option
  ``trackway_block_network = true`` blocks the network in every test, the marker
  ``@pytest.mark.block_network`` in one; fixtures ``test_model`` and ``blocked_network``.
"""

from trackway.engine.core._public import publish as _publish

from ._network import NetworkBlock as NetworkBlock
from ._network import NetworkBlockedError as NetworkBlockedError
from ._network import block_network as block_network
from ._test_model import TestModel as TestModel

__all__ = ["NetworkBlock", "NetworkBlockedError", "TestModel", "block_network"]


_publish(__all__, globals(), __name__)  # shown as trackway.testing.X in reprs and tracebacks
