"""Any other self-hosted server speaking OpenAI's Chat Completions: taken at its word (every quirk's
default, as for the commercial APIs); `providers.*.quirks` adjusts it."""

from ...config.quirks import BackendFamily

FAMILY = BackendFamily("openai-compatible", display="the model server")
