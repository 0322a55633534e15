"""The run: one attempt loop, its drivers, and the `Healer` that starts it.

`policy` (`HealPolicy`), `messages` (a request's messages as kept), `engine` (the sans-I/O
loop), `tools` (the tool-call answer kind), `drive` (the sync and async drivers), `replay` (a
run rebuilt from stored results), `streams` (what a caller of a streamed run holds), `owner`
(the client a call belongs to), `healer` (`Healer`, `validate`).
"""
