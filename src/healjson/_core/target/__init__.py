"""Targets: any type pydantic validates, or a JSON Schema dict, behind one cached `Target`.

`target` (the `Target` itself), `json_schema` (JSON Schema targets), `json_schema_lax` (their
lax reading), `json_schema_errors` (jsonschema's errors as pydantic's), `json_schema_fast` (the
`fast` extra), `schema_refs` (local `$ref`s).
"""
