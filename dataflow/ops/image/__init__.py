"""Image operators."""
