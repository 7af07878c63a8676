"""A package whose build writes down what it was built with (see record.py)."""
