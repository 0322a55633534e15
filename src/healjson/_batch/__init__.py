"""Running many requests: the rows of a batch input, its output file, and two runners —
one process with bounded concurrency (`run`), and the providers' Batch APIs in rounds (`api`)."""
