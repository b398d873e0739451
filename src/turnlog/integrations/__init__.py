"""turnlog under agent frameworks: one package per framework, imported only
when used, each on the shared kit (`turnlog.integrations.kit`). The errors
and warnings the handles raise are importable here too."""

from turnlog.integrations.kit.answered import AnsweredCallError as AnsweredCallError
from turnlog.integrations.kit.history import (
    HistoryMismatchError as HistoryMismatchError,
    HistoryMismatchWarning as HistoryMismatchWarning,
)
from turnlog.integrations.kit.runs import RevivalCapWarning as RevivalCapWarning
