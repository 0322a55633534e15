"""healjson's core: the layers and the engine, importing nothing above themselves.

- `parse/` — L1: recover the answer's JSON from a reply, locally.
- `sentinels` — the "no value" marker shared by the layers.
"""
