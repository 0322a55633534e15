"""L4, the outcome: `Healed` or `Degraded`, each attempt, and how they are kept and shown.

`attempt` (`Attempt`, `Reason`), `outcome` (`Healed`, `Degraded`), `calls` (`ToolCalls`, the
value of a tool-call run), `decisions` (the strategy and the final reason a failure calls for),
`record` (an outcome as JSON data), `trace` (as Markdown), `seal` (the run's secrets out of its
model text), `savings` (what healing saved).
"""
