"""How a zero-initialised lock that no pthread_mutex_init names gets its id at run time
(LockSite.zero_init): an initializer (api/zero_init.cocci adds it) or a constructor
(rewrite_api.py writes it, in LockSite.constructor_in); a note when it can get none.
build_lock_table (lock_table.py) decides it for every site."""

import re

from rclify.ctext.tokens import code_only
from rclify.lock_identity.discovered_sites import Site
from rclify.ctext.includes import IncludeGraph
from rclify.lock_identity.lock_site import LockSite


def zero_filled(definition: Site) -> bool:
    """No initializer, or one that only zero-fills (`= {0}`): glibc's unlocked default mutex."""
    return re.sub(r"[\s,]", "", definition.init) in ("", "{0}", "{{0}}")


def name_zero_initialised(site: LockSite, includers: dict[str, list[str]], texts: dict[str, str]) -> str:
    """Decides how a zero-initialised definition that no pthread_mutex_init names gets its id at
    run time (site.zero_init); returns a note when it cannot get one.

      a lone scalar in a .c file, or a function-local static -> `= RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_<id>)`
      a function-local static array                         -> the same for every element (GNU range)
      a file-scope array or a declaration of several names  -> a constructor at the end of its file
      a global tentatively defined in a header (an initializer there would define it in every file
      that includes it)                                     -> a constructor in the first .c file that includes it
      a lone static scalar in a header (one lock per file that includes it; an initializer would
      make gcc warn where a file does not use it)           -> a static constructor after its definition
    A static lock its file never names again (unused: an initializer would make gcc warn) keeps
    no id: it is never taken.
    """
    if site.member:
        return _name_zero_struct_field(site, includers)
    if site.kind != "mutex_var" or any(s.kind == "mutex_init" for s in site.sites) or site.helper_calls \
            or not zero_filled(site.sites[0]):
        return ""
    definition = site.sites[0]
    where = f"{definition.file}:{definition.line}: {definition.expr}"
    header = definition.file.endswith(".h")
    text = texts.get(definition.file)
    if definition.static and not header and text is not None \
            and len(re.findall(rf"\b{re.escape(definition.expr)}\b", code_only(text))) < 2:
        return ""
    if definition.scope == "function":
        if not definition.static:
            return ""  # automatic storage: the program must call pthread_mutex_init (else it is garbage)
        if not definition.alone:
            return f"{where}: zero-initialised in a declaration of several names: anonymous at run time (no lock id)"
        site.zero_init = "initializer"
        return ""
    if not header and definition.alone and not definition.array:
        site.zero_init = "initializer"
        return ""
    if not header:
        site.zero_init, site.constructor_in = "constructor", definition.file
        return ""
    if definition.static:
        if definition.alone and not definition.array:
            site.zero_init, site.constructor_in = "constructor", definition.file
            return ""
        return f"{where}: zero-initialised static array or declaration of several names in a header: anonymous at run time (no lock id)"
    users = includers.get(definition.file, [])
    if not users:
        return f"{where}: zero-initialised in a header no .c file of the tree includes: anonymous at run time (no lock id)"
    site.zero_init, site.constructor_in = "constructor", users[0]
    return ""


def _name_zero_struct_field(site: LockSite, includers: dict[str, list[str]]) -> str:
    """A mutex field of a zero-initialised struct variable (or one its initializer leaves out)
    that no pthread_mutex_init names: a constructor sets the id (an initializer would have to
    name every field of the struct)."""
    if site.kind != "mutex_var" or any(s.kind == "mutex_init" for s in site.sites) or site.helper_calls:
        return ""
    if not site.file.endswith(".h"):
        site.zero_init, site.constructor_in = "constructor", site.file
    elif not site.static and includers.get(site.file):
        site.zero_init, site.constructor_in = "constructor", includers[site.file][0]
    else:
        return (f"{site.file}:{site.line}: {site.expr}: a zero-initialised mutex field of a "
                f"{'static ' if site.static else ''}struct variable in a header: anonymous at run time (no lock id)")
    return ""


def header_includers(includes: IncludeGraph) -> dict[str, list[str]]:
    """{header (.h): the .c files that #include it by a path ending in its name, sorted}."""
    out: dict[str, list[str]] = {}
    for header in (f for f in includes.direct if f.endswith(".h")):
        if found := sorted(f for f in includes.direct_includers(header) if f.endswith(".c")):
            out[header] = found
    return out
