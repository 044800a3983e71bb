"""trackway.tools.artifacts: large results kept out of the context window. A result over the
placement threshold is stored once (content-addressed, under the run's identity scope) and
the model reads an ``art_…`` ticket; a tool that ``wants`` an artifact kind gets the data
back in its arguments. The store is a table of the run store (SQLite, PostgreSQL) or a
folder.

Imports: ``trackway.engine`` only (``define``, ``runner`` and the agent import this).
"""

from ._meta import ARTIFACT_REF_PREFIX as ARTIFACT_REF_PREFIX
from ._meta import ArtifactMeta as ArtifactMeta
from ._meta import ArtifactScope as ArtifactScope

__all__ = ["ARTIFACT_REF_PREFIX", "ArtifactMeta", "ArtifactScope"]
