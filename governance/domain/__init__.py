"""Pure rules of governance: finding secrets in an entry and redacting them (no Django imports)."""
