"""LM Studio: "required" is supported, a named choice is not."""

from ...config.quirks import BackendFamily, Quirks

FAMILY = BackendFamily("lmstudio", display="LM Studio's server",
                       quirks=Quirks(null_content=False, forcing="required"))
