"""The door of `turnlog.budgets`, which lives in `turnlog.runtime.budgets`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.errors import (
    UsageError as UsageError,
)
from turnlog.events import (
    Risk as Risk,
)
from turnlog.events import (
    ToolCall as ToolCall,
)
from turnlog.runtime.budgets import (
    Budget as Budget,
)
from turnlog.runtime.budgets import (
    BudgetClock as BudgetClock,
)
from turnlog.runtime.budgets import (
    budget_spent_result as budget_spent_result,
)
from turnlog.runtime.budgets import (
    count as count,
)
from turnlog.runtime.budgets import (
    seconds as seconds,
)
