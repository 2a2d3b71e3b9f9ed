"""rclify.atomic_file: outputs replace regular files atomically and leave devices, FIFOs and links alone."""

import os
import stat
import threading

from rclify import atomic_file, lock_config, profile


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
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    atomic_file.write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert received == ["through the pipe\n"]


def test_symlink_to_a_device_is_written_through(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    atomic_file.write_text(link, "via the link\n")
    reader.join(timeout=10)
    assert link.is_symlink() and stat.S_ISFIFO(fifo.stat().st_mode)
    assert received == ["via the link\n"]


def test_profile_and_lock_config_writers_go_through_it(tmp_path):
    """`rclify profile -o /dev/null` and `assign --config /dev/stdout` must not replace the device:
    both writers take the in-place path for anything that is not a regular file."""
    fifo = tmp_path / "p.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    profile.save({"format": "rclify-profile"}, fifo)
    reader.join(timeout=10)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and '"rclify-profile"' in received[0]

    os.remove(fifo)
    os.mkfifo(fifo)
    received.clear()
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    lock_config.write(fifo, [])
    reader.join(timeout=10)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and received and received[0]
