"""The reference agent loops and what they are made of."""
