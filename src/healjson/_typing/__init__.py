"""The typed face of `healjson.wrap`: `face.pyi`, generated from one table by `generate`."""
