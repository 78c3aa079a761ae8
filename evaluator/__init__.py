"""RAG evaluation review: checks, flags, metrics and the run store."""
