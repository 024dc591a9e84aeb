"""Model clients and the `Model` protocol."""
