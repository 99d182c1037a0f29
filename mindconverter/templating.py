"""Rendering the Jinja2 templates that ship inside the package (the script and the report)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jinja2


@functools.cache
def _environment(package: str, finalize: Callable[[Any], Any] | None) -> jinja2.Environment:
    """One environment per package and finalizer: Jinja keeps each compiled template in it, so a
    template is compiled once per process instead of once per conversion (about 25 ms each)."""
    return jinja2.Environment(
        finalize=finalize,
        loader=jinja2.PackageLoader(package, "templates"),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render_template(
    package: str, name: str, finalize: Callable[[Any], Any] | None = None, **values: Any
) -> str:
    """Render ``<package>/templates/<name>`` with ``values`` (blocks trimmed, no HTML escaping:
    every model-controlled value is escaped by the caller for its context, or by ``finalize``,
    which every ``{{ ... }}`` output goes through)."""
    return _environment(package, finalize).get_template(name).render(**values)
