"""Pure rules of discussions: what a comment may hold and whom it mentions. No framework imports."""
