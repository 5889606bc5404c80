"""piweb-runner: Pi on this machine, started, followed and steered from piweb."""
