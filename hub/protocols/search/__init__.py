"""searchhub's own search API, `POST /v1/search`, and Open WebUI's "external" web search contract,
`POST /v1/search/open-webui`: the configured engines, cache, failover and the caller's budget,
without a model (endpoints.py)."""
