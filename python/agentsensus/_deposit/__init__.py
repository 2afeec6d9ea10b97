"""The deposit path's private parts: planning a batch, asking the judge in
passes, lexical candidates and batch keys. Nothing here is public API."""
