"""roofline."""
