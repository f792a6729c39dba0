"""The Vercel AI SDK (`ai` 6.x, `@ai-sdk/openai` 3.x, pinned in tests/node/package.json) as a real client
of /v1/responses: two generateText turns with `store` at its default, so the second names the first
turn's output items with `item_reference` (tests/node/two_turns.mjs), once plainly and once with the
provider's hosted web search, against the gateway on loopback in front of the fake model and the fake
search providers: on one gateway, and with turn 1 on replica A and turn 2 on replica B, the two sharing
a real redis-server as their state store. Node.js 20+ and npm are required: without them, or when
`npm ci` fails, the test fails saying so; it never skips."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
import redis

from .fakes.search_providers import KEYS
from .helpers import base_config

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "two_turns.mjs"


def _installed_matches_pins() -> bool:
    pins = json.loads((NODE_DIR / "package.json").read_text())["dependencies"]
    for name, version in pins.items():
        manifest = NODE_DIR / "node_modules" / name / "package.json"
        if not manifest.is_file() or json.loads(manifest.read_text()).get("version") != version:
            return False
    return True


@pytest.fixture(scope="module")
def node() -> str:
    """The node binary, with tests/node's pinned packages installed (npm ci when missing or stale)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("Node.js 20+ and npm are needed for the Vercel AI SDK test (tests/node); install them, "
                    "e.g. apt-get install -y nodejs npm", pytrace=False)
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.fail(f"the Vercel AI SDK needs Node.js 20 or newer; {node} is {version}", pytrace=False)
    if not _installed_matches_pins():
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, capture_output=True, text=True,
                           timeout=540)
        if r.returncode != 0 or not _installed_matches_pins():
            pytest.fail(f"npm ci in {NODE_DIR} failed (exit {r.returncode}), so the Vercel AI SDK cannot be tested:\n"
                        f"{(r.stdout + r.stderr)[-3000:]}", pytrace=False)
    return node


def two_turns(node: str, gw, mode: str, gw2=None) -> subprocess.CompletedProcess:
    """Run tests/node/two_turns.mjs: both turns on `gw`, or turn 2 on `gw2` when given."""
    args = [node, str(SCRIPT), gw.url + "/v1", mode] + ([gw2.url + "/v1"] if gw2 else [])
    return subprocess.run(args, cwd=NODE_DIR, capture_output=True, text=True, timeout=60)


def run_two_turns(node: str, gw, mode: str, gw2=None) -> dict:
    r = two_turns(node, gw, mode, gw2)
    assert r.returncode == 0, f"the AI SDK script failed (exit {r.returncode}):\n{r.stderr[-4000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def types(items: list[dict]) -> list[str]:
    return [i.get("type") or ("message" if "role" in i else "?") for i in items]


def search_config(model_url: str, search_fakes) -> dict:
    engine = {"id": "google", "type": "serper", "apiKey": KEYS["serper"],
              "baseURL": search_fakes.base_url(search_fakes.server, "serper")}
    return base_config(model_url, webSearch={"engines": [engine], "cacheTtlMs": 0})


def shared_state(cfg: dict, redis_url: str) -> dict:
    """`cfg` with the replicas' state (stored responses and their items) in Redis under a fresh prefix."""
    return {**cfg, "state": {"backend": "redis", "url": redis_url, "keyPrefix": f"v{uuid.uuid4().hex[:8]}:",
                             "timeoutMs": 2000}}


def assert_referenced_items_in_redis(out: dict, redis_url: str, cfg: dict) -> None:
    """Every item turn 2 referenced is kept in Redis, under the replicas' prefix: B resolved it there."""
    with redis.Redis.from_url(redis_url, decode_responses=True) as r:
        keys = list(r.scan_iter(cfg["state"]["keyPrefix"] + "*"))
    refs = [i["id"] for i in out["second"]["input"] if i.get("type") == "item_reference"]
    assert refs and all(any(k.endswith(ref) for k in keys) for ref in refs), (refs, keys)


def script_plain(fake_model) -> None:
    fake_model.script({"content": "Nice to meet you, Bob."}, {"content": "Your name is Bob."})


