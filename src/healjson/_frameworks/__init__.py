"""What the agent-framework integrations (`healjson.langchain`, `healjson.dspy`) share.

`core` is the one place they import healjson's internals from; the other modules read one
framework's objects each.
"""
