"""A backend family is one module of hub/backends/families/: the registry finds it there, and the config
loader knows families only from the table it is given (hub/backends/registry.py, in hub/runtime.py's
PLUGINS): which provider types exist, their quirks, whether they are self-hosted."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import httpx
import pytest

from hub.backends.registry import CATALOG, FAMILIES, discover
from hub.config import COMMERCIAL_TYPES, ConfigError, Plugins, parse
from hub.config.quirks import COMMERCIAL_QUIRKS
from hub.runtime import PLUGINS
from routes.app import create_app

from .fakes.server import ServerThread
from .helpers import ROOT, base_config, hermetic, throwaway_package

FAMILIES_DIR = ROOT / "hub" / "backends" / "families"

TGI = """
    from hub.config.quirks import BackendFamily, Quirks

    from ._shared import DISPLAY

    FAMILY = BackendFamily("tgi", display=DISPLAY, quirks=Quirks(forcing="required", drop_fields=("seed",)))
"""
HOSTED = """
    from hub.config.quirks import BackendFamily

    FAMILY = BackendFamily("hosted-box", display="the box", self_hosted=False)
"""


def _package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, modules: dict[str, str]):
    return throwaway_package(tmp_path, monkeypatch, modules, "families")


def _new_families(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    return discover(_package(tmp_path, monkeypatch, {"tgi": TGI, "hosted": HOSTED, "_shared": 'DISPLAY = "TGI"\n'}))


def _with_provider(provider: dict) -> str:
    cfg = base_config("http://127.0.0.1:9/v1")
    cfg["providers"]["local"] = {"baseURL": "http://127.0.0.1:9/v1", **provider}
    return json.dumps(cfg)


def _known_types(families) -> str:
    return ", ".join(sorted({*COMMERCIAL_TYPES, *families}))


# ---------------------------------------------------------------- the repository's families


def test_every_family_module_declares_its_family():
    """Each module of hub/backends/families/ (read from the folder, not from the registry) gives the
    table one family, and the loader is given that table."""
    on_disk = {p.stem for p in FAMILIES_DIR.glob("*.py") if not p.stem.startswith("_")}
    assert on_disk and set(CATALOG.modules) == on_disk
    assert set(FAMILIES) == {family.name for family in CATALOG.modules.values()}
    for module, family in CATALOG.modules.items():
        assert importlib.import_module(f"hub.backends.families.{module}").FAMILY is family
        assert family.quirks.family == family.name and family.display
    assert PLUGINS.families is FAMILIES


def test_each_provider_of_a_family_gets_its_declaration():
    for name, family in FAMILIES.items():
        provider = parse(_with_provider({"type": name}), env={}, plugins=PLUGINS).providers["local"]
        assert provider.quirks is family.quirks and provider.self_hosted == family.self_hosted


# ---------------------------------------------------------------- a new family: one module, nothing else


def test_a_new_family_module_is_found_and_its_config_accepted(tmp_path, monkeypatch):
    """A package with new family modules (and a helper module) is discovered, and a config naming one
    loads with the families discovered from it, while the repository's families do not know it."""
    catalog = _new_families(tmp_path, monkeypatch)
    assert list(catalog.families) == ["hosted-box", "tgi"] and list(catalog.modules) == ["hosted", "tgi"]
    plugins = Plugins(PLUGINS.engines, catalog.families)  # only the new families: vllm is unknown here

    tgi = parse(_with_provider({"type": "tgi"}), env={}, plugins=plugins).providers["local"]
    assert tgi.quirks.family == "tgi" and tgi.quirks.forcing == "required" and tgi.quirks.drop_fields == ("seed",)
    assert tgi.self_hosted and tgi.first_token_timeout_s == 300  # a self-hosted server's default
    box = parse(_with_provider({"type": "hosted-box"}), env={}, plugins=plugins).providers["local"]
    assert not box.self_hosted and box.first_token_timeout_s == 120  # as its declaration says
    both = Plugins(PLUGINS.engines, {**FAMILIES, **catalog.families})
    over = parse(_with_provider({"type": "vllm", "quirks": {"family": "tgi"}}), env={}, plugins=both)
    assert over.providers["local"].quirks is catalog.families["tgi"].quirks

    with pytest.raises(ConfigError) as e:
        parse(_with_provider({"type": "tgi"}), env={}, plugins=PLUGINS)
    assert e.value.errors == [f"providers.local.type: unknown provider type 'tgi' (known: {_known_types(FAMILIES)})"]


