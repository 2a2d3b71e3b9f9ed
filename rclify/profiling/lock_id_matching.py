"""Which lock_config.h entry a profiled lock is: profile ids -> lock_config.h ids (match_ids()).
Read by `rclify assign` (assign.py) and `rclify tune` (tune.py)."""

import os
import re
from dataclasses import dataclass, field

from rclify.lock_identity.lock_table import normalize


def _name_part(lock_id: str) -> str:
    """items.c:cache_lock -> cache_lock; thread.c:&item_locks[i] -> item_locks."""
    name = lock_id.rpartition(":")[2]
    return _base_name(name)


def _base_name(expression: str) -> str:
    expr = expression.strip().lstrip("&*(").strip()
    expr = re.sub(r"\[.*?\]", "", expr)
    idents = re.findall(r"[A-Za-z_]\w*", expr)
    return idents[-1] if idents else expr


def _file_part(lock_id: str) -> str:
    head, sep, _ = lock_id.rpartition(":")
    return os.path.basename(head) if sep else ""


@dataclass
class Matching:
    to_config: dict[str, str] = field(default_factory=dict)  # profile id -> config id
    unmatched: list[str] = field(default_factory=list)  # profile ids without a config entry
    ambiguous: list[str] = field(default_factory=list)


def match_ids(profile: dict, config_ids: list[str]) -> Matching:
    """Runtime profiles carry config ids; preload profiles are matched by the lock's expression
    (`&tbl->lock` is `main.c:tbl->lock`, in the site's file), else by variable name."""
    result = Matching()
    known = set(config_ids)
    runtime = profile.get("source") == "runtime"
    for lock in profile["locks"]:
        pid = lock["id"]
        if pid in known:
            result.to_config[pid] = pid
            continue
        if runtime:
            result.unmatched.append(pid)
            continue
        names = set()
        if lock.get("symbol"):
            names.add(lock["symbol"])
        if lock.get("expression"):
            names.add(_base_name(lock["expression"]))
        site_file = _file_part(lock.get("site") or lock["id"])
        exact = [c for c in config_ids if lock.get("expression") and _file_part(c) == site_file
                 and re.sub(r"#\d+$", "", c.rpartition(":")[2]) == normalize(lock["expression"])]
        candidates = exact or [c for c in config_ids if _name_part(c) in names]
        if len(candidates) > 1 and site_file:
            candidates = [c for c in candidates if _file_part(c) == site_file] or candidates
        if len(candidates) == 1:
            result.to_config[pid] = candidates[0]
        elif candidates:
            result.ambiguous.append(f"{pid} (could be {', '.join(candidates[:3])})")
        else:
            result.unmatched.append(pid)
    return result
