"""Adapters between healjson and provider clients (openai, instructor).

Import cost matters: nothing here imports openai or instructor until a client is wrapped.
"""

from __future__ import annotations

from healjson._providers.openai_strict_schema import strict_json_schema

__all__ = ["strict_json_schema"]
