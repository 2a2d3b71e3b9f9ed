"""A lock allocation site: one lock_config.h entry (lock_table.py gives each its stable id)."""

import re
from dataclasses import dataclass, field

from rclify.lock_config import LockEntry, macro_suffix
from rclify.lock_identity.discovered_sites import Site


@dataclass
class LockSite:
    lock_id: str
    kind: str  # 'static_mutex' | 'mutex_var' | 'mutex_init' | 'helper_call'
    file: str
    line: int
    function: str
    expr: str  # as written: the defined name, or mutex_init's first argument
    normalized: str  # expression without '&', blanks, redundant parentheses; subscripts as []
    sites: list[Site] = field(default_factory=list)  # the definition and/or the init calls
    # a zero-initialised definition no init call names: how its id reaches the runtime
    zero_init: str = ""  # 'initializer' (api/initializers.cocci adds one) | 'constructor' | ''
    constructor_in: str = ""  # 'constructor': the .c file that gets it (rewrite_api.py writes it)
    member: str = ""  # a mutex field of a file-scope struct variable (struct_instances.py): the field
    static: bool = False  # (struct variables) declared static
    helper_calls: list = field(default_factory=list)  # lock_helpers.CallLock: calls of lock helpers creating it
    note: str = ""  # what else the entry's description says (a lock helper's own init site: which calls)
    helper_init: bool = False  # an init site inside a lock helper: its calls' sites name the locks

    @property
    def macro(self) -> str:
        return "RCLIFY_LOCK_" + macro_suffix(self.lock_id)

    @property
    def base(self) -> str:
        """The variable a lock expression starts from ('item_locks' for item_locks[])."""
        m = re.match(r"[A-Za-z_]\w*", self.normalized)
        return m.group(0) if m else ""

    @property
    def is_variable(self) -> bool:
        return self.kind in ("static_mutex", "mutex_var")

    def entry(self) -> LockEntry:
        where = f"{self.file}:{self.line}" + (f" in {self.function}()" if self.function else "")
        what = {"static_mutex": "static initializer", "mutex_var": "definition", "mutex_init": "pthread_mutex_init",
                "helper_call": self.helper_calls[0].call.called if self.helper_calls else ""}
        if self.member:
            what = {"static_mutex": "struct initializer", "mutex_var": "zero-initialised struct variable"}
        note = f"; {self.note}" if self.note else ""
        if self.helper_calls and self.kind != "helper_call":  # a variable a lock helper sets up
            note += "".join(f"; set up by {c.call.via or c.call.helper.name}() at {c.file}:{c.line}" for c in self.helper_calls)
        return LockEntry(self.lock_id, description=f"{self.expr}; {what[self.kind]} at {where}{note}")
