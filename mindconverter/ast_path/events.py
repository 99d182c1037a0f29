"""Recording what the rewrite converted and left, per source position."""

from __future__ import annotations

from .helpers import torch_display
from .results import Event


class EventRecording:
    """Keeps the converted/unconverted events of the rewrite. Part of :class:`~mindconverter.ast_path.transformer.Converter`."""

    def event(self, node, converted, torch_name, ms_name="", note="", suggest="", src=None):
        src = src if src is not None else node
        self.events.append(
            Event(
                node=node,
                converted=converted,
                torch_name=torch_name,
                ms_name=ms_name,
                note=note,
                suggest=suggest,
                src_line=getattr(src, "lineno", 0),
                src_col=getattr(src, "col_offset", 0),
            )
        )

    def unconverted(self, node, key, note="", src=None):
        self.event(
            node, False, torch_display(key), note=note, suggest=self.table.suggestion(key), src=src
        )

    def _flush_pending(self, node):
        for torch_name, ms_name in self.pending_events.pop(id(node), []):
            self.event(node, True, torch_name, ms_name)
