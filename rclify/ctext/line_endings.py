"""A file's line endings, kept: rclify reads every file with text mode's newlines (source_tree.py)
and writes what it changed with those of the file as it was."""


def as_in(original: bytes, text: str) -> str:
    """text (newlines `\\n`) with the line endings original uses: `\\r\\n` when most of its lines
    end so (a Windows checkout), else `\\n`."""
    crlf = original.count(b"\r\n")
    if crlf == 0 or crlf * 2 < original.count(b"\n"):
        return text
    return text.replace("\r\n", "\n").replace("\n", "\r\n")
