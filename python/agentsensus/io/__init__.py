"""A store's file as a whole: JSON Lines export (:mod:`.export`) and import
(:mod:`.importer`), and compaction of a closed store (:mod:`.compact`).

Nothing is re-exported here: a function ``compact`` bound in this namespace
would hide the module of the same name from ``import agentsensus.io.compact``."""
