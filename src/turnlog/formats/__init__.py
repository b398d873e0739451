"""Transcripts other tools write: recognising them, and (later) reading them."""

from turnlog.core.sniff import sniff

__all__ = ["sniff"]
