"""The Store's private parts beside the deposit path: validation, text
normalisation, scopes, metadata filters, forgetting, history, lexical recall
and the recorded embedder. Nothing here is public API."""
