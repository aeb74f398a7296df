"""``python -m scope_tool_mcp ...`` is ``scope-tool mcp ...``."""

from scope_tool_mcp._serve import main

if __name__ == "__main__":
    main()
