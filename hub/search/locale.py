"""A user location (`{"country", "region", "city", "timezone"}`) in the terms each engine takes.

Serper (`gl`), Brave (`country`) and Exa (`userLocation`) take the ISO 3166-1 alpha-2 code as it is;
Tavily takes the country's English name, SearXNG a language tag, and the LLM search engines (GLM,
Gemini) a sentence in their instructions. The tables cover the countries those engines know; a
country outside them is simply not passed on.
"""

from __future__ import annotations

from collections.abc import Mapping

# ISO 3166-1 alpha-2 -> Tavily's `country` value (lower-case English name).
COUNTRY_NAMES: dict[str, str] = {
    "AR": "argentina", "AT": "austria", "AU": "australia", "BD": "bangladesh", "BE": "belgium",
    "BG": "bulgaria", "BR": "brazil", "CA": "canada", "CH": "switzerland", "CL": "chile", "CN": "china",
    "CO": "colombia", "CZ": "czech republic", "DE": "germany", "DK": "denmark", "EG": "egypt",
    "ES": "spain", "FI": "finland", "FR": "france", "GB": "united kingdom", "GR": "greece",
    "HK": "hong kong", "HU": "hungary", "ID": "indonesia", "IE": "ireland", "IL": "israel", "IN": "india",
    "IT": "italy", "JP": "japan", "KE": "kenya", "KR": "south korea", "MA": "morocco", "MX": "mexico",
    "MY": "malaysia", "NG": "nigeria", "NL": "netherlands", "NO": "norway", "NZ": "new zealand",
    "PE": "peru", "PH": "philippines", "PK": "pakistan", "PL": "poland", "PT": "portugal", "RO": "romania",
    "RU": "russia", "SA": "saudi arabia", "SE": "sweden", "SG": "singapore", "TH": "thailand",
    "TR": "turkey", "TW": "taiwan", "UA": "ukraine", "AE": "united arab emirates", "US": "united states",
    "VN": "vietnam", "ZA": "south africa",
}  # fmt: skip

# ISO 3166-1 alpha-2 -> the language tag SearXNG's `language` takes for results from that country.
COUNTRY_LANGUAGES: dict[str, str] = {
    "AR": "es-AR", "AT": "de-AT", "AU": "en-AU", "BE": "nl-BE", "BG": "bg-BG", "BR": "pt-BR", "CA": "en-CA",
    "CH": "de-CH", "CL": "es-CL", "CN": "zh-CN", "CO": "es-CO", "CZ": "cs-CZ", "DE": "de-DE", "DK": "da-DK",
    "ES": "es-ES", "FI": "fi-FI", "FR": "fr-FR", "GB": "en-GB", "GR": "el-GR", "HK": "zh-HK", "HU": "hu-HU",
    "ID": "id-ID", "IE": "en-IE", "IL": "he-IL", "IN": "en-IN", "IT": "it-IT", "JP": "ja-JP", "KR": "ko-KR",
    "MX": "es-MX", "MY": "en-MY", "NL": "nl-NL", "NO": "nb-NO", "NZ": "en-NZ", "PE": "es-PE", "PH": "en-PH",
    "PL": "pl-PL", "PT": "pt-PT", "RO": "ro-RO", "RU": "ru-RU", "SA": "ar-SA", "SE": "sv-SE", "SG": "en-SG",
    "TH": "th-TH", "TR": "tr-TR", "TW": "zh-TW", "UA": "uk-UA", "US": "en-US", "VN": "vi-VN", "ZA": "en-ZA",
}  # fmt: skip

_PARTS = ("city", "region", "country")


def country_name(country: str | None) -> str | None:
    return COUNTRY_NAMES.get(country) if country else None


def language_tag(country: str | None) -> str | None:
    return COUNTRY_LANGUAGES.get(country) if country else None


def described(location: Mapping | None) -> str | None:
    """"Lyon, Auvergne-Rhône-Alpes, FR" for an instruction to an LLM search engine, or None."""
    if not isinstance(location, Mapping):
        return None
    parts = [" ".join(v.split())[:60] for k in _PARTS if isinstance(v := location.get(k), str) and v.strip()]
    return ", ".join(parts) or None


def location_hint(location: Mapping | None) -> str | None:
    place = described(location)
    return f"The user is in {place}: prefer results relevant to that location." if place else None
