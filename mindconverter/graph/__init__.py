"""The in-memory graph every pass edits, and the one node evaluator."""

from .graph import Graph
from .node import Node

__all__ = ["Graph", "Node"]
