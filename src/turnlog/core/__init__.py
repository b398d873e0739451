"""The pure rules: what a log means, decided without I/O."""
