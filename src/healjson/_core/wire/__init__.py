"""The wire's core side: what the core reads from and hands to a provider, knowing none of them.

`formats` (what a wire format tells the core, in dispatch order) and `registry` (a format
added), `reply` (`Reply`, `Usage`, `ToolCall`: one answer), `delta` (one stream chunk), `cost`
(USD), `fault` (a provider's HTTP error answer) and `effects` (what a run yields and gets
back: `ModelCall`, `AwaitAll`, `CallResult`).
"""
