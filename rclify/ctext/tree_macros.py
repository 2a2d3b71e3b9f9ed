"""The tree's own declaration macros, given to spatch as empty (its --macro-file).

spatch does not expand the tree's headers (`--no-includes`), so a macro it does not know before a
declaration stops its parser, and the whole function goes: `_MHD_NORETURN static void f(...)`,
`_MHD_EXTERN enum MHD_Result g(...)`, `void *(MHD_THRD_CALL_SPEC_ *fn)(void *)`.  Such macros
only decorate a declaration: every definition the tree has of them, in every `#if` branch, is
empty or made of attributes, storage and inline keywords, calling conventions and compiler
extension words (`__declspec(dllexport) extern`, `__attribute__((visibility("default")))`,
`__stdcall`, Solaris's `__global`).  Read as empty they leave a declaration spatch parses the way
the compiler does; their text in the file is not changed (spatch prints the original tokens).
Anything else (a type, a value, a statement) is left to spatch's own heuristics.
"""

import re
import tempfile
from pathlib import Path

from rclify.ctext.preprocessor import defines
from rclify.ctext.spatch import MACRO_FILE
from rclify.ctext.tokens import any_of, code_only, matching_bracket, tokenize

_DECORATION_WORDS = {
    "extern", "static", "inline", "_Noreturn", "_Thread_local", "__thread", "register",
    "__inline", "__inline__", "__forceinline", "__extension__", "__restrict", "__restrict__",
    "__stdcall", "__cdecl", "__fastcall", "__thiscall", "__vectorcall", "WINAPI", "CALLBACK",
}
_DECORATION_CALLS = {"__attribute__", "__attribute", "__declspec", "__pragma", "_Pragma", "alignas", "_Alignas"}
_C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
    "volatile", "while", "_Bool", "_Noreturn", "_Thread_local",
}
# double-underscore words that are types, not decorations: dropping one would lose a declaration's type
_EXTENSION_TYPE = re.compile(r"^__(int\d*|m\d+\w*|float\d*|bf16|fp16|builtin_va_list|auto_type|typeof\w*)$")


def _is_decoration(body: str, decorations: set[str]) -> bool:
    tokens = tokenize(code_only(body))
    i = 0
    while i < len(tokens):
        word = tokens[i].text
        if word in _DECORATION_CALLS:
            if i + 1 >= len(tokens) or tokens[i + 1].text != "(":
                return False
            close = matching_bracket(tokens, i + 1)
            if close < 0:
                return False
            i = close + 1
            continue
        extension = word.startswith("__") and tokens[i].kind == "ident" and not _EXTENSION_TYPE.match(word)
        if not (word in _DECORATION_WORDS or word in decorations or extension):
            return False
        i += 1
    return True


def object_macro_definitions(texts: dict[str, str]) -> dict[str, list[str]]:
    """{name: [body of each object-like #define of it]} over the given files' texts."""
    found: dict[str, list[str]] = {}
    for text in texts.values():
        for d in defines(text):
            if d.params is None and d.name not in _C_KEYWORDS:
                found.setdefault(d.name, []).append(d.body)
    return found


def declaration_macros(texts: dict[str, str]) -> list[str]:
    """The names whose every definition only decorates a declaration (see the module's comment),
    those defined in terms of each other included; sorted."""
    definitions = object_macro_definitions(texts)
    decorations: set[str] = set()
    changed = True
    while changed:  # a macro made of other decoration macros is one too: iterate to the fixpoint
        changed = False
        for name, bodies in definitions.items():
            if name not in decorations and all(_is_decoration(b, decorations) for b in bodies):
                decorations.add(name)
                changed = True
    # an empty macro that is only ever empty (an include guard, a feature flag) needs no entry
    return sorted(n for n in decorations if any(code_only(b).strip() for b in definitions[n]))


