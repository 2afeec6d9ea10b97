"""A store's file as a whole: JSON Lines export (`export`) and import
(`importer`), and compaction of a closed store (`compact`).

Nothing is re-exported here: a function ``compact`` bound in this namespace
would hide the module of the same name from ``import agentsensus.io.compact``."""
