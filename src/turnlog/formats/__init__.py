"""Transcripts other tools write: recognising them, and (later) reading them."""

from turnlog.sniff import sniff

__all__ = ["sniff"]
