"""Reading a FIFO while something writes to it (tests of writers that must not replace a FIFO or a
device such as /dev/null; the tests use a FIFO so that a regression cannot break the machine)."""

import threading
from pathlib import Path


def read_while(fifo: Path, write) -> str | None:
    """Calls write() while a thread reads fifo; returns what the thread read (None if nothing came:
    a writer that renamed a file over the FIFO never opens it)."""
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    write()
    reader.join(timeout=30)
    return received[0] if received else None
