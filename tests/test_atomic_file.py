"""rclify.atomic_file: outputs replace regular files atomically and leave devices and FIFOs in place."""

import os
import stat

from fifo_reader import read_while
from rclify import atomic_file, lock_config
from rclify.profiling import profile


def test_regular_file_is_replaced_and_keeps_its_mode_when_asked(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    path.chmod(0o640)
    atomic_file.write_text(path, "new\n", keep_mode=True)
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no temporary left


def test_new_file_is_created(tmp_path):
    atomic_file.write_text(tmp_path / "new.json", "{}\n")
    assert (tmp_path / "new.json").read_text() == "{}\n"


def test_fifo_is_written_in_place_not_replaced(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    assert read_while(fifo, lambda: atomic_file.write_text(fifo, "through the pipe\n")) == "through the pipe\n"
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_symlink_to_a_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    assert read_while(fifo, lambda: atomic_file.write_text(link, "via the link\n")) == "via the link\n"
    assert link.is_symlink() and stat.S_ISFIFO(fifo.stat().st_mode)


def test_profile_and_lock_config_writers_leave_a_fifo_in_place(tmp_path):
    """`rclify profile -o /dev/null` and `assign --config /dev/stdout` must not replace the device."""
    fifo = tmp_path / "p.fifo"
    os.mkfifo(fifo)
    text = read_while(fifo, lambda: profile.save({"format": "rclify-profile"}, fifo))
    assert text and '"rclify-profile"' in text
    text = read_while(fifo, lambda: lock_config.write(fifo, []))
    assert text and "lock_config" in text.lower()
    assert stat.S_ISFIFO(fifo.stat().st_mode)
