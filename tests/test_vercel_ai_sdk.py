"""The Vercel AI SDK (`ai` 6.x, `@ai-sdk/openai` 3.x, pinned in tests/node/package.json) as a real client
of /v1/responses: two generateText turns with `store` at its default, so the second names the first
turn's output items with `item_reference` (tests/node/two_turns.mjs), once plainly and once with the
provider's hosted web search, against the gateway on loopback in front of the fake model and the fake
search providers. Node.js 20+ and npm are required: without them, or when `npm ci` fails, the test
fails saying so; it never skips."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

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


def run_two_turns(node: str, gw, mode: str) -> dict:
    r = subprocess.run([node, str(SCRIPT), gw.url + "/v1", mode], cwd=NODE_DIR, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, f"the AI SDK script failed (exit {r.returncode}):\n{r.stderr[-4000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def types(items: list[dict]) -> list[str]:
    return [i.get("type") or ("message" if "role" in i else "?") for i in items]


@pytest.mark.timeout(600)  # a first npm ci on a cold cache
def test_two_plain_turns(gateway, fake_model, search_fakes, node) -> None:
    gw = gateway(base_config(fake_model.url))
    fake_model.script({"content": "Nice to meet you, Bob."}, {"content": "Your name is Bob."})
    out = run_two_turns(node, gw, "plain")
    assert out["first"]["text"] == "Nice to meet you, Bob." and out["second"]["text"] == "Your name is Bob."
    second = out["second"]["input"]
    assert types(second) == ["message", "item_reference", "message"], second  # the SDK referenced msg_…
    assert second[1]["id"].startswith("msg_")
    assert fake_model.requests[-1]["messages"] == [
        {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": "Nice to meet you, Bob."},
        {"role": "user", "content": "What is my name?"},
    ]


@pytest.mark.timeout(600)
def test_two_turns_with_hosted_web_search(gateway, fake_model, search_fakes, node) -> None:
    engine = {"id": "google", "type": "serper", "apiKey": KEYS["serper"],
              "baseURL": search_fakes.base_url(search_fakes.server, "serper")}
    gw = gateway(base_config(fake_model.url, webSearch={"engines": [engine], "cacheTtlMs": 0}))
    fake_model.script(
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]},
        {"content": "Rust 1.91.0 is the latest stable release [1]."},
        {"content": "Rust 1.90.0 came before it."},
    )
    out = run_two_turns(node, gw, "search")
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
