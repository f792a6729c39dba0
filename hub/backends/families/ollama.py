"""Ollama: its OpenAI endpoint ignores tool_choice and parallel_tool_calls, so a forced search is an
instruction."""

from ...config.quirks import BackendFamily, Quirks

FAMILY = BackendFamily("ollama", display="Ollama (`ollama serve`)",
                       quirks=Quirks(forcing="instruction", parallel_tool_calls=False))
