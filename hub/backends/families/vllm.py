"""vLLM: tool_choice "auto" needs --enable-auto-tool-choice on the server; named and "required"
choices are enforced by guided decoding."""

from ...config.quirks import BackendFamily

FAMILY = BackendFamily("vllm", display="vLLM")
