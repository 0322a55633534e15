"""What each provider's wire format means: one module per format, read by the core through
the readers each module registers."""
