"""turnlog under agent frameworks: one module per framework, imported only when used."""
