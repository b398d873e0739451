"""What every framework adapter shares; it imports no framework."""
