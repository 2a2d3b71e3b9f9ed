"""The idiom `#define my_mutex_init pthread_mutex_init`: an object-like alias of the init call.

Portable C headers name the pthread API through object-like aliases (`#define my_mutex_lock
pthread_mutex_lock`, `#define my_mutex_t pthread_mutex_t`).  Those whose runtime function takes the
same arguments are renamed token by token by the API rewrite's text pass.  The init is the one
that cannot be: rcl_mutex_init takes the lock's configuration as a third argument, so a renamed
alias would not compile, and left alone it is pthread_mutex_init on an rcl_mutex_t (the runtime's
type guard stops the build).

So the alias is read as the function-like macro it stands for,
`#define my_mutex_init(mutex, attr) pthread_mutex_init(mutex, attr)`, by every step:
  * discovery gets an init call record in the #define (call_records), as for a function-like
    init macro: the lock table gives it an init site, `header.h:mutex`;
  * the lock helpers read it as an init macro (definitions): each `my_mutex_init(&q->lock, NULL)`
    is a lock of its own, with its own lock_config.h entry, wrapped in RCL_LOCK_SITE at the call;
  * the API rewrite writes it so (rewrite): `#define my_mutex_init(mutex, attr)
    rcl_mutex_init((mutex), (attr), RCL_CONFIG_REF(RCLIFY_LOCK_header_h_mutex))`.
Sound because a function-like macro with the call's two parameters expands every call
`my_mutex_init(a, b)` to the same tokens as the object-like one did (`pthread_mutex_init(a, b)`);
a use that is no call (its address taken) no longer expands, does not compile, and the compile
check leaves that file unchanged with the compiler's message.
"""

import re
from dataclasses import dataclass

from rclify.ctext.preprocessor import defines, directive_lines

INIT = "pthread_mutex_init"
PARAMS = ("mutex", "attr")  # the parameters the alias is read with; the init site's id is 'file:mutex'


@dataclass(frozen=True)
class InitAlias:
    name: str
    file: str
    line: int  # 1-based, of the #define
    column: int  # 0-based, of the pthread_mutex_init token

    @property
    def as_function_like(self) -> tuple[tuple[str, ...], str]:
        """(parameters, body) of the function-like macro the alias stands for."""
        return PARAMS, f"{INIT}({', '.join(PARAMS)})"


def find(text: str, file: str) -> list[InitAlias]:
    """The object-like aliases of pthread_mutex_init text defines (in any #if branch)."""
    if INIT not in text:
        return []
    out = []
    lines = text.split("\n")
    for d in defines(text):
        if d.params is None and d.body.strip() == INIT:
            column = lines[d.line - 1].find(INIT, lines[d.line - 1].find(d.name) + len(d.name))
            out.append(InitAlias(d.name, file, d.line, max(column, 0)))
    return out


def call_records(texts: dict[str, str], files: list[str]) -> list[dict]:
    """Discovery's records of the alias' init calls, as spatch reports a call in a macro body."""
    return [{"kind": "call", "name": INIT, "args": list(PARAMS), "file": a.file, "line": a.line,
             "column": a.column, "function": ""} for f in files for a in find(texts[f], f)]


def definitions(text: str, file: str) -> list[tuple[str, int, tuple[str, ...], str]]:
    """(name, line, parameters, body) of each alias as the function-like init macro it stands for."""
    return [(a.name, a.line, *a.as_function_like) for a in find(text, file)]


_ALIAS_LINE = re.compile(r"^([ \t]*#[ \t]*define[ \t]+)([A-Za-z_]\w*)([ \t]+)" + INIT + r"\b([ \t]*(?:/[*/].*)?)$")


def rewrite(text: str, file: str, config_ref) -> tuple[str, list[str]]:
    """text with each alias written as a function-like call of rcl_mutex_init; config_ref(file,
    line) gives the init site's configuration (`RCL_CONFIG_REF(RCLIFY_LOCK_..)`, or NULL where the
    lock table has no site).  Returns the text and a note per alias."""
    aliases = {a.line: a for a in find(text, file)}
    if not aliases:
        return text, []
    lines, notes = text.split("\n"), []
    for first, last in directive_lines(text):
        alias = aliases.get(first + 1)
        m = _ALIAS_LINE.match(lines[first]) if alias and first == last else None
        if m is None:
            continue
        mutex, attr = PARAMS
        lines[first] = (f"{m.group(1)}{m.group(2)}({mutex}, {attr}){m.group(3)}"
                        f"rcl_mutex_init(({mutex}), ({attr}), {config_ref(file, alias.line)}){m.group(4)}")
        notes.append(f"{file}:{alias.line}: #define {alias.name} {INIT}: written as a function-like macro "
                     f"of rcl_mutex_init (its calls keep their arguments)")
    return "\n".join(lines), notes
