"""llama-server and llama-cpp-python's server. The latter rejects `content: null` (a pydantic
string) and ignores tools without an explicit tool_choice; its chatml-function-calling template
drops role "tool" messages; it cannot stream an automatic tool choice. Named choices force a call
through a grammar. Either answers whatever model name a request carries. llama-cpp-python's server
answers 200 and ends the stream without a word when the request fails once streaming began (a prompt
over its n_ctx: "Requested tokens (...) exceed context window")."""

from ...config.quirks import BackendFamily, Quirks

FAMILY = BackendFamily("llamacpp", display="llama.cpp's llama-server", any_model=True,
                       quirks=Quirks(null_content=False, tool_choice_auto=True, parallel_tool_calls=False,
                                     tool_results="user", stream_tools=False,
                                     silent_end="llama-cpp-python ends a stream without any event when the "
                                                "request fails, e.g. a prompt longer than its n_ctx: its log says why"))
