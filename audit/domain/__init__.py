"""Pure rules of the audit: no Django imports."""
