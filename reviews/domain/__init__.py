"""Pure rules of reviews."""
