"""toolrec serving: the ranking core, the index format, and the Lambda/HTTP/MCP adapters."""


def version() -> str:
    """The installed toolrec version, one for the OpenAPI document and MCP ``initialize`` ("0" from a bare source
    tree without package metadata)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("toolrec")
    except importlib.metadata.PackageNotFoundError:
        return "0"
