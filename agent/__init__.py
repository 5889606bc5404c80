"""Agent runs: a prompt answered by a model in a worker, streamed to viewers, with Pi's context management."""
