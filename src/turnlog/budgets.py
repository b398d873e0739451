"""The door of `turnlog.budgets`, which lives in `turnlog.runtime.budgets`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.errors import (
    UsageError as UsageError,
)
from turnlog.events import (
    Risk as Risk,
    ToolCall as ToolCall,
)
from turnlog.runtime.budgets import (
    Budget as Budget,
    BudgetClock as BudgetClock,
    budget_spent_result as budget_spent_result,
    count as count,
    seconds as seconds,
)
