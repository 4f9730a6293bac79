"""Fan room: one thread, several KBO fan personas, speaker tags kept in the checkpoint (seed 001)."""
