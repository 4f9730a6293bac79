"""The deployable graphs, one package each, plus what they share (`graphs.common`)."""
