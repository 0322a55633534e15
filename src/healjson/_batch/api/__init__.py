"""Provider Batch API runs, healed: the ledger, the providers' batch endpoints, the requests
and the rounds runner (`healjson.batch_api` is the public entry point)."""
