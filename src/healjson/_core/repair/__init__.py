"""L3, repair: the next request as data (`RepairPrompt`) with one renderer, bounded.

`prompt` (`RepairPrompt`, `Strategy`), `items` (per-item repair of a list), `example` (the
golden example a repair shows).
"""
