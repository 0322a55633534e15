"""L2, the judge: schema and contracts decide on one reply; every failure is a `Diagnostic`.

`contracts` (`@contract`, running rules), `policies` (what a broken rule does: `on_fail`),
`schema_errors` (pydantic's errors as diagnostics), `check` (L1 + L2 on one reply: the
`Evaluation`), `verdict` (how a reply fared), `enforcement` (did the endpoint enforce the
schema it was sent?).
"""
