"""Recycling guide: intent per turn, an intent history, multi-turn context and progress events (seed 002)."""
