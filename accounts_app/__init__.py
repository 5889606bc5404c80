"""Sign-in with the team's identity provider (OpenID Connect through django-allauth)."""
