"""One module per backend family, each declaring `FAMILY = BackendFamily(...)` (hub/config/quirks.py);
hub/backends/registry.py finds them. Modules whose name starts with "_" are helpers."""
