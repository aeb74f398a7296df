"""What the command line and the front ends share to serve: connection, dev server, ASGI.

The package itself exports nothing; it is the CLI's and the front ends' plumbing (private
modules), plus one public module, :mod:`scope_tool.serving.codec_server`, the codec server for
the Temporal Web UI and CLI.
"""

__all__: list[str] = []