def test_a_new_family_shapes_what_its_server_receives(tmp_path, monkeypatch, fake_model):
    """Over HTTP: a provider of the new family gets its quirks (`seed` dropped), a vLLM one beside it not."""
    catalog = _new_families(tmp_path, monkeypatch)
    cfg = hermetic(base_config(fake_model.url))
    cfg["providers"] = {"plain": {"type": "vllm", "baseURL": fake_model.url},
                        "mine": {"type": "tgi", "baseURL": fake_model.url}}
    cfg["virtualrouter"]["routing"]["default"] = [{"targets": ["plain.m", "mine.m"]}]
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(cfg))
    config = parse(path.read_text(), env={}, plugins=Plugins(PLUGINS.engines, {**FAMILIES, **catalog.families}), path=str(path))
    server = ServerThread(create_app(str(path), config)).start()
    try:
        for model in ("plain.m", "mine.m"):
            r = httpx.post(server.url + "/v1/chat/completions", timeout=30,
                           json={"model": model, "seed": 7, "messages": [{"role": "user", "content": "hi"}]})
            assert r.status_code == 200, r.text
    finally:
        server.stop()
    plain, mine = fake_model.requests
    assert plain["seed"] == 7 and "seed" not in mine


def test_a_module_that_declares_no_family_is_a_bug(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"empty": "X = 1\n"})
    with pytest.raises(ValueError, match=r"\.empty declares no backend family"):
        discover(package)


def test_two_modules_claiming_one_name_is_a_bug(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"_shared": 'DISPLAY = "TGI"\n', "tgi": TGI, "tgi2": TGI})
    with pytest.raises(ValueError, match=r"\.tgi2\.FAMILY: 'tgi' is already .*\.tgi\.FAMILY"):
        discover(package)


def test_a_family_cannot_take_a_commercial_types_name(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"gemini": HOSTED.replace('"hosted-box"', '"gemini"')})
    with pytest.raises(ValueError, match=r"'gemini' is a commercial provider type"):
        discover(package)


# ---------------------------------------------------------------- the loader has no list of its own


def test_without_families_only_the_commercial_types_load():
    """The commercial APIs are no family: they load with none injected, on the commercial quirks."""
    plugins = Plugins(PLUGINS.engines)
    for kind in sorted(COMMERCIAL_TYPES):
        provider = parse(_with_provider({"type": kind, "apiKey": "k"}), env={}, plugins=plugins).providers["local"]
        assert provider.quirks is COMMERCIAL_QUIRKS and not provider.self_hosted
    with pytest.raises(ConfigError) as e:
        parse(_with_provider({"type": "vllm", "quirks": {"family": "ollama"}}), env={}, plugins=plugins)
    assert e.value.errors == [
        "providers.local.quirks.family: unknown backend family 'ollama' (known: openai)",
        f"providers.local.type: unknown provider type 'vllm' (known: {_known_types(())})",
    ]


def test_an_unknown_quirk_family_names_the_field_and_the_known_ones():
    with pytest.raises(ConfigError) as e:
        parse(_with_provider({"type": "vllm", "quirks": {"family": "${FAMILY}"}}),
              env={"FAMILY": "sk-not-shown"}, plugins=PLUGINS)
    known = ", ".join(sorted({*FAMILIES, "openai"}))
    assert e.value.errors == [f"providers.local.quirks.family: unknown backend family from ${{FAMILY}} (known: {known})"]
    assert "sk-not-shown" not in str(e.value)
