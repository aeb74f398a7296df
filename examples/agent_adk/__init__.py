"""An ADK agent whose file writes wait for a person (Google ADK's tool confirmation, made durable)."""
