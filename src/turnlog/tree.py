"""The door of `turnlog.tree`, which lives in `turnlog.ops.tree`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.verdict import (
    Verdict as Verdict,
)
from turnlog.core.verdict import (
    Wait as Wait,
)
from turnlog.errors import (
    FormatError as FormatError,
)
from turnlog.errors import (
    LimitExceededError as LimitExceededError,
)
from turnlog.errors import (
    SessionLockedError as SessionLockedError,
)
from turnlog.errors import (
    UnfinishedSessionError as UnfinishedSessionError,
)
from turnlog.errors import (
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
)
from turnlog.ops.revival import (
    revive as revive,
)
from turnlog.ops.tree import (
    MAX_TREE_SESSIONS as MAX_TREE_SESSIONS,
)
from turnlog.ops.tree import (
    RevivedTree as RevivedTree,
)
from turnlog.ops.tree import (
    TreeDecision as TreeDecision,
)
from turnlog.ops.tree import (
    TreeNode as TreeNode,
)
from turnlog.ops.tree import (
    TreeOutcome as TreeOutcome,
)
from turnlog.ops.tree import (
    descendants as descendants,
)
from turnlog.ops.tree import (
    revive_tree as revive_tree,
)
from turnlog.ops.tree import (
    settled_events as settled_events,
)
from turnlog.ops.tree import (
    wait_child as wait_child,
)
from turnlog.stores import (
    open_store as open_store,
)
from turnlog.stores.base import (
    Store as Store,
)
