"""LangGraph on Stateroom (install the `langgraph` extra).

- `StateroomSaver`: LangGraph's checkpointer on the Stateroom API (sync and async).
"""

from .saver import StateroomSaver

__all__ = ["StateroomSaver"]
