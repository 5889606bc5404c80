"""Database backends of piweb."""
