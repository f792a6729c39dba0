"""hub/injection/chain.py directly: the chain key and the mixed-turn splice."""

from __future__ import annotations

from hub.injection.chain import ChainState, Hidden, chain_key, splice


def test_key_follows_user_texts_and_the_caller() -> None:
    convo = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    later = [*convo, {"role": "assistant", "tool_calls": [{"id": "x"}]}, {"role": "tool", "tool_call_id": "x"}]
    assert chain_key("k", convo) == chain_key("k", later)
    assert chain_key("k", convo) != chain_key("other", convo)
    assert chain_key("k", convo, "explicit") != chain_key("k", convo)
    parts = [{"role": "user", "content": [{"type": "text", "text": "q"}]}]
    assert chain_key("k", parts) == chain_key("k", [{"role": "user", "content": "q"}])


def test_splice_puts_hidden_calls_back_where_they_happened() -> None:
    theirs = {"id": "t1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    ours = {"id": "s1", "type": "function", "function": {"name": "web_search", "arguments": '{"query": "q"}'}}
    hidden = Hidden(["t1"], {"role": "assistant", "content": "let me look", "tool_calls": [ours]},
                    [{"role": "tool", "tool_call_id": "s1", "content": "results"}])
    client = [{"role": "user", "content": "q"},
              {"role": "assistant", "content": "let me look", "tool_calls": [theirs]},
              {"role": "tool", "tool_call_id": "t1", "content": "file"}]
    out = splice(client, ChainState(hidden=[hidden]))
    assert out[1]["tool_calls"] == [theirs, ours]
    assert [m.get("tool_call_id") for m in out[2:]] == ["s1", "t1"]
    assert splice(client, ChainState()) is client
