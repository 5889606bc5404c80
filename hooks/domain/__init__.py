"""The pure rules of outgoing webhooks: events, signatures, retry times and the Slack message."""
