"""turnlog's own exports of a session: the HTML timeline and OpenTelemetry traces
(provider transcripts are in `turnlog.providers`; other tools' transcripts in
`turnlog.formats`)."""
