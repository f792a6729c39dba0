"""SGLang: named and "required" choices with --tool-call-parser."""

from ...config.quirks import BackendFamily

FAMILY = BackendFamily("sglang", display="SGLang")