def storage_classes(texts: dict[str, str]) -> dict[str, str]:
    """{declaration macro: 'static' or 'extern'} for the declaration macros (see
    declaration_macros()) whose every definition says that storage class, through other such
    macros too: pigz's `#define local static`.  Readers of a declaration's text (discover.py's
    `static`, struct_instances.py) see through them as spatch does with them read as empty."""
    definitions = object_macro_definitions(texts)
    names = set(declaration_macros(texts))
    out: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for name in sorted(names - set(out)):
            words = [{out.get(t.text, t.text) for t in tokenize(code_only(body))} for body in definitions[name]]
            for storage in ("static", "extern"):
                if words and all(storage in w for w in words):
                    out[name] = storage
                    changed = True
                    break
    return out


def expand_storage(code: str, storage: dict[str, str]) -> str:
    """code with each storage macro (storage_classes()) replaced by its storage class, padded
    with blanks when shorter (a reader's offsets after it stay close; lines stay)."""
    if not storage:
        return code
    pattern = re.compile(rf"\b({any_of(storage)})\b")
    return pattern.sub(lambda m: storage[m.group(1)].ljust(len(m.group(1))), code)


def loop_header_macros(texts: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """{name: parameters} of the function-like macros that expand to a `for` header before a
    statement, directly (`for (...)`, `for (...) for (...)`) or through a chain of such macros:
    xz's `mythread_sync(m)` -> `mythread_sync_helper1(m, __LINE__)` -> `for (...) for (...)`.
    Given to spatch as `for (;;)`, a use before a block (`mythread_sync(m) { ... }`) parses as a
    loop where the macro is defined in a header; spatch reads a definition in the file itself
    first, which it follows only when its body is the `for`."""
    definitions: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for text in texts.values():
        for d in defines(text):
            if d.params is not None:
                definitions.setdefault(d.name, []).append((d.params, d.body.strip()))
    found: dict[str, tuple[str, ...]] = {}
    changed = True
    while changed:
        changed = False
        for name, defs in definitions.items():
            if name in found or len({body for _, body in defs}) != 1:
                continue  # defined differently per #if branch: not known to be a loop
            params, body = defs[0]
            tokens = tokenize(body)
            if not tokens:
                continue
            # `for` only: a `while` macro may end a do loop (`#define until(c) while (!(c))`)
            if tokens[0].text == "for" or tokens[0].text in found:
                if len(tokens) > 1 and tokens[1].text == "(" and tokens[-1].text == ")" \
                        and (tokens[0].text == "for" or matching_bracket(tokens, 1) == len(tokens) - 1):
                    found[name] = params
                    changed = True
    return found


def write_macro_file(base: Path, names: list[str], directory: Path | None = None,
                     loops: dict[str, tuple[str, ...]] | None = None) -> Path:
    """A macro file: base's text, then `#define NAME` for each name and `#define NAME(params)
    for (;;)` for each loop header macro.  The caller removes it."""
    text = base.read_text()
    if names:
        text += "\n/* the tree's declaration macros (rclify.ctext.tree_macros) */\n"
        text += "".join(f"#define {name}\n" for name in names)
    if loops:
        text += "\n/* the tree's loop header macros: scoped locks (rclify.ctext.tree_macros) */\n"
        text += "".join(f"#define {name}({', '.join(params)}) for (;;)\n" for name, params in sorted(loops.items()))
    handle = tempfile.NamedTemporaryFile("w", prefix="rclify-macros-", suffix=".h", delete=False,
                                         dir=directory)
    with handle:
        handle.write(text)
    return Path(handle.name)


def macro_file_for(texts: dict[str, str], directory: Path | None = None) -> tuple[Path, list[str], dict[str, tuple[str, ...]]]:
    """spatch's macro file for a tree (MACRO_FILE, then the declaration and loop header macros of
    its texts), and those macros; the caller removes the file."""
    names, loops = declaration_macros(texts), loop_header_macros(texts)
    return write_macro_file(MACRO_FILE, names, directory, loops), names, loops
