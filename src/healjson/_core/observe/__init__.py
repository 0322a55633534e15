"""Observing runs: structured events (`events`) and OpenTelemetry spans and metrics
(`telemetry`)."""
