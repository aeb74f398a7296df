"""Configuration shared by clients and workers: settings, encryption, tracing, webhooks.

The package itself exports nothing; its public face is its modules, each with its own
``__all__``: :mod:`scope_tool.config.settings` (the one reader of connection settings),
:mod:`scope_tool.config.codec` (payload encryption), :mod:`scope_tool.config.tracing` and
:mod:`scope_tool.config.webhook`. The data converter lives here privately and has one public
home, :mod:`scope_tool.client` (``DATA_CONVERTER``, ``ScopeToolPayloadConverter``,
``with_scope_tool_converter``). Configuration errors (``SettingsError``,
``EncryptionConfigError``, ``TelemetryConfigError``) are in :mod:`scope_tool.wire.errors`,
under ``scope_tool.errors.ToolError``.
"""

__all__: list[str] = []
