"""Pure rules of provenance: what git's output says, and how repository and pull-request URLs are kept."""
