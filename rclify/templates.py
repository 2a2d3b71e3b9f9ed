"""The jinja2 environment over templates/: every piece of C rclify generates is a template there."""

import functools

import jinja2

from rclify.paths import TEMPLATES_DIR


@functools.cache
def templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
