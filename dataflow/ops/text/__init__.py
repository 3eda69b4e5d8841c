"""Text operators."""
