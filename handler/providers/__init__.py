"""toolrec as the search backend of the model providers' own tool search (PRODUCT.md §7).

Pure mappings from catalog tools to each provider's wire shapes: ``anthropic`` (deferred tools, ``tool_reference``
blocks in a tool_result) and ``openai`` (deferred functions, a client-executed ``tool_search_output``). What the two
share (the search the model is offered, the names it is shown) lives in ``search`` and handler/catalog/names.py.
"""
