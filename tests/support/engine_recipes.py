"""What docs/engines.md's recipes leave to the reader, for the tests that run them as written: a scripted model, the tools, the ledger they keep.

Each piece expects `WORK` (the case's folder) to be defined before it; a
tool writes one ledger line per run and SIGKILLs its process the first
time, after its side effect.
"""

from __future__ import annotations

import re

from paths import ROOT

# A plain recipe's model and tools: the model asks for one charge, then
# answers with what the charge returned.
MODEL_AND_TOOLS = """
import os, signal, sys
from pathlib import Path

def ask_the_model(messages):
    if not any(m["role"] == "tool" for m in messages):
        return {"text": "", "calls": [{"id": "c1", "name": "charge", "arguments": {"amount": 5}}]}
    return {"text": "done: " + messages[-1]["content"][:30], "calls": []}

def charge(amount):
    with (WORK / "ledger").open("a") as ledger:
        ledger.write("charged\\n"); ledger.flush(); os.fsync(ledger.fileno())
    if not (WORK / "killed").exists():
        (WORK / "killed").touch(); os.kill(os.getpid(), signal.SIGKILL)
    return "charged"

TOOLS = {"charge": charge}
"""

# A Pydantic AI recipe's scripted model (`model`): one call to send_money,
# then an answer made from what it returned.
PYDANTIC_MODEL = """
import os, signal, sys
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

def script(messages, info):
    returns = [p.content for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
    if not returns:
        return ModelResponse(parts=[ToolCallPart(tool_name="send_money", args={"to": "bob"}, tool_call_id="c1")])
    return ModelResponse(parts=[TextPart("told: " + str(returns[-1])[:30])])

model = FunctionModel(script)
"""

# The tool a Pydantic AI recipe's agent names, registered after the block
# (with `@agent.tool_plain`, or the decorator a recipe asks for).
SEND_MONEY_UNDER = """
{decorator}
def send_money(to: str) -> str:
    with (WORK / "ledger").open("a") as ledger:
        ledger.write("sent\\n"); ledger.flush(); os.fsync(ledger.fileno())
    if not (WORK / "killed").exists():
        (WORK / "killed").touch(); os.kill(os.getpid(), signal.SIGKILL)
    return "sent"
"""
SEND_MONEY = SEND_MONEY_UNDER.format(decorator="@agent.tool_plain")


def docs_block(marker: str) -> str:
    """The one ```python block of docs/engines.md that holds `marker`."""
    page = (ROOT / "docs" / "engines.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if marker in b]
    return block
