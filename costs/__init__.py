"""What assistant messages cost: per message, per branch, per session, per abandoned branch, team and user."""
