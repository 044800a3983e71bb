"""trackway.tools.artifacts: large results kept out of the context window. A result over the
placement threshold is stored once (content-addressed, under the run's identity scope) and
the model reads an ``art_…`` ticket; a tool that ``wants`` an artifact kind gets the data
back in its arguments. The store is a table of the run store (SQLite, PostgreSQL) or a
folder.

Imports: ``trackway.engine`` only (``define``, ``runner`` and the agent import this).
"""

from ._folder import FolderArtifacts as FolderArtifacts
from ._meta import ARTIFACT_REF_PREFIX as ARTIFACT_REF_PREFIX
from ._meta import ArtifactMeta as ArtifactMeta
from ._meta import ArtifactScope as ArtifactScope
from ._store import ARTIFACT_LIST_LIMIT as ARTIFACT_LIST_LIMIT
from ._store import ArtifactStore as ArtifactStore
from ._store import MemoryArtifacts as MemoryArtifacts
from ._store import RunStoreArtifacts as RunStoreArtifacts
from ._store import artifact_value as artifact_value

__all__ = [
    "ARTIFACT_LIST_LIMIT",
    "ARTIFACT_REF_PREFIX",
    "ArtifactMeta",
    "ArtifactScope",
    "ArtifactStore",
    "FolderArtifacts",
    "MemoryArtifacts",
    "RunStoreArtifacts",
    "artifact_value",
]
