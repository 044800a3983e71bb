"""The engine's vocabulary: values, frozen views, paths, state, commits and their detail, persisted
documents, snapshots, errors, and the small helpers every layer uses (typed state, retry
policies, keyword checks, the sync bridge, public names).

Imports: nothing else of trackway. Every other engine subpackage builds on this one. Holds 15
modules because each is one data shape the rest of the engine shares; they have no order among
themselves worth a folder (the commit, the state it folds into, the snapshot read from a log of
commits).
"""
