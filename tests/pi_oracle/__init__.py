"""Differential checks against Pi 1.6.0's own code (bench/pi_oracle.mjs)."""
