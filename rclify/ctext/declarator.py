"""C declarations written from a type's spelling and a name."""


def declarator(type_spelling: str, name: str) -> str:
    """A C declaration of `name` with the given type: ('char [16]', '(*b)') -> 'char (*b)[16]'.

    Plain types get the simplest spelling (`item **p`, not `item * (*p)`): Coccinelle, which
    rewrites this code next, reads `T * (*p)` with an unknown typedef T as an expression."""
    if name.startswith("(*") and name.endswith(")") and "(" not in type_spelling and "[" not in type_spelling:
        return f"{type_spelling.rstrip()}{'' if type_spelling.endswith('*') else ' '}*{name[2:-1]}"
    if "(*" in type_spelling:
        at = type_spelling.index("(*") + 2
        return type_spelling[:at] + name + type_spelling[at:]
    if "[" in type_spelling:
        at = type_spelling.index("[")
        return type_spelling[:at].rstrip() + " " + name + type_spelling[at:]
    return f"{type_spelling} {name}"
