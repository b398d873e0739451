"""The door of `turnlog.tree`, which lives in `turnlog.ops.tree`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.verdict import (
    Verdict as Verdict,
    Wait as Wait,
)
from turnlog.errors import (
    FormatError as FormatError,
    LimitExceededError as LimitExceededError,
    SessionLockedError as SessionLockedError,
    UnfinishedSessionError as UnfinishedSessionError,
    UsageError as UsageError,
)
from turnlog.events import (
    Origin as Origin,
)
from turnlog.handle.log import (
    Log as Log,
)
from turnlog.ops.revival import (
    Revival as Revival,
    revive as revive,
)
from turnlog.ops.tree import (
    MAX_TREE_SESSIONS as MAX_TREE_SESSIONS,
    RevivedTree as RevivedTree,
    TreeDecision as TreeDecision,
    TreeNode as TreeNode,
    TreeOutcome as TreeOutcome,
    descendants as descendants,
    revive_tree as revive_tree,
    settled_events as settled_events,
    wait_child as wait_child,
)
from turnlog.stores import (
    open_store as open_store,
)
from turnlog.stores.base import (
    Store as Store,
)