def script_search(fake_model) -> None:
    fake_model.script(
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]},
        {"content": "Rust 1.91.0 is the latest stable release [1]."},
        {"content": "Rust 1.90.0 came before it."},
    )


def check_plain(out: dict, fake_model) -> None:
    assert out["first"]["text"] == "Nice to meet you, Bob." and out["second"]["text"] == "Your name is Bob."
    second = out["second"]["input"]
    assert types(second) == ["message", "item_reference", "message"], second  # the SDK referenced msg_…
    assert second[1]["id"].startswith("msg_")
    assert fake_model.requests[-1]["messages"] == [
        {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": "Nice to meet you, Bob."},
        {"role": "user", "content": "What is my name?"},
    ]


def check_search(out: dict, fake_model, search_fakes) -> None:
    assert out["first"]["text"] == "Rust 1.91.0 is the latest stable release [1]."
    assert out["second"]["text"] == "Rust 1.90.0 came before it."
    second = out["second"]["input"]
    assert types(second) == ["message", "item_reference", "item_reference", "message"], second
    assert second[1]["id"].startswith("ws_") and second[2]["id"].startswith("msg_")
    assert len(search_fakes.calls("serper")) == 1
    assert fake_model.requests[-1]["messages"] == [
        {"role": "user", "content": "What is the latest Rust release?"},
        {"role": "assistant", "content": "Rust 1.91.0 is the latest stable release [1]."},
        {"role": "user", "content": "And the one before?"},
    ]


@pytest.mark.timeout(600)  # a first npm ci on a cold cache
def test_two_plain_turns(gateway, fake_model, search_fakes, node) -> None:
    gw = gateway(base_config(fake_model.url))
    script_plain(fake_model)
    check_plain(run_two_turns(node, gw, "plain"), fake_model)


@pytest.mark.timeout(600)
def test_two_turns_with_hosted_web_search(gateway, fake_model, search_fakes, node) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes))
    script_search(fake_model)
    check_search(run_two_turns(node, gw, "search"), fake_model, search_fakes)


# ---------------------------------------------------------------- turn 1 on replica A, turn 2 on B


@pytest.mark.timeout(600)
def test_two_plain_turns_across_replicas_sharing_redis(gateway, fake_model, search_fakes, redis_server,
                                                       node) -> None:
    cfg = shared_state(base_config(fake_model.url), redis_server.url)
    a, b = gateway(cfg, name="a.json"), gateway(cfg, name="b.json")
    script_plain(fake_model)
    out = run_two_turns(node, a, "plain", b)
    check_plain(out, fake_model)
    assert_referenced_items_in_redis(out, redis_server.url, cfg)


@pytest.mark.timeout(600)
def test_two_turns_with_hosted_web_search_across_replicas_sharing_redis(gateway, fake_model, search_fakes,
                                                                        redis_server, node) -> None:
    cfg = shared_state(search_config(fake_model.url, search_fakes), redis_server.url)
    a, b = gateway(cfg, name="a.json"), gateway(cfg, name="b.json")
    script_search(fake_model)
    out = run_two_turns(node, a, "search", b)
    check_search(out, fake_model, search_fakes)
    assert_referenced_items_in_redis(out, redis_server.url, cfg)


@pytest.mark.timeout(600)
def test_replicas_without_shared_state_name_the_unknown_item(gateway, fake_model, search_fakes, node) -> None:
    """The control for the two above: each replica with its own memory store, B cannot resolve A's
    msg_… and says so (so the tests above pass only through the shared store, on two replicas)."""
    a, b = gateway(base_config(fake_model.url), name="a.json"), gateway(base_config(fake_model.url), name="b.json")
    script_plain(fake_model)
    r = two_turns(node, a, "plain", b)
    assert r.returncode != 0 and "statusCode: 400" in r.stderr, r.stderr[-4000:]
    assert re.search(r"Item with id 'msg_\w+' not found", r.stderr), r.stderr[-4000:]
    assert len(fake_model.requests) == 1  # turn 2 never reached the model
