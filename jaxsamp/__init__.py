"""jaxsamp."""
